"""A search `smtrain tune local` ran, behind the tuning backend: `smtrain tune status | list | stop` on its results
folder (`local:NAME`, a folder, a bare name), and `orchestrator.Tuning.attach(...).best_job()` is the best trial's
run as an `orchestrator.Job`. The folder is written as the search writes it (`SearchResult.to_dict`)."""

from __future__ import annotations

import json
import os
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner

import orchestrator
from orchestrator.backends.tuning import LocalTuning, resolve_tuning
from orchestrator.cli.main import main
from orchestrator.contract import RUN_MARKER_FILE
from orchestrator.emulator.tuning.search import SearchResult
from orchestrator.observing.trials import SEARCH_RESULTS_FILE, Trial
from orchestrator.planning.tuning import tuning_job_name

START = datetime(2026, 11, 26, 10, 0, tzinfo=timezone.utc)
FAILURE = "algo-1 (rank 0) failed: ValueError: lr too small\nTraceback (most recent call last):\n  ..."


def _trial_run(folder: Path, name: str, status: str) -> Path:
    run_dir = folder / name
    (run_dir / "logs").mkdir(parents=True)
    (run_dir / RUN_MARKER_FILE).write_text("")
    (run_dir / "status.json").write_text(json.dumps({
        "TrainingJobName": name, "TrainingJobStatus": status, "SecondaryStatus": status,
        "CreationTime": START.isoformat(), "SecondaryStatusTransitions": [],
        "ResourceConfig": {"InstanceType": "ml.c5.2xlarge", "InstanceCount": 1}}))
    return run_dir


def _search(root: Path, name: str = "lr-search", created: datetime | None = None) -> Path:
    """A finished search of three trials under root/runs/NAME: the second is best (Minimize), the third failed."""
    folder = root / "runs" / name
    values = [(0.41, "Completed", 0.01), (0.22, "Completed", 0.05), (None, "Failed", 0.002)]
    trials = [Trial(name=f"{name}-{number:03d}", status=status, objective=loss, hyperparameters={"lr": lr},
                    number=number, seconds=30.0, started=START + timedelta(minutes=number),
                    ended=START + timedelta(minutes=number, seconds=30),
                    failure_reason=FAILURE if status == "Failed" else None,
                    run_dir=str(_trial_run(folder, f"{name}-{number:03d}", status)))
              for number, (loss, status, lr) in enumerate(values, start=1)]
    result = SearchResult(name=name, run_dir=folder, strategy="Random", metric="train:loss", goal="Minimize",
                          parallel=2, seconds=95.0, trials=trials, log_scaled=("lr",), created=created)
    (folder / SEARCH_RESULTS_FILE).write_text(json.dumps(result.to_dict(), default=str))
    return folder


def test_tune_status_reads_a_local_search_by_any_id_and_says_why_its_trials_failed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    folder = _search(tmp_path)

    for named in ("local:lr-search", str(folder), "lr-search"):
        result = CliRunner().invoke(main, ["tune", "status", named])
        assert result.exit_code == 0, result.output
        lines = result.output.splitlines()
        assert lines[0] == "lr-search: Completed (Random); trials: 2 completed, 0 in progress, 0 stopped, 1 failed"
        assert lines[1].startswith("  best: lr-search-002  train:loss = 0.22  {'lr': 0.05}")
        assert [line.split()[1] for line in lines[3:6]] == ["lr-search-002", "lr-search-001", "lr-search-003"]
        assert lines[6:] == ["  lr-search-003 failed: algo-1 (rank 0) failed: ValueError: lr too small"]

    document = json.loads(CliRunner().invoke(main, ["tune", "status", "local:lr-search", "-o", "json"]).stdout)
    assert document["run_dir"] == str(folder.resolve()) and "console_url" not in document
    assert document["best"]["name"] == "lr-search-002"


