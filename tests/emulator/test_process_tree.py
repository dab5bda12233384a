"""The supervisor's view of a run's processes: every process the run started (children, grandchildren, orphans
re-parented to smtrain), none it had before; read from the kernel's lists of each thread's children where it keeps
them, else from one read of the machine's process table per look."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from orchestrator.emulator.instances.hostname import HOSTNAME_VARIABLE
from orchestrator.emulator.supervising import supervisor
from orchestrator.emulator.supervising.supervisor import _ProcessTree

KERNEL_LISTS = [pytest.param(True, id="kernel-children-lists"), pytest.param(False, id="process-table")]


def _wait_until(condition, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the processes did not start"
        time.sleep(0.05)


def _names(processes: list[psutil.Process]) -> list[str]:
    names = []
    for process in processes:
        try:
            names.append(process.name())
        except psutil.NoSuchProcess:
            pass
    return sorted(names)


@pytest.fixture(params=KERNEL_LISTS)
def tree(request, monkeypatch):
    if request.param and not supervisor._CHILDREN_LISTS:
        pytest.skip("this kernel keeps no /proc/PID/task/TID/children")
    monkeypatch.setattr(supervisor, "_CHILDREN_LISTS", request.param)
    before = subprocess.Popen(["sleep", "300"])  # smtrain's own child from before the run: never the run's
    tree = _ProcessTree()
    started: list[subprocess.Popen[bytes]] = []
    yield tree, before, started
    for process in [before, *started]:
        process.kill()
        process.wait()
    for process in tree.alive():
        process.kill()
    _wait_until(lambda: (tree.reap(), not tree.alive())[1])
    tree.close()


def test_every_process_of_the_run_and_none_from_before(tree):
    processes, before, started = tree
    # Two "hosts": one with a child and a grandchild, one whose child exits and leaves an orphan behind (it is
    # re-parented to smtrain, the subreaper).
    started.append(subprocess.Popen(["sh", "-c", "sleep 300 & sh -c 'sleep 300' & wait"]))
    started.append(subprocess.Popen(["sh", "-c", "sleep 300 & exit 0"]))
    started[1].wait()
    # Until the inner shell has exec'd its sleep, it is a third "sh": wait for the names to settle.
    _wait_until(lambda: _names(processes.alive()) == ["sh", "sh", "sleep", "sleep", "sleep"])
    alive = {process.pid for process in processes.alive()}
    assert before.pid not in alive
    assert started[0].pid in alive and started[1].pid not in alive  # the second host's launcher has exited
    orphan = next(pid for pid in alive if psutil.Process(pid).ppid() == os.getpid() and pid != started[0].pid)
    assert psutil.Process(orphan).name() == "sleep"
    os.kill(orphan, signal.SIGKILL)
    _wait_until(lambda: (processes.reap(), orphan not in {process.pid for process in processes.alive()})[1])


def test_a_second_run_in_the_same_process_never_counts_the_first_runs_processes_as_its_own(tree):
    """A notebook started two function jobs at once: the second run's tree, made before the first run launched,
    counted the first run's launcher as one of its own, and the second run's failure SIGTERMed the first's ranks
    (seen in the suite: `algo-1 (rank 0) was killed by signal 15` in a job that returned)."""
    first, _, started = tree
    second = _ProcessTree()
    try:
        started.append(subprocess.Popen(["sh", "-c", "sleep 300 & wait"]))
        first.own(started[-1:])
        started.append(subprocess.Popen(["sh", "-c", "sleep 300 & wait"]))
        second.own(started[-1:])
        _wait_until(lambda: len(first.alive()) == 2 and len(second.alive()) == 2)
        assert started[0].pid in {process.pid for process in first.alive()}
        assert started[0].pid not in {process.pid for process in second.alive()}
        assert started[1].pid not in {process.pid for process in first.alive()}
    finally:
        second.close()
    assert supervisor._child_subreaper(), "the first run still supervises: this process stays the subreaper"


def test_no_read_of_the_whole_process_table_more_than_once_per_look(tree, monkeypatch):
    processes, _, started = tree
    for _ in range(4):
        started.append(subprocess.Popen(["sh", "-c", "sleep 300 & wait"]))
    _wait_until(lambda: len(processes.alive()) >= 8)
    reads = []
    children = psutil.Process.children

    def counted(self, recursive=False):
        reads.append(self.pid)
        return children(self, recursive=recursive)

    monkeypatch.setattr(psutil.Process, "children", counted)
    assert len(processes.alive()) >= 8
    assert reads == ([] if supervisor._CHILDREN_LISTS else [os.getpid()])


def test_a_broken_chain_of_parents_is_no_ones_and_never_loops():
    assert supervisor._top_ancestor(30, {30: 20, 20: 10}, root=10) == 20
    assert supervisor._top_ancestor(20, {30: 20, 20: 10}, root=10) == 20
    assert supervisor._top_ancestor(30, {30: 25}, root=10) is None
    assert supervisor._top_ancestor(30, {30: 40, 40: 30}, root=10) is None


def test_a_process_that_exited_since_the_list_was_read_is_not_named_as_waited_for():
    """The grace period's note read `(pid 7972 ?)` for a process that had exited (and been reaped) between the
    list and its naming: it is left out now, and every process named has its name."""
    gone = subprocess.Popen(["sleep", "300"])
    waiting = subprocess.Popen(["sleep", "300"])
    listed = [psutil.Process(gone.pid), psutil.Process(waiting.pid)]
    try:
        gone.kill()
        gone.wait()
        assert supervisor._described(listed) == f"1 process: (pid {waiting.pid} sleep)"
        assert supervisor._described(listed[:1]) is None
    finally:
        waiting.kill()
        waiting.wait()


def test_a_launcher_waited_for_is_named_for_what_it_is(tmp_path):
    """The grace period's note named a torchrun agent or a host's namespace holder by its process name only,
    `(pid 4240 python)`, and one with SM_HOSTS in its environment (mode none) as a rank: it says what each is. The
    two are real processes whose scripts bear the launchers' names (torchrun's, hostfs.py)."""
    host = tmp_path / "algo-2"
    env = {**os.environ, HOSTNAME_VARIABLE: host.name, "SM_HOSTS": '["algo-1", "algo-2"]'}
    for script in ("torchrun", "hostfs.py"):
        (tmp_path / script).write_text("import time\ntime.sleep(300)\n")
    agent = subprocess.Popen([sys.executable, str(tmp_path / "torchrun"), "--nproc-per-node", "2"], env=env)
    holder = subprocess.Popen([sys.executable, "-I", "-S", str(tmp_path / "hostfs.py"), "enter", str(host), "--"],
                              env=env)
    try:
        named = [f"(pid {process.pid} {psutil.Process(process.pid).name()})" for process in (agent, holder)]
        assert supervisor._described([psutil.Process(agent.pid), psutil.Process(holder.pid)]) == (
            f"2 processes: algo-2 torchrun agent {named[0]}, algo-2 namespace holder {named[1]}")
    finally:
        for process in (agent, holder):
            process.kill()
            process.wait()
