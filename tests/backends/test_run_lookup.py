"""Local runs answer offline and survive what is found in a run directory: `list`, `status`, `logs` and `stop`
look for a local run before SageMaker and name the near ones of a mistyped name; a malformed name is one clear
error; a damaged status.json is reported as damaged, for that run alone; a log is read from its tail."""

from __future__ import annotations

import json
import os
import time
import tracemalloc
from datetime import datetime, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner

from orchestrator.backends.local import LocalBackend
from orchestrator.cli.main import main
from orchestrator.contract import RUN_MARKER_FILE


def smtrain(*args: str):
    return CliRunner().invoke(main, list(args))


def _run(root: Path, name: str, status: object | str = "Completed", created: str = "2026-11-26T10:00:00+00:00") -> Path:
    """A finished run directory as `smtrain local` leaves it (status.json: a document, or text as given)."""
    run_dir = root / "runs" / name
    (run_dir / "logs").mkdir(parents=True)
    (run_dir / RUN_MARKER_FILE).write_text("")
    if isinstance(status, str) and status in ("Completed", "Failed"):
        status = {"TrainingJobName": name, "TrainingJobStatus": status, "SecondaryStatus": status,
                  "CreationTime": created, "SecondaryStatusTransitions": [],
                  "ResourceConfig": {"InstanceType": "ml.c5.2xlarge", "InstanceCount": 1}}
    (run_dir / "status.json").write_text(status if isinstance(status, str) else json.dumps(status))
    (run_dir / "logs" / "algo-1.log").write_text("epoch=1 step=2/2 train_loss=0.5\n")
    return run_dir


def _assert_one_clear_error(result, exit_codes=(1, 2)) -> None:
    assert result.exit_code in exit_codes, result.output
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit)
    assert result.stderr.startswith("Error: ")


def test_list_with_no_region_and_no_credentials_prints_one_json_document_of_the_local_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _run(tmp_path, "older", created="2026-11-25T10:00:00+00:00")
    _run(tmp_path, "newer", created="2026-11-26T10:00:00+00:00")

    listed = smtrain("list", "-o", "json")
    limited = smtrain("list", "--max", "1", "-o", "json")
    cloud = smtrain("list", "--cloud")

    assert listed.exit_code == 0, listed.output
    assert [(row["job_name"], row["backend"]) for row in json.loads(listed.stdout)] == [
        ("newer", "local"), ("older", "local")]
    assert "SageMaker's jobs are not listed: no AWS region configured" in listed.stderr
    assert [row["job_name"] for row in json.loads(limited.stdout)] == ["newer"]
    _assert_one_clear_error(cloud, (2,))


