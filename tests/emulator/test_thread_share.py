"""How many threads each training process of a local run gets: this machine's cores (or --cpus) shared among the
run's processes, since the emulated hosts share one machine where SageMaker gives each its own cores."""

from orchestrator.emulator.launching.launch import thread_share, usable_cores


def test_the_cores_are_divided_among_the_processes_at_least_one_each():
    assert thread_share(8, launcher_sets_it=False, cores=16) == 2
    assert thread_share(3, launcher_sets_it=False, cores=8) == 2
    assert thread_share(16, launcher_sets_it=False, cores=2) == 1
    assert thread_share(2, launcher_sets_it=False) == max(1, usable_cores() // 2)


def test_a_lone_process_keeps_torchs_default_unless_the_cores_are_limited():
    assert thread_share(1, launcher_sets_it=False) is None
    assert thread_share(1, launcher_sets_it=False, cores=3) == 3


def test_torchrun_sets_its_own_for_several_workers_per_host():
    assert thread_share(8, launcher_sets_it=True) is None
    assert thread_share(8, launcher_sets_it=True, cores=4) is None
