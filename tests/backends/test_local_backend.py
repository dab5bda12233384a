"""A local run behind the backend interface: SageMaker's statuses as it goes, per-host logs with a tail, metrics,
artifacts, a stop from another process, and the CLI's status/logs/stop/list on a run directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from forked import smtrain

import orchestrator
from orchestrator.observing.job_status import SECONDARY_STATUSES, STATUSES, JobNotFound
from orchestrator.cli.main import main
from orchestrator.emulator.local_run import Options
from orchestrator.emulator.supervising.status import STATUS_FILE, read_status
from orchestrator.errors import EnvironmentProblem, SpecError

SMTRAIN = str(Path(sys.executable).with_name("smtrain"))
# Each host prints STEPS progress lines with its own loss, then a last line; with `forever`, it runs until SIGTERM.
# A run that ends by itself pauses only where a test needs it still running at a moment (the spot interruption).
SCRIPT = """
import os, signal, sys, time
host = os.environ["SM_CURRENT_HOST"]
steps, forever = int(os.environ["SM_HP_STEPS"]), os.environ["SM_HP_FOREVER"] == "true"
pause = 0.2 if forever else float(os.environ.get("SM_HP_STEP_SECONDS", "0"))
def stopped(signum, frame):
    print(f"{host} got SIGTERM", flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, stopped)
step = 0
while forever or step < steps:
    step += 1
    print(f"epoch=1 step={min(step, steps)}/{steps} train_loss={1.0 / step:.6f} line {step} of {host}", flush=True)
    time.sleep(pause)