def test_tune_list_and_stop_answer_for_local_searches(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _search(tmp_path, "first")
    _search(tmp_path, "second")

    listed = CliRunner().invoke(main, ["tune", "list", "--backend", "local", "--name-contains", "sec"])
    stopped = CliRunner().invoke(main, ["tune", "stop", "--backend", "local", "first"])

    assert listed.exit_code == 0, listed.output
    assert [line.split()[0] for line in listed.stdout.splitlines()[1:]] == ["second"]
    assert stopped.exit_code == 0 and "first is already Completed: nothing to stop" in stopped.output
    listed_json = CliRunner().invoke(main, ["tune", "list", "--backend", "local", "--name-contains", "sec", "-o", "json"])
    assert json.loads(listed_json.stdout)[0]["created"] == (START + timedelta(minutes=1)).isoformat()  # its first trial


def test_tune_list_of_local_searches_puts_the_newest_created_first_not_the_last_written(tmp_path, monkeypatch):
    """It sorted by the last write of tuning.json: an older search that wrote last (continued, or ended after a
    newer one started) listed above the newer one, unlike SageMaker's list, newest created first."""
    monkeypatch.chdir(tmp_path)
    older = _search(tmp_path, "older", created=START)
    _search(tmp_path, "newer", created=START + timedelta(hours=1))
    os.utime(older / SEARCH_RESULTS_FILE, (time.time() + 60, time.time() + 60))  # written last

    listed = CliRunner().invoke(main, ["tune", "list", "--backend", "local"])
    listed_json = CliRunner().invoke(main, ["tune", "list", "--backend", "local", "-o", "json"])

    assert listed.exit_code == 0, listed.output
    assert [line.split()[0] for line in listed.stdout.splitlines()[1:]] == ["newer", "older"]
    assert [row["created"] for row in json.loads(listed_json.stdout)] == [
        (START + timedelta(hours=1)).isoformat(), START.isoformat()]


def test_the_best_trial_of_a_local_search_is_an_orchestrator_job(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    folder = _search(tmp_path)

    tuning = orchestrator.Tuning.attach("local:lr-search")
    job = tuning.best_job()

    assert type(job) is orchestrator.Job
    assert job.full_id == f"local:{folder / 'lr-search-002'}" and job.last_status.status == "Completed"
    assert tuning.full_id == f"local:{folder.resolve()}"
    assert tuning.plot().axes[1].get_xscale() == "log"  # lr was searched on a log scale


def test_a_search_base_name_reads_its_newest_results_folder(tmp_path, monkeypatch):
    """`tune local` names its folder runs/<name>-YYMMDD-HHMMSS-xxxx; `local:<name>` (and the bare name) is the
    newest search named after it, in the CLI and in Python alike."""
    monkeypatch.chdir(tmp_path)
    older = _search(tmp_path, "mlp-lr-261126-090000-aaaa")
    newer = _search(tmp_path, tuning_job_name("mlp-lr"))
    _search(tmp_path, tuning_job_name("mlp-lr-long"))  # another base name: never mlp-lr's

    for named in ("local:mlp-lr", "mlp-lr"):
        result = CliRunner().invoke(main, ["tune", "status", named])
        assert result.exit_code == 0, result.output
        assert result.output.startswith(f"{newer.name}: Completed (Random)"), result.output
    assert orchestrator.Tuning.attach("local:mlp-lr").full_id == f"local:{newer.resolve()}"
    assert orchestrator.Tuning.attach(f"local:{older.name}").full_id == f"local:{older.resolve()}"


def test_a_mistyped_local_search_names_the_near_folders(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    folder = _search(tmp_path, tuning_job_name("mlp-lr"))

    result = CliRunner().invoke(main, ["tune", "status", "local:mlp-lx"])

    assert result.exit_code == 2 and f"did you mean local:runs/{folder.name}?" in result.output, result.output


def test_a_local_id_without_results_and_an_unknown_folder_are_exit_2_naming_the_fix(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs" / "running").mkdir(parents=True)

    no_results = CliRunner().invoke(main, ["tune", "status", "local:running"])
    unknown = CliRunner().invoke(main, ["tune", "status", "local:nope"])

    assert no_results.exit_code == 2 and "no local search" in no_results.output
    assert unknown.exit_code == 2 and "smtrain tune list --backend local" in unknown.output


def test_a_bare_name_without_a_local_search_goes_to_sagemaker_offline(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _search(tmp_path)

    local, local_id = resolve_tuning("lr-search")
    remote, name = resolve_tuning("other-search", region="us-east-1")

    assert isinstance(local, LocalTuning) and Path(local_id).name == "lr-search"
    assert remote.name == "sagemaker" and name == "other-search"


@pytest.mark.slow  # a real search of real trials, in its own process
def test_tune_stop_stops_a_running_local_search_and_status_follows_it(tmp_path, monkeypatch):
    """A real search of three long trials, in its own process: `tune status` reads it InProgress with its running
    trial (1 of 3), `tune stop local:FOLDER` stops it (the running trial is asked to stop, no other starts) and
    `tune status` then says Stopped. (A trial that reaches its last epoch before its stop lands counts as Completed, as SageMaker counts
    one that reached max_resource: what is asserted is the search's end.)"""
    import os
    import subprocess
    import sys
    import time

    monkeypatch.chdir(tmp_path)
    example = Path(__file__).resolve().parents[2] / "job_specs" / "tuning" / "mlp-lr-search.yaml"
    folder = tmp_path / "runs" / "long"
    search = subprocess.Popen(
        [sys.executable, "-m", "orchestrator", "tune", "local", str(example), "--parallel", "1", "--max-jobs", "3",
         "--set", "hyperparameters.epochs=500", "--run-dir", str(folder), "-o", "json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "AWS_REGION": "us-east-1"})
    try:
        deadline = time.monotonic() + 300  # a safety net only: the search writes tuning.json as it starts
        while not list(folder.glob("*/status.json")) and time.monotonic() < deadline and search.poll() is None:
            time.sleep(0.05)
        running = CliRunner().invoke(main, ["tune", "status", "local:long", "-o", "json"])
        document = json.loads(running.stdout)
        assert document["status"] == "InProgress", running.output
        assert document["trials"]["InProgress"] == 1 and document["max_jobs"] == 3, running.output  # 1 running of 3
        assert document["trial_list"][0]["status"] == "InProgress", running.output

        stopped = CliRunner().invoke(main, ["tune", "stop", "local:long"])
        assert stopped.exit_code == 0 and "stop requested for local:long" in stopped.output
        out, err = search.communicate(timeout=300)
    finally:
        if search.poll() is None:
            search.kill()
            search.wait()

    document = json.loads(out)
    assert document["status"] == "Stopped" and len(document["trials"]) < 3, err.decode()[-2000:]
    after = CliRunner().invoke(main, ["tune", "status", "local:long"])
    assert after.output.startswith(f"{document['tuning_job_name']}: Stopped (Bayesian)"), after.output


def test_tune_list_runs_reads_searches_in_another_folder_or_that_search_itself(tmp_path, monkeypatch):
    """`tune list --backend local` read only runs/: a search run with --run-dir elsewhere was never listed; now
    `--runs DIR` (which implies the local backend) lists that folder's searches, or the search DIR is."""
    monkeypatch.chdir(tmp_path)
    elsewhere = tmp_path / "ci"
    _search(tmp_path, "first").rename(elsewhere)

    folder = CliRunner().invoke(main, ["tune", "list", "--runs", str(tmp_path / "runs")])
    itself = CliRunner().invoke(main, ["tune", "list", "--runs", str(elsewhere), "-o", "json"])
    refused = CliRunner().invoke(main, ["tune", "list", "--backend", "sagemaker", "--runs", str(elsewhere)])

    assert folder.exit_code == 0, folder.output
    assert folder.stdout == "" and f"local searches: read from {tmp_path / 'runs'}" in folder.stderr
    assert [row["tuning_job_name"] for row in json.loads(itself.stdout)] == ["first"]
    assert refused.exit_code == 2 and "--runs names local searches, but --backend sagemaker" in refused.stderr
