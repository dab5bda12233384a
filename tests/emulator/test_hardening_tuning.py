"""`smtrain tune` meets hostile input: secret-looking tuned values are masked everywhere and never on a
command line, tuned names and values reach the trial verbatim and finite, a huge grid is lazy, a huge log line
costs nothing, `tune validate` refuses what `tune plan` refuses, and `tune local` is a supervisor: Ctrl-C or
SIGTERM ends every trial and leaves the results (the search Stopped, the best so far named with its values and run
directory), its folder is held, and another search's results are never overwritten."""

from __future__ import annotations

import ctypes
import json
import math
import os
import resource
import signal
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner
from tuning_specs import TINY_JOB as JOB

from orchestrator.cli.main import main

pytestmark = pytest.mark.hardening

REPO = Path(__file__).resolve().parents[2]
SECRETS = ("hunter22-alpha", "hunter22-beta")
SEARCH = """job: job.yaml
objective: {metric: loss, type: Minimize}
strategy: Random
parameters:
  db_password: {type: categorical, values: [hunter22-alpha, hunter22-beta]}
  lr.base: {type: continuous, min: -1.0e308, max: 1.0e308}
max_jobs: 2
max_parallel_jobs: 1
random_seed: 3
"""
# Each job runs in a PID namespace of its own (its pid there is not the machine's): it says it started with a
# file of its own, and the test finds its process from outside by its environment (`_scripts`).
SLEEPER = """import os, pathlib, time, uuid
pathlib.Path(os.environ["PID_FOLDER"], uuid.uuid4().hex).write_text("")
print("loss=0.5", flush=True)
time.sleep(600)
"""