print(f"{host} done", flush=True)
"""


def _spec(tmp_path: Path, steps: int = 30, forever: bool = False, step_seconds: float | None = None) -> Path:
    (tmp_path / "src").mkdir(exist_ok=True)
    (tmp_path / "src" / "train.py").write_text(SCRIPT)
    spec = {"name": "backend-test", "entry_point": "train.py", "source_dir": "src", "framework_version": "2.10.0",
            "instance": {"type": "ml.c5.2xlarge", "count": 2}, "max_run_seconds": 600,
            "hyperparameters": {"steps": steps, "forever": forever}}
    if step_seconds is not None:
        spec["hyperparameters"]["step_seconds"] = step_seconds
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _wait_for(check, what: str, deadline_seconds: float = 600.0):
    deadline = time.monotonic() + deadline_seconds
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_run_locally_returns_a_job_that_reports_sagemaker_statuses_logs_metrics_and_artifacts(tmp_path):
    job = orchestrator.run(_spec(tmp_path), backend="local", run_dir=tmp_path / "run")
    seen: list[tuple[str, str | None]] = []

    final = job.wait(poll_seconds=0.05, on_status=lambda current: seen.append((current.status,
                                                                               current.secondary_status)))

    assert final.status == "Completed" and final.secondary_status == "Completed"
    assert seen[-1] == ("Completed", "Completed") and all(status == "InProgress" for status, _ in seen[:-1])
    assert {status for status, _ in seen} <= set(STATUSES)
    assert {secondary for _, secondary in seen} <= set(SECONDARY_STATUSES)
    assert [item.status for item in final.transitions] == ["Starting", "Downloading", "Training", "Uploading",
                                                           "Completed"]
    assert final.name == job.name and final.instance_count == 2 and final.cost is None
    algo_2 = [line.message for line in job.logs(host="algo-2", tail=3)]
    assert algo_2 == ["epoch=1 step=29/30 train_loss=0.034483 line 29 of algo-2",
                      "epoch=1 step=30/30 train_loss=0.033333 line 30 of algo-2", "algo-2 done"]
    assert {line.host for line in job.logs()} == {"algo-1", "algo-2"}
    losses = [point.value for point in job.metric_points(["train:loss"])]
    assert len(losses) == 60 and min(losses) == pytest.approx(1 / 30, rel=1e-5)
    artifacts = job.artifacts()
    assert Path(artifacts["model"]).is_file() and Path(artifacts["output"]).is_file()
    assert orchestrator.attach(job.id).status().status == "Completed"
    assert type(job) is type(orchestrator.attach(job.full_id)) is orchestrator.Job  # issue 32: one handle
    assert job.full_id == f"local:{job.id}"


def test_smtrain_status_and_logs_take_a_run_directory_and_its_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ran = smtrain("local", str(_spec(tmp_path)), "-q", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    [run_dir] = (tmp_path / "runs").iterdir()

    status = CliRunner().invoke(main, ["status", str(run_dir)])
    by_name = CliRunner().invoke(main, ["status", run_dir.name, "-o", "json"])
    logs = CliRunner().invoke(main, ["logs", str(run_dir), "--host", "algo-2", "--tail", "20"])
    metrics = CliRunner().invoke(main, ["metrics", run_dir.name, "--metric", "train:loss", "-o", "json"])

    assert status.exit_code == 0, status.output
    assert status.stdout.startswith(f"{run_dir.name}: Completed\n")
    assert "progress   step 30/30 (100%)" in status.stdout and f"run dir    {run_dir}" in status.stdout
    document = json.loads(by_name.stdout)
    assert document["status"] == "Completed" and document["backend"] == "local"
    assert [item["status"] for item in document["history"]][0] == "Starting"
    assert logs.exit_code == 0, logs.output
    lines = logs.stdout.splitlines()
    assert len(lines) == 20 and all(line.startswith("[algo-2] ") for line in lines)
    assert lines[0] == "[algo-2] epoch=1 step=12/30 train_loss=0.083333 line 12 of algo-2"
    assert lines[-1] == "[algo-2] algo-2 done"
    points = json.loads(metrics.stdout)
    assert len(points) == 60 and {point["host"] for point in points} == {"algo-1", "algo-2"}


@pytest.mark.slow
def test_smtrain_stop_stops_a_running_local_run_from_another_process(tmp_path):
    run_dir = tmp_path / "run"
    running = subprocess.Popen([SMTRAIN, "local", str(_spec(tmp_path, forever=True)), "--run-dir", str(run_dir),
                                "-q"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        _wait_for(lambda: (run_dir / "logs" / "algo-2.log").is_file()
                  and "line 2 of algo-2" in (run_dir / "logs" / "algo-2.log").read_text(), "algo-2 training")
        assert read_status(run_dir)["SecondaryStatus"] == "Training"
        following = subprocess.Popen([SMTRAIN, "logs", str(run_dir), "--follow", "--host", "algo-1",
                                      "--poll-seconds", "0.2"], stdout=subprocess.PIPE, text=True)

        stop = subprocess.run([SMTRAIN, "stop", str(run_dir)], capture_output=True, text=True, timeout=600)
        output, _ = running.communicate(timeout=600)
        followed, _ = following.communicate(timeout=600)  # ends by itself once the run has ended
    finally:
        running.kill()

    assert stop.returncode == 0, stop.stderr
    assert stop.stdout.startswith(f"stop requested for {run_dir} (it was InProgress")
    assert running.returncode == 3, output  # as a stopped SageMaker job
    described = read_status(run_dir)
    assert (described["TrainingJobStatus"], described["SecondaryStatus"]) == ("Stopped", "Stopped")
    history = [item["Status"] for item in described["SecondaryStatusTransitions"]]
    assert history[:3] == ["Starting", "Downloading", "Training"] and "Stopping" in history
    for host in ("algo-1", "algo-2"):  # each training process got SIGTERM and its grace, as StopTrainingJob gives
        assert f"{host} got SIGTERM" in (run_dir / "logs" / f"{host}.log").read_text()
    followed_lines = followed.splitlines()
    assert "[algo-1] epoch=1 step=1/30 train_loss=1.000000 line 1 of algo-1" in followed_lines
    assert followed_lines[-1] == "[algo-1] algo-1 got SIGTERM" and all("algo-2" not in line for line in followed_lines)
    again = subprocess.run([SMTRAIN, "stop", str(run_dir)], capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and "is already Stopped: nothing to stop" in again.stdout


@pytest.mark.slow
def test_a_spot_interruption_and_max_run_seconds_read_as_sagemaker_reports_them(tmp_path):
    spot = tmp_path / "spot"
    spot.mkdir()
    interrupted = orchestrator.run(_spec(spot, steps=20, step_seconds=0.05), backend="local", run_dir=spot / "run",
                                   simulate_spot_interruption=0.5).wait(poll_seconds=0.1)
    timed = tmp_path / "timed"
    timed.mkdir()
    path = _spec(timed, forever=True)
    path.write_text(path.read_text().replace("max_run_seconds: 600", "max_run_seconds: 2"))
    stopped = orchestrator.run(path, backend="local", run_dir=timed / "run", stop_grace_seconds=5).wait(0.1)

    assert [item.status for item in interrupted.transitions] == [
        "Starting", "Downloading", "Training", "Interrupted", "Restarting", "Training", "Uploading", "Completed"]
    assert (interrupted.status, interrupted.secondary_status) == ("Completed", "Completed")
    assert (stopped.status, stopped.secondary_status) == ("Stopped", "MaxRuntimeExceeded")
    assert stopped.failure_reason.startswith("MaxRuntimeExceeded")


def test_smtrain_list_without_aws_shows_the_local_runs_and_says_why_sagemakers_are_missing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    job = orchestrator.run(_spec(tmp_path), backend="local")
    job.wait(poll_seconds=0.1)

    listed = CliRunner().invoke(main, ["list"])
    local_only = CliRunner().invoke(main, ["list", "--local", "-o", "json"])

    assert listed.exit_code == 0 and "SageMaker's jobs are not listed: no AWS region configured" in listed.stderr
    assert listed.stdout.splitlines()[1].startswith(f"{job.name}  Completed ")
    assert local_only.exit_code == 0
    assert [(row["job_name"], row["backend"], row["status"]) for row in json.loads(local_only.stdout)] == [
        (job.name, "local", "Completed")]


def test_a_run_whose_process_died_reads_as_failed_not_forever_in_progress(tmp_path):
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    document = {"TrainingJobName": "lost", "TrainingJobStatus": "InProgress", "SecondaryStatus": "Training",
                "SecondaryStatusTransitions": [], "CreationTime": "2026-01-01T00:00:00+00:00",
                "LocalRun": {"run_dir": str(tmp_path), "pid": int(gone.stdout), "process_started": 0.0}}
    (tmp_path / STATUS_FILE).write_text(json.dumps(document))

    described = read_status(tmp_path)

    assert described["TrainingJobStatus"] == "Failed"
    assert f"pid {int(gone.stdout)}) ended without a result" in described["FailureReason"]


def test_a_problem_of_this_machine_that_stops_a_local_run_before_it_starts_is_raised_by_the_handle(tmp_path):
    job = orchestrator.run(_spec(tmp_path), backend="local", run_dir=tmp_path / "run", python="/bin/true")

    with pytest.raises(EnvironmentProblem, match="/bin/true is not a Python interpreter"):
        job.wait(poll_seconds=0.05)


def test_a_notebook_rerunning_into_one_run_directory_never_clears_a_running_run_nor_reads_an_earlier_status(
        tmp_path):
    running = orchestrator.run(_spec(tmp_path, forever=True), backend="local", run_dir=tmp_path / "run")
    _wait_for(lambda: running.status().secondary_status == "Training", "the first run to train")

    with pytest.raises(SpecError, match="is in use by a run still going in this process"):
        orchestrator.run(_spec(tmp_path), backend="local", run_dir=tmp_path / "run")
    assert running.status().status == "InProgress" and running.logs(host="algo-1", tail=1)
    running.stop()
    assert running.wait(poll_seconds=0.05).status == "Stopped"
    again = orchestrator.run(_spec(tmp_path, steps=5), backend="local", run_dir=tmp_path / "run")
    final = again.wait(poll_seconds=0.05)  # not the stopped run's status, left in the directory
    assert (final.name, final.status) == (again.name, "Completed") and again.name != running.name


def test_the_handle_of_a_run_that_a_later_run_into_its_directory_cleared_says_so(tmp_path):
    """A notebook cell run twice with one run_dir: the first `job` must not claim the directory holds no status."""
    first = orchestrator.run(_spec(tmp_path, steps=5), backend="local", run_dir=tmp_path / "run")
    assert first.wait(poll_seconds=0.05).status == "Completed"
    later = orchestrator.run(_spec(tmp_path, steps=5), backend="local", run_dir=tmp_path / "run")
    assert later.wait(poll_seconds=0.05).status == "Completed"

    with pytest.raises(JobNotFound) as raised:
        first.status()

    assert str(raised.value) == (
        f"{tmp_path / 'run'} now holds the later run {later.name}, started into the same directory: this job's run, "
        f"{first.name}, was cleared\n  To fix: orchestrator.attach('{tmp_path / 'run'}') follows the run there now; "
        "give each run a run_dir of its own (the default, runs/<job name>, is new for every run)")
    assert orchestrator.attach(tmp_path / "run").status().name == later.name


def test_a_stop_right_after_run_stops_the_run_that_is_still_preparing(tmp_path):
    job = orchestrator.run(_spec(tmp_path, forever=True), backend="local", run_dir=tmp_path / "run")
    assert job.status().name == job.name  # Starting or on: the job's name, not its folder's

    job.stop()

    final = job.wait(poll_seconds=0.05)  # unasked, the run goes on to max_run_seconds (Stopped, MaxRuntimeExceeded)
    assert (final.name, final.status, final.failure_reason) == (job.name, "Stopped", None)


@pytest.mark.parametrize(("options", "message"), [
    ({"inputs": {"train": "/nonexistent"}}, "input train: /nonexistent does not exist"),
    ({"host_order": "algo-3,algo-1"}, "host order algo-3, algo-1 is not an ordering of algo-1, algo-2"),
    ({"master_host": "algo-9"}, "master_host='algo-9' is not a host of this job, which has algo-1, algo-2"),
])
def test_a_mistake_in_a_local_runs_input_is_raised_by_run_before_anything_starts(tmp_path, options, message):
    with pytest.raises(SpecError, match=message):
        orchestrator.run(_spec(tmp_path), backend="local", run_dir=tmp_path / "run", **options)
    assert not (tmp_path / "run").exists()


class _BrokenConsole:
    """An observer that fails as the run starts (a closed terminal, a bug in a notebook's callback)."""

    def notice(self, text: str) -> None:
        pass

    def started(self, job_name: str, run_dir: Path, world_size: int, hosts: int) -> None:
        raise RuntimeError("console gone")


def test_an_error_once_the_run_reports_its_status_still_ends_that_status(tmp_path):
    from orchestrator.emulator.local_run import run_local
    from orchestrator.specs.loader import load

    with pytest.raises(RuntimeError, match="console gone"):
        run_local(load(_spec(tmp_path)), Options(run_dir=tmp_path / "run"), _BrokenConsole())

    described = read_status(tmp_path / "run")
    assert (described["TrainingJobStatus"], described["SecondaryStatus"]) == ("Failed", "Failed")
    assert "RuntimeError: console gone" in described["FailureReason"]


def test_an_unknown_backend_is_a_user_error_naming_the_choices(tmp_path):
    with pytest.raises(SpecError, match="backend 'docker' is not one of local, sagemaker"):
        orchestrator.run(_spec(tmp_path), backend="docker")
    assert not os.path.exists(tmp_path / "runs")


def test_a_gpu_job_run_from_a_notebook_says_it_runs_on_the_cpu_stand_in(tmp_path, caplog):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("print('done')\n")
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump({
        "name": "gpu-nb", "entry_point": "train.py", "source_dir": "src", "framework_version": "2.3.0",
        "instance": {"type": "ml.g5.xlarge", "count": 1}, "distribution": {"mode": "none"}, "metrics": []}))

    with caplog.at_level("WARNING", logger="orchestrator"):
        job = orchestrator.run(str(tmp_path / "spec.yaml"), backend="local",
                               run_dir=tmp_path / "run")
        assert job.wait(poll_seconds=0.1).status == "Completed"

    [notice] = [text for key, text in job.summary().rows if key == "notice"]
    assert notice.startswith("This GPU job runs on the CPU: every training process gets smtrain's CPU stand-in")
    assert "1 x A10G per host" in notice and "This GPU job runs on the CPU" in job._repr_html_()
    assert [record.message for record in caplog.records if record.levelname == "WARNING"] == [notice]
    assert notice.endswith("Turn it off with gpu_standin=False.")  # run's keyword, not smtrain local's flag