@pytest.mark.parametrize("command", ["status", "logs", "stop"])
def test_a_mistyped_local_run_names_the_near_one_before_any_aws_error(tmp_path, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    _run(tmp_path, "mlp-demo-1")
    _run(tmp_path, "other-thing")

    result = smtrain(command, "mlp-demo-2")

    _assert_one_clear_error(result)
    assert result.stderr.startswith("Error: mlp-demo-2 is no local run (did you mean runs/mlp-demo-1?), and "
                                    "SageMaker was not asked\n")
    assert "other-thing" not in result.stderr


@pytest.mark.parametrize("command", ["status", "logs", "stop"])
def test_a_bare_name_of_no_run_says_so_before_the_aws_error_and_a_sagemaker_id_does_not(tmp_path, monkeypatch,
                                                                                      command):
    monkeypatch.chdir(tmp_path)
    _run(tmp_path, "other-thing")

    bare, cloud = smtrain(command, "nosuch-job"), smtrain(command, "sagemaker:nosuch-job")

    _assert_one_clear_error(bare)
    assert bare.stderr.startswith("Error: nosuch-job is no local run (no run directory, nor runs/nosuch-job/), and "
                                  "SageMaker was not asked\n  To fix: for a run elsewhere, give its directory")
    assert "for a SageMaker job, name its region: sagemaker:nosuch-job --region <region>" in bare.stderr
    _assert_one_clear_error(cloud)
    assert cloud.stderr.startswith("Error: no AWS region configured")


@pytest.mark.parametrize("region", [None, "us-east-1"])
def test_offline_a_bare_name_of_no_run_says_how_to_look_on_sagemaker_not_what_aws_lacks(tmp_path, monkeypatch,
                                                                                         region):
    """No region, or a region and no credentials (the suite has none): before, the first read `Nor could SageMaker
    answer for it: no AWS region configured` with `set AWS_REGION` as the whole fix, and the second only `no AWS
    credentials found`, not even that no local run has the name."""
    monkeypatch.chdir(tmp_path)
    if region:
        monkeypatch.setenv("AWS_REGION", region)

    result = smtrain("status", "my-job")

    _assert_one_clear_error(result, (2,))
    message, fix = result.stderr.splitlines()[:2]
    assert message == "Error: my-job is no local run (no run directory, nor runs/my-job/), and SageMaker was not asked"
    assert "region" not in message and "credentials" not in message
    assert fix.startswith("  To fix: for a run elsewhere, give its directory as `smtrain local` printed it")
    assert ("name its region: sagemaker:my-job --region <region>" if region is None else
            "sign in first (`aws configure` or `aws sso login`, or set AWS_PROFILE), then give sagemaker:my-job") in fix


def test_the_job_name_without_its_timestamp_names_the_newest_runs_first(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for age, stamp in ((1000, "2026-11-25-10-00-00-000-aaaa"), (0, "2026-11-26-10-00-00-000-bbbb")):
        marker = _run(tmp_path, f"my-job-{stamp}") / RUN_MARKER_FILE
        os.utime(marker, (time.time() - age, time.time() - age))  # local_runs: newest marker first

    result = smtrain("status", "my-job")

    _assert_one_clear_error(result)
    assert ("my-job is no local run (did you mean runs/my-job-2026-11-26-10-00-00-000-bbbb, "
            "runs/my-job-2026-11-25-10-00-00-000-aaaa?)") in result.stderr
    assert ("To fix: give the run, e.g. local:runs/my-job-2026-11-26-10-00-00-000-bbbb; for a SageMaker job, name "
            "its region") in result.stderr  # the run first: offline, the AWS advice alone would mislead


@pytest.mark.parametrize("command", ["status", "logs", "metrics"])
def test_a_local_id_naming_a_folder_that_is_no_run_is_refused_naming_the_runs(tmp_path, monkeypatch, command):
    """`local:plain` beside the source folder `plain/`: the runs of that name are meant, not the folder."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "train.py").write_text("print(1)\n")
    _run(tmp_path, "plain-2026-11-26-10-00-00-000-aaaa")

    result = smtrain(command, "local:plain")

    _assert_one_clear_error(result, (2,))
    assert "plain is no local run" in result.stderr
    assert "did you mean runs/plain-2026-11-26-10-00-00-000-aaaa?" in result.stderr


def test_a_misspelt_job_name_without_its_timestamp_names_the_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _run(tmp_path, "my-job-2026-11-26-10-00-00-000-bbbb")

    result = smtrain("status", "local:my-jbo")

    _assert_one_clear_error(result)
    assert "did you mean runs/my-job-2026-11-26-10-00-00-000-bbbb?" in result.stderr


@pytest.mark.parametrize("command", ["status", "logs", "stop"])
@pytest.mark.parametrize("name", ["a" * 300, "bad\x00name", ""])
def test_a_malformed_name_is_one_clear_error(tmp_path, monkeypatch, command, name):
    monkeypatch.chdir(tmp_path)
    _run(tmp_path, "mlp-demo-1")

    result = smtrain(command, name)

    _assert_one_clear_error(result)
    assert "is not a training job name SageMaker accepts" in result.stderr


@pytest.mark.parametrize("command", ["metrics", "status", "stop"])
@pytest.mark.parametrize("name", ["runs/my-job", "./my-job", "../../etc", "runs/" + "b" * 300])
def test_a_path_to_no_run_names_the_runs_near_it_and_not_sagemaker_s_name_rules(tmp_path, monkeypatch, command,
                                                                                  name):
    monkeypatch.chdir(tmp_path)
    _run(tmp_path, "my-job-2026-11-26-10-00-00-000-bbbb")

    result = smtrain(command, name)

    _assert_one_clear_error(result, (2,))
    assert result.stderr.startswith(f"Error: {name} is no local run (no run directory there)\n  To fix: ")
    assert "SageMaker" not in result.stderr and "e.g. runs-my-job" not in result.stderr
    if "my-job" in name:
        assert result.stderr.endswith("To fix: did you mean runs/my-job-2026-11-26-10-00-00-000-bbbb?\n")


DAMAGED = {"not JSON": ("{garbage", "Expecting"), "a list": ("[1, 2]", "a JSON list, not an object"),
           "an empty object": ("{}", "no TrainingJobName"),
           "a bad time": (json.dumps({"TrainingJobName": "x", "TrainingJobStatus": "Completed",
                                      "CreationTime": "yesterday"}), "Invalid isoformat")}


@pytest.mark.parametrize("kind", DAMAGED)
def test_a_damaged_status_is_reported_as_damaged_alone(tmp_path, monkeypatch, kind):
    monkeypatch.chdir(tmp_path)
    text, why = DAMAGED[kind]
    _run(tmp_path, "broken", status=text)
    _run(tmp_path, "fine")

    status = smtrain("status", "broken")
    stop = smtrain("stop", "broken")
    listed = smtrain("list", "--local", "-o", "json")
    fine = smtrain("status", "fine", "-o", "json")

    for result in (status, stop):
        _assert_one_clear_error(result, (1,))
        assert "runs/broken/status.json is damaged" in result.stderr and why in result.stderr
    assert listed.exit_code == 0, listed.output
    rows = {row["job_name"]: row for row in json.loads(listed.stdout)}
    assert rows["fine"]["status"] == "Completed"
    assert rows["broken"]["status"] == "Damaged" and why in rows["broken"]["damaged"]
    assert fine.exit_code == 0 and json.loads(fine.stdout)["status"] == "Completed"


def test_status_reads_a_huge_log_from_its_tail(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_dir = _run(tmp_path, "chatty")
    filler = b"x" * 1023 + b"\n"
    with (run_dir / "logs" / "algo-1.log").open("wb") as log:
        log.write(filler * (48 * 1024))  # 48 MiB
        log.writelines(f"epoch=1 step={step}/500 train_loss=0.25\n".encode() for step in range(1, 501))

    tracemalloc.start()
    try:
        lines = list(LocalBackend().logs(str(run_dir), tail=200))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    status = smtrain("status", "chatty", "-o", "json")

    assert [line.message for line in lines] == [f"epoch=1 step={step}/500 train_loss=0.25" for step in range(301, 501)]
    assert peak < 8 * 1024 * 1024, f"{peak} bytes held to read 200 lines"
    assert status.exit_code == 0, status.output
    assert json.loads(status.stdout)["progress"]["step"] == 500


def test_the_python_api_names_no_command_line_argument_for_a_bad_job_name(tmp_path, monkeypatch):
    """`orchestrator.attach("sagemaker:no_such")` said `JOB_NAME 'no_such' is not a training job name`, the CLI's
    argument name (and not even its own: the verbs' argument is JOB); `plan(..., job_name=)` said `--job-name`."""
    from job_fakes import write_spec_file

    import orchestrator
    from orchestrator.errors import SpecError

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SpecError) as attached:
        orchestrator.attach("sagemaker:no_such")
    with pytest.raises(SpecError) as planned:
        orchestrator.plan(str(write_spec_file(tmp_path)), job_name="a_b")

    assert attached.value.message == "'no_such' is not a training job name SageMaker accepts"
    assert planned.value.message == "'a_b' is not a training job name SageMaker accepts"
    assert "e.g. no-such" in attached.value.fix


def test_list_runs_reads_the_folder_a_ci_job_gave_run_dir_or_that_run_itself_and_says_where_it_looked(
        tmp_path, monkeypatch):
    """`smtrain local --run-dir /tmp/ci/job-1` runs were never listed (only runs/ was read) and an empty list said
    nothing of where it looked; now `--runs /tmp/ci` (or the run directory itself) lists them, offline, and
    stderr names the folder read."""
    monkeypatch.chdir(tmp_path)
    ci = tmp_path / "ci"
    ci.mkdir()
    _run(tmp_path, "job-1").rename(ci / "job-1")
    _run(tmp_path, "job-2", created="2026-11-27T10:00:00+00:00").rename(ci / "job-2")
    (tmp_path / "runs").rmdir()

    default = smtrain("list", "--local")
    folder = smtrain("list", "--local", "--runs", str(ci), "-o", "json")
    one_run = smtrain("list", "--runs", str(ci / "job-1"), "-o", "json")
    in_text = smtrain("list", "--local", "--runs", str(ci))
    missing = smtrain("list", "--runs", str(tmp_path / "nowhere"))
    with_cloud = smtrain("list", "--cloud", "--runs", str(ci))

    assert default.exit_code == 0, default.output
    assert default.stdout == "" and "no training jobs match" in default.stderr
    assert f"local runs: read from runs ({tmp_path / 'runs'}), no such folder" in default.stderr
    assert "; runs started elsewhere (--run-dir): --runs DIR" in default.stderr
    assert [row["job_name"] for row in json.loads(folder.stdout)] == ["job-2", "job-1"]
    assert [(row["job_name"], row["run_dir"]) for row in json.loads(one_run.stdout)] == [
        ("job-1", str((ci / "job-1").resolve()))]
    assert in_text.exit_code == 0 and in_text.stdout.splitlines()[1].startswith("job-2 ")
    assert in_text.stderr.strip() == f"local runs: read from {ci}"
    for refused in (missing, with_cloud):
        assert refused.exit_code == 2 and "Traceback" not in refused.output
    assert "nowhere is no folder here; give the folder `--run-dir` wrote into" in missing.stderr
    assert "--runs names local runs, --cloud lists only SageMaker's jobs" in with_cloud.stderr


def test_list_of_local_runs_in_another_folder_imports_no_aws_library_nor_torch(tmp_path):
    """`smtrain list --local --runs DIR` stays offline and light: no boto3, botocore, sagemaker or torch."""
    import subprocess
    import sys

    _run(tmp_path, "job-1")
    probe = ("import sys\nfrom orchestrator.cli.main import main\ntry:\n    main(sys.argv[1:])\n"
             "except SystemExit:\n    pass\n"
             "print(sorted({m.split('.')[0] for m in sys.modules} & {'boto3', 'botocore', 'sagemaker', 'torch'}))")
    done = subprocess.run([sys.executable, "-c", probe, "list", "--local", "--runs", str(tmp_path / "runs")],
                          check=False, capture_output=True, text=True, timeout=600, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})

    assert done.stdout.splitlines()[1].startswith("job-1 ") and done.stdout.splitlines()[-1] == "[]", done.stderr


def test_a_local_name_with_no_run_near_it_says_to_give_the_runs_path(tmp_path, monkeypatch):
    """A run started with --run-dir outside runs/: `smtrain list --local` reads runs/ and would not find it
    either; the run's own path, or --runs DIR, does."""
    monkeypatch.chdir(tmp_path)

    result = smtrain("logs", "local:ci-job-2026-11-26-10-00-00-000-aaaa")

    _assert_one_clear_error(result, (2,))
    assert "give the run directory's path, as `smtrain local` printed it" in result.stderr
    assert "`smtrain list --local --runs DIR` lists the runs in DIR" in result.stderr


def test_status_of_a_copied_run_dates_its_progress_no_later_than_the_runs_end(tmp_path, monkeypatch):
    """A local line's time is its log's time of last write; `cp -r` of a run made that the copy's, and `status`
    showed the step at the time of the copy. The end in status.json bounds it."""
    monkeypatch.chdir(tmp_path)
    run_dir = _run(tmp_path, "copied", {"TrainingJobName": "copied", "TrainingJobStatus": "Completed",
                                        "SecondaryStatus": "Completed", "CreationTime": "2026-11-26T10:00:00+00:00",
                                        "TrainingEndTime": "2026-11-26T10:05:00+00:00",
                                        "SecondaryStatusTransitions": [],
                                        "ResourceConfig": {"InstanceType": "ml.c5.2xlarge", "InstanceCount": 1}})
    copied = datetime(2026, 11, 27, 9, 0, tzinfo=timezone.utc).timestamp()
    os.utime(run_dir / "logs" / "algo-1.log", (copied, copied))

    result = smtrain("status", str(run_dir))

    assert result.exit_code == 0, result.output
    assert "step 2/2 (100%), epoch 1 at 2026-11-26 10:05:00 UTC" in result.stdout, result.stdout