@pytest.fixture
def search(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text("print('loss=0.5')\n")
    (tmp_path / "job.yaml").write_text(JOB)
    path = tmp_path / "search.yaml"
    path.write_text(SEARCH)
    return path


def test_tune_plan_and_validate_mask_the_values_of_a_secret_looking_tuned_parameter(search):
    for args in (["plan"], ["plan", "-o", "json"], ["validate"], ["validate", "-o", "json"]):
        result = CliRunner().invoke(main, ["tune", args[0], str(search), *args[1:]])
        assert result.exit_code == 0, result.output
        assert not any(secret in result.output for secret in SECRETS), (args, result.output)
    assert "db_password" in CliRunner().invoke(main, ["tune", "plan", str(search)]).output


@pytest.mark.slow  # a search of real trials, each a `smtrain local` of its own
def test_trial_values_reach_the_trial_verbatim_finite_masked_and_off_the_command_line(search, tmp_path, monkeypatch):
    import orchestrator.emulator.tuning.search as search_module

    commands: list[list[str]] = []
    real_popen = subprocess.Popen

    def spy(command, *args, **kwargs):
        commands.append([str(item) for item in command])
        return real_popen(command, *args, **kwargs)

    monkeypatch.setattr(search_module.subprocess, "Popen", spy)
    result = CliRunner().invoke(main, ["tune", "local", str(search), "--run-dir", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    document = (tmp_path / "out" / "tuning.json").read_text()
    for text in (result.output, document, *(" ".join(command) for command in commands)):
        assert not any(secret in text for secret in SECRETS), text
    trials = json.loads(document)["trials"]
    assert len(trials) == 2 and all(trial["status"] == "Completed" for trial in trials), document
    for trial in trials:
        config = Path(trial["run_dir"]) / "algo-1" / "input" / "config" / "hyperparameters.json"
        sent = json.loads(config.read_text())
        assert "lr.base" in sent and "lr" not in sent, sent  # one name, not {"lr": {"base": ...}}
        value = json.loads(sent["lr.base"])
        assert isinstance(value, float) and math.isfinite(value) and -1e308 <= value <= 1e308, sent
        assert json.loads(sent["db_password"]) in SECRETS  # the trial itself gets the real value
        assert trial["hyperparameters"]["db_password"] == "****"


def test_a_huge_grid_is_chosen_from_lazily(tmp_path):
    """8 parameters of 30 values: 6.6 * 10**11 combinations, once built whole before the first trial
    (MemoryError); the first is asked for in a process whose address space could not hold them."""
    (tmp_path / "train.py").write_text("print(1)\n")
    (tmp_path / "job.yaml").write_text(JOB)
    values = ", ".join(str(index) for index in range(30))
    (tmp_path / "grid.yaml").write_text(
        "job: job.yaml\nobjective: {metric: loss, type: Minimize}\nstrategy: Grid\nparameters:\n"
        + "".join(f"  p{index}: {{type: categorical, values: [{values}]}}\n" for index in range(8)))
    program = ("import sys; from orchestrator.specs.loader import load_tuning\n"
               "from orchestrator.emulator.tuning.choosers import chooser_for\n"
               "print(chooser_for(load_tuning(sys.argv[1]).spec, None).ask())\n")

    def small_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    result = subprocess.run([sys.executable, "-c", program, str(tmp_path / "grid.yaml")], capture_output=True,
                            text=True, timeout=600, preexec_fn=small_memory, cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, check=False)
    assert result.returncode == 0, result.stderr
    assert "(1, {'p0': '0', 'p1': '0'" in result.stdout


def test_a_32_mib_line_in_the_metric_series_is_skipped_in_bounded_memory(tmp_path):
    from orchestrator.emulator.tuning.search import _ObjectiveWatch

    class NeverStop:
        def should_stop(self, *args: object) -> bool:
            return False

    def point(value: float) -> bytes:
        return b'{"metric": "loss", "value": %r, "timestamp": null, "step": null, "host": "algo-1"}' % value

    (tmp_path / "metrics.jsonl").write_bytes(point(0.75) + b"\n" + b"x" * (32 << 20) + point(0.1) + b"\n"
                                             + point(0.25) + b"\n")
    watch = _ObjectiveWatch(NeverStop(), 1, "loss", tmp_path)
    tracemalloc.start()
    try:
        watch.read()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert watch.final == 0.25
    assert peak < 8 << 20, f"reading the log took {peak / 2**20:.0f} MiB"


def test_a_stop_asked_for_while_the_trial_opens_its_run_directory_is_not_lost(tmp_path):
    # The budget can end between a trial's `smtrain local` creating its run directory and clearing the previous
    # run's files from it (stop-requested among them): the stop waits for the run's first status.
    from orchestrator.emulator.preparing.layout import open_run_directory
    from orchestrator.emulator.supervising.status import STOP_FILE, StatusReport, now
    from orchestrator.emulator.tuning.search import _ObjectiveWatch

    class NeverStop:
        def should_stop(self, *args: object) -> bool:
            return False

    run_dir = tmp_path / "trial-001"
    watch = _ObjectiveWatch(NeverStop(), 1, "loss", run_dir)
    run_dir.mkdir()  # smtrain local's first step in open_run_directory
    watch.stop("stopped at the search's budget")
    open_run_directory(run_dir)  # ... then it clears the per-run files
    assert not (run_dir / STOP_FILE).exists()
    StatusReport(run_dir, {"TrainingJobName": "trial-001"}, now()).transition("Starting")
    watch.deliver_stop()
    assert (run_dir / STOP_FILE).is_file(), "the stop request was lost: the trial would run to its end"


def test_tune_validate_refuses_what_tune_plan_refuses(search):
    """A local channel path, and 30 job tags plus 30 of the tuning spec (each file within its own limit)."""
    search.write_text(SEARCH + "tags: {" + ", ".join(f"s{index}: v" for index in range(30)) + "}\n")
    for override in ("inputs.train=/tmp", "tags={" + ", ".join(f"j{index}: v" for index in range(30)) + "}"):
        plan = CliRunner().invoke(main, ["tune", "plan", str(search), "--set", override])
        validate = CliRunner().invoke(main, ["tune", "validate", str(search), "--set", override])
        assert plan.exit_code == 2, plan.output
        assert validate.exit_code == 2, (override, validate.output)


def test_a_folder_holding_another_searchs_results_is_refused_not_overwritten(search, tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    theirs = json.dumps({"tuning_job_name": "theirs-1", "search_spec": "/elsewhere/search.yaml", "trials": []})
    (folder / "tuning.json").write_text(theirs)
    result = CliRunner().invoke(main, ["tune", "local", str(search), "--run-dir", str(folder)])
    assert result.exit_code == 2, result.output
    assert "another search's results" in result.output and "/elsewhere/search.yaml" in result.output
    assert (folder / "tuning.json").read_text() == theirs
    assert [path.name for path in folder.iterdir() if not path.name.startswith(".")] == ["tuning.json"]


def _scripts(pids: Path) -> list[int]:
    """The machine's pids of the trials' scripts: the processes that run train.py with this test's PID_FOLDER."""
    found = {}
    for process in psutil.process_iter():
        try:
            if process.environ().get("PID_FOLDER") == str(pids) and "train.py" in process.cmdline():
                found[process.pid] = process
        except psutil.Error:
            continue
    # The script itself, not the launchers above it whose command lines name it too: the lowest in each chain.
    return [pid for pid, process in found.items()
            if not any(child.pid in found for child in process.children(recursive=True))]


def _processes(pids: list[int]) -> list[psutil.Process]:
    """The processes as they are now: a Process keeps its start time, so a number the kernel gives to another
    process or thread later (pid_max is 32768 here, and a busy suite wraps it) is not taken for this one."""
    found = []
    for pid in pids:
        try:
            found.append(psutil.Process(pid))
        except psutil.NoSuchProcess:
            pass
    return found


def _wait_for_end(processes: list[psutil.Process], what: str, seconds: float = 300) -> None:
    """Until none of `processes` runs (ended or a zombie); past `seconds`, fails naming those still running."""
    deadline = time.monotonic() + seconds
    while running := [process for process in processes if _runs(process)]:
        assert time.monotonic() < deadline, f"{what} still run after {seconds:g} s: " + "; ".join(
            f"{process.pid} {' '.join(process.cmdline())[:200]}" for process in running if _runs(process))
        time.sleep(0.2)


def _runs(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _wait_for(predicate, what: str, seconds: float = 300) -> None:
    """A generous safety net only: a slow machine makes it slower, not a failure."""
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def _signal_another_thread(pid: int, signum: int) -> None:
    """A signal sent to a process lands on any of its threads: here, deliberately, on one that is not the main one
    (glibc's tgkill), where Python's handler waits for the main thread to wake."""
    thread = next(item.id for item in psutil.Process(pid).threads() if item.id != pid)
    if ctypes.CDLL(None, use_errno=True).tgkill(pid, thread, signum):
        raise OSError(ctypes.get_errno(), "tgkill")


@pytest.mark.slow  # a search of real trials, each a `smtrain local` of its own
@pytest.mark.parametrize(("signum", "to_a_thread"), [(signal.SIGINT, False), (signal.SIGINT, True),
                                                     (signal.SIGTERM, False), (signal.SIGHUP, False)],
                         ids=["Ctrl-C", "Ctrl-C-on-a-worker-thread", "SIGTERM", "SIGHUP"])
def test_a_signal_ends_every_trial_and_leaves_the_results_and_the_folder_is_held(search, tmp_path, signum,
                                                                                 to_a_thread):
    (tmp_path / "train.py").write_text(SLEEPER)
    search.write_text(SEARCH.replace("max_parallel_jobs: 1", "max_parallel_jobs: 2"))
    pids, folder = tmp_path / "pids", tmp_path / "out"
    pids.mkdir()
    environment = {**os.environ, "PID_FOLDER": str(pids), "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "orchestrator", "tune", "local", str(search), "--run-dir", str(folder)]
    console = tmp_path / "console.txt"  # a file, not a pipe: a search that outlives the signal never blocks on it
    with open(console, "w") as written:
        tune = subprocess.Popen(command, env=environment, stdout=written, stderr=subprocess.STDOUT, text=True)
    scripts: list[int] = []
    try:
        _wait_for(lambda: len(list(pids.iterdir())) == 2, "both trials' scripts to start")
        scripts = _scripts(pids)
        assert len(scripts) == 2, scripts
        script_processes = _processes(scripts)
        second = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=600, check=False)
        assert second.returncode == 2 and "in use" in second.stderr + second.stdout, second.stderr
        if to_a_thread:
            _signal_another_thread(tune.pid, signum)
        else:
            tune.send_signal(signum)
        tune.wait(timeout=600)
        assert tune.returncode == 130, console.read_text()[-4000:]
        _wait_for_end(script_processes, "the trials' scripts", seconds=60)
        results = json.loads((folder / "tuning.json").read_text())
        trials = results["trials"]
        assert len(trials) == 2 and all(trial["status"] == "Stopped" for trial in trials), trials
        assert results["status"] == "Stopped"
        said = console.read_text()  # each trial's line and the last line name the signal the search got
        assert said.count(f" - interrupted ({signum.name})\n") == 2, said
        assert said.rstrip().endswith(f"interrupted ({signum.name})"), said[-2000:]
        # what finished, as no table follows, and how to go on: only the same folder continues the search
        assert "interrupted after 2 trials of 2 (2 stopped); no best trial yet; results in " in console.read_text()
        assert f"the same search with --run-dir {folder} continues it" in console.read_text()
    finally:
        _kill_all(tune, scripts)


def _kill_all(tune: subprocess.Popen, scripts: list[int]) -> None:
    """After a test, whatever it ended or not: the search and the trial scripts it saw."""
    tune.kill()
    for pid in scripts:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


QUICK_THEN_SLEEPER = """import json, os, pathlib, time, uuid
if json.loads(os.environ["SM_HPS"])["mode"] == "sleep":
    pathlib.Path(os.environ["PID_FOLDER"], uuid.uuid4().hex).write_text("")
    print("loss=0.9", flush=True)
    time.sleep(600)
print("loss=0.25", flush=True)
"""


@pytest.mark.slow  # two real trials, one after the other
def test_ctrl_c_after_a_finished_trial_names_the_best_its_values_and_run_directory_and_leaves_no_process(
        search, tmp_path):
    """Whoever stops a search early often means to take its best trial: the summary says which, with the values
    it got and where its run directory is, as the finished search's `best:` line does; the running trial stops,
    every process the search started with it, and the search exits 130."""
    (tmp_path / "train.py").write_text(QUICK_THEN_SLEEPER)
    search.write_text("job: job.yaml\nobjective: {metric: loss, type: Minimize}\nstrategy: Grid\n"
                      "parameters:\n  mode: {type: categorical, values: [quick, sleep]}\nmax_parallel_jobs: 1\n")
    pids, folder = tmp_path / "pids", tmp_path / "out"
    pids.mkdir()
    environment = {**os.environ, "PID_FOLDER": str(pids), "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "orchestrator", "tune", "local", str(search), "--run-dir", str(folder)]
    console = tmp_path / "console.txt"
    with open(console, "w") as written:
        tune = subprocess.Popen(command, env=environment, stdout=written, stderr=subprocess.STDOUT, text=True)
    scripts: list[int] = []
    try:
        _wait_for(lambda: len(list(pids.iterdir())) == 1, "the second trial's script to start")
        scripts = _scripts(pids)
        started = [*_processes(scripts), *psutil.Process(tune.pid).children(recursive=True)]
        tune.send_signal(signal.SIGINT)
        tune.wait(timeout=600)
        said = console.read_text()
        assert tune.returncode == 130, said[-4000:]
        _wait_for_end(started, "the running trial's processes", seconds=60)
        first = json.loads((folder / "tuning.json").read_text())["trials"][0]
        assert first["status"] == "Completed" and first["objective"] == 0.25 and Path(first["run_dir"]).is_dir()
        assert (f"interrupted after 2 trials of 2 (1 completed, 1 stopped); best so far {first['name']}, "
                f"loss = 0.25, {{'mode': 'quick'}}, run directory {first['run_dir']}; results in {folder} "
                "(tuning.json, a run directory per trial)") in said, said[-4000:]
    finally:
        _kill_all(tune, scripts)


@pytest.mark.slow
def test_a_search_killed_by_sigkill_leaves_no_trial_running(search, tmp_path):
    """SIGKILL cannot be caught: each trial's `smtrain local` asked the kernel to be told when the search dies."""
    (tmp_path / "train.py").write_text(SLEEPER)
    search.write_text(SEARCH.replace("max_parallel_jobs: 1", "max_parallel_jobs: 2"))
    pids, folder = tmp_path / "pids", tmp_path / "out"
    pids.mkdir()
    environment = {**os.environ, "PID_FOLDER": str(pids), "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "orchestrator", "tune", "local", str(search), "--run-dir", str(folder)]
    tune = subprocess.Popen(command, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    scripts: list[int] = []
    try:
        _wait_for(lambda: len(list(pids.iterdir())) == 2, "both trials' scripts to start")
        scripts = _scripts(pids)
        assert len(scripts) == 2, scripts
        watched = [*_processes(scripts), *psutil.Process(tune.pid).children()]
        tune.kill()
        tune.wait(timeout=60)
        _wait_for_end(watched, "the trials and their scripts")
    finally:
        for pid in scripts:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