def test_a_gpu_function_job_s_stand_in_notice_says_what_to_do_not_a_switch_its_run_lacks(tmp_path):
    def where():
        return "ran"

    job = orchestrator.remote(instance_type="ml.g5.xlarge")(where).run(backend="local")

    assert job.result() == "ran"
    [notice] = [text for key, text in job.summary().rows if key == "notice"]
    assert "--no-gpu-standin" not in notice and "Turn it off with gpu_standin=False" not in notice  # run() has no such
    assert notice.endswith("for real CUDA, run it on a machine with as many GPUs, or with backend=\"sagemaker\"; a CPU "
                           "instance_type in @orchestrator.remote(...) needs no stand-in.")


def test_waiting_on_a_local_run_notices_its_end_within_a_second_or_so(tmp_path):
    """`job.wait()` (docs/sagemaker.md's cell) paused 30 s between reads, SageMaker's pace, for a local run too:
    a 16 s run took 30 s to wait for. A local run's status file is now read every second unless told otherwise."""
    from orchestrator.backends.job import Job
    from orchestrator.backends.local import LocalBackend
    from orchestrator.emulator.supervising.status import StatusReport, now

    (tmp_path / "logs").mkdir()
    report = StatusReport(tmp_path, {"TrainingJobName": "tiny-1"}, now())
    report.preparing()
    report.transition("Training")
    ends = threading.Timer(0.2, report.finish, ("Completed", "Completed", None, None))
    started = time.monotonic()
    ends.start()

    final = Job(LocalBackend(), str(tmp_path)).wait()

    ends.join()
    assert final.status == "Completed" and time.monotonic() - started < 10


def test_a_run_killed_while_a_ci_runners_sigint_stopped_it_gives_that_runners_timing(tmp_path):
    """GitHub Actions cancels a step with SIGINT, SIGTERM 7.5 s later and SIGKILL 2.5 s after that (docs/ci.md): a
    run interrupted by SIGINT was told its runner kills "about 10 s after its SIGTERM", a signal it never got."""
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    document = {"TrainingJobName": "cancelled", "TrainingJobStatus": "InProgress", "SecondaryStatus": "Stopping",
                "SecondaryStatusTransitions": [], "CreationTime": "2026-01-01T00:00:00+00:00",
                "LocalRun": {"run_dir": str(tmp_path), "pid": int(gone.stdout), "process_started": 0.0,
                             "interrupted_by": "SIGINT"}}
    (tmp_path / STATUS_FILE).write_text(json.dumps(document))

    described = read_status(tmp_path)

    assert (described["TrainingJobStatus"], described["SecondaryStatus"]) == ("Stopped", "Interrupted")
    assert described["FailureReason"].startswith("smtrain was interrupted (SIGINT) and its process")
    assert "after its SIGTERM" not in described["FailureReason"]
    assert "GitHub Actions 10 s after its SIGINT" in described["FailureReason"]
