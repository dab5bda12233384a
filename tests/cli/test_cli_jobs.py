"""`smtrain submit | status | logs | stop | list` through click's CliRunner: output shapes, exit codes, and
user errors printed without a traceback. moto's server where it can answer; a Stubber for running jobs."""

from __future__ import annotations

import gc
import json
import signal
import threading

import boto3
import pytest
from click.testing import CliRunner
from job_fakes import NOW, SECRET, create_jobs, described, seed_logs

from orchestrator.cli.main import main


def smtrain(*args: str, obj=None):
    return CliRunner().invoke(main, list(args), obj=obj)


def assert_user_error(result, exit_code: int, message: str) -> None:
    assert result.exit_code == exit_code, result.output
    assert message in result.stderr
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit)


def test_submit_prints_name_link_world_cost_and_source_then_reuses_the_source(write_spec, bucket):
    spec = str(write_spec())

    first = smtrain("submit", spec, "--output", "json")
    again = smtrain("submit", spec)

    assert first.exit_code == 0, first.output
    printed = json.loads(first.stdout)
    assert set(printed) == {
        "job_name",
        "region",
        "console_url",
        "world_size",
        "instance_type",
        "instance_count",
        "cost",
        "bucket_created",
        "source",
    }
    assert printed["bucket_created"] is None  # the spec names its bucket: nothing to create
    assert printed["console_url"] == (
        "https://us-east-1.console.aws.amazon.com/sagemaker/home?region=us-east-1"
        f"#/jobs/{printed['job_name']}"
    )
    assert printed["world_size"] == 2 and printed["cost"]["max_total"] > 0
    assert printed["source"]["uploaded"] is True and printed["source"]["s3_uri"].endswith("/sourcedir.tar.gz")
    assert again.exit_code == 0, again.output
    assert again.stdout.startswith("submitted tiny-")
    assert "world    2 = 2 x ml.c5.2xlarge x 1 per host" in again.stdout
    assert "cost     at most USD " in again.stdout
    assert f"unchanged since an earlier submit, reused {printed['source']['s3_uri']}" in again.stdout
    assert SECRET not in first.output + again.output


def test_submit_dry_run_is_plan_and_needs_no_aws(write_spec):
    spec = str(write_spec())

    dry = smtrain("submit", spec, "--dry-run", "--job-name", "tiny-1", "-o", "json")
    planned = smtrain("plan", spec, "--job-name", "tiny-1", "-o", "json")

    assert dry.exit_code == 0, dry.output
    assert json.loads(dry.stdout) == json.loads(planned.stdout)
    assert SECRET not in dry.stdout


@pytest.mark.parametrize("verb", ["plan", "submit"])
def test_a_source_limit_of_zero_or_less_is_bad_usage(write_spec, verb):
    """Before, `--max-source-mb -5` packed the source and then refused it as "over the -5 MB limit"."""
    result = smtrain(verb, str(write_spec()), "--max-source-mb", "-5")

    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "Invalid value for '--max-source-mb': -5.0 is not in the range x>0." in result.stderr


def test_submit_refuses_blocking_findings_unless_allowed(write_spec, bucket):
    spec = str(
        write_spec(
            name="smddp-g5",
            framework_version="2.2.0",
            py_version="py310",
            instance={"type": "ml.g5.12xlarge", "count": 1},
            distribution={"mode": "pytorchddp"},
        )
    )

    refused = smtrain("submit", spec)
    allowed = smtrain("submit", spec, "--allow-unverified", "-o", "json")

    assert_user_error(refused, 2, "smddp-g5.yaml:15:3: instance.type: unverified: ")
    assert "--allow-unverified" in refused.stderr
    assert (
        boto3.client("sagemaker").list_training_jobs()["TrainingJobSummaries"][0]["TrainingJobName"]
        == (json.loads(allowed.stdout)["job_name"])
    )


def _without_role(spec):
    spec.write_text(spec.read_text().replace("role: arn:aws:iam::123456789012:role/SageMakerExecution\n", ""))
    return spec


def test_plan_without_a_role_region_or_credentials_plans_and_marks_what_submit_needs(write_spec):
    spec = _without_role(write_spec())

    planned = smtrain("plan", str(spec))
    document = json.loads(smtrain("plan", str(spec), "-o", "json").stdout)

    assert planned.exit_code == 0, planned.output
    assert "  role    <execution role: submit needs one>\n" in planned.stdout
    assert "notice: role: submit needs it: no SageMaker execution role" in planned.stdout
    assert "with no AWS credentials the infra stack and Studio could not be asked" in planned.stdout
    assert "no smtrain infra stack was found" not in planned.stdout
    assert {(finding["rule"], finding["field"]) for finding in document["warnings"]} >= {
        ("needed-by-submit", "role"), ("region-fallback", "region")}


def test_submit_names_the_missing_region_credentials_and_role_in_one_try(write_spec):
    result = smtrain("submit", str(_without_role(write_spec())))

    assert_user_error(result, 2, "not submitted, 3 things are missing: (1) no AWS region configured")
    assert "(2) no AWS credentials found; (3) no SageMaker execution role" in result.stderr


def test_submit_without_a_role_is_a_clean_error(write_spec, aws):
    spec = write_spec()
    text = spec.read_text().replace("role: arn:aws:iam::123456789012:role/SageMakerExecution\n", "")
    spec.write_text(text)

    assert_user_error(smtrain("submit", str(spec)), 2, "no SageMaker execution role")


@pytest.mark.parametrize("command", [["status"], ["logs"], ["logs", "--follow"], ["stop"]])
def test_commands_on_an_unknown_job_are_clean_errors(aws, command):
    assert_user_error(smtrain(*command, "nope"), 2, "no training job named nope in us-east-1")


def test_submit_without_a_region_sends_nothing(write_spec):
    # No region anywhere (the suite's environment has none): the plan assumes one, submit does not.
    assert_user_error(
        smtrain("submit", str(write_spec())), 2, "no AWS region configured: the plan assumed us-east-1"
    )


def test_without_credentials_commands_say_so():
    assert_user_error(smtrain("status", "sagemaker:tiny-a"), 2, "no AWS region configured")
    assert_user_error(smtrain("list", "--cloud", "--region", "us-east-1"), 2, "no AWS credentials found")


def test_list_status_and_logs_print_json_for_scripts(tiny_plan, aws):
    create_jobs(tiny_plan.create_training_job_request, ["tiny-a", "tiny-b", "other-c"])
    seed_logs("tiny-a", {"algo-1": [(0, "one")], "algo-2": [(1, "two")]})

    listed = smtrain("list", "--name-contains", "tiny", "--status", "Completed", "-o", "json")
    limited = smtrain("list", "--max", "1", "-o", "json")
    current = smtrain("status", "tiny-a", "-o", "json")
    lines = smtrain("logs", "tiny-a", "--follow", "--poll-seconds", "0", "-o", "json")

    assert {row["job_name"] for row in json.loads(listed.stdout)} == {"tiny-a", "tiny-b"}
    assert len(json.loads(limited.stdout)) == 1
    document = json.loads(current.stdout)
    assert document["status"] == "Completed" and document["instance_count"] == 2
    assert document["history"][0]["status"] == "Starting" and document["model_artifact"].endswith(
        "model.tar.gz"
    )
    assert [json.loads(line)["message"] for line in lines.stdout.splitlines()] == ["one", "two"]


def test_status_and_logs_text(tiny_plan, aws):
    create_jobs(tiny_plan.create_training_job_request, ["tiny-a"])
    seed_logs("tiny-a", {"algo-2": [(1, "later")], "algo-1": [(0, "first")]})

    current = smtrain("status", "tiny-a")
    lines = smtrain("logs", "tiny-a")

    assert current.stdout.startswith("tiny-a: Completed\n")
    assert "  instances  2 x ml.c5.2xlarge\n" in current.stdout
    assert "Starting  Preparing the instances for training" in current.stdout
    assert lines.stdout == "[algo-1] first\n[algo-2] later\n"


def test_an_ended_job_without_log_lines_is_not_said_to_have_none_yet(tiny_plan, aws):
    """moto's job is Completed and has no log stream: `logs` said "yet" and `status` blamed "the logs' last
    lines" for a step, although there is no line at all and none will come."""
    create_jobs(tiny_plan.create_training_job_request, ["tiny-silent"])

    lines = smtrain("logs", "tiny-silent")
    current = smtrain("status", "tiny-silent")

    assert lines.exit_code == 0 and lines.stderr == "no log lines for tiny-silent: it ended (Completed) without writing any\n"
    assert "  progress   no log lines\n" in current.stdout, current.stdout


def test_list_status_takes_any_case(tiny_plan, aws):
    create_jobs(tiny_plan.create_training_job_request, ["tiny-a"])

    listed = smtrain("list", "--status", "completed", "-o", "json")

    assert listed.exit_code == 0, listed.output
    assert [row["job_name"] for row in json.loads(listed.stdout)] == ["tiny-a"]


def test_submit_wait_logs_streams_the_logs_until_the_job_ends(write_spec, bucket):
    seed_logs("tiny-w", {"algo-1": [(0, "epoch 1")], "algo-2": [(5, "epoch 1 (host 2)")]})

    result = smtrain("submit", str(write_spec()), "--job-name", "tiny-w", "--logs", "--poll-seconds", "0")

    assert result.exit_code == 0, result.output
    assert "Completed\n[algo-1] epoch 1\n[algo-2] epoch 1 (host 2)\n" in result.stdout
    assert result.stdout.rstrip().endswith("model:   s3://smtrain-test/outputs/tiny-w/output/model.tar.gz")


def _uploaded_and_created(stubbed, name: str):
    """The stubbed answers of a submit up to its job's creation (the source uploaded: an object at the tarball's
    key without S3's SHA-256 checksum is not trusted, so it is uploaded again); returns SageMaker's stubber for
    the describes that follow."""
    stubbed.stubbers["s3"].add_response("head_bucket", {})
    stubbed.stubbers["s3"].add_response("head_object", {})
    stubbed.stubbers["s3"].add_response("put_object", {})
    sagemaker = stubbed.stubbers["sagemaker"]
    sagemaker.add_response(
        "create_training_job", {"TrainingJobArn": f"arn:aws:sagemaker:us-east-1:123456789012:training-job/{name}"}
    )
    return sagemaker


@pytest.mark.parametrize("final, exit_code", [("Completed", 0), ("Failed", 1), ("Stopped", 3)])
def test_submit_wait_exit_code_follows_the_final_status(write_spec, stubbed, final, exit_code):
    name = "tiny-stub"
    sagemaker = _uploaded_and_created(stubbed, name)
    sagemaker.add_response("describe_training_job", described(name, "InProgress", "Starting"))
    sagemaker.add_response("describe_training_job", described(name, "InProgress", "Training"))
    sagemaker.add_response(
        "describe_training_job",
        described(
            name,
            final,
            final,
            BillableTimeInSeconds=60,
            TrainingEndTime=NOW,
            Environment={"WANDB_API_KEY": SECRET},
            **({"FailureReason": f"AlgorithmError: ExitCode 1, key {SECRET}"} if final == "Failed" else {}),
        ),
    )

    if final == "Failed":  # where it failed: the streams' tails (this job logged nothing)
        stubbed.stubbers["logs"].add_response("describe_log_streams", {"logStreams": []})

    result = smtrain(
        "submit",
        str(write_spec()),
        "--job-name",
        name,
        "--wait",
        "--poll-seconds",
        "0",
        "-o",
        "json",
        obj=stubbed,
    )

    assert result.exit_code == exit_code, result.output
    assert [line.split("  ", 1)[1] for line in result.stderr.splitlines()] == [
        "InProgress (Starting)",
        "InProgress (Training)",
        final,
    ]
    printed = json.loads(result.stdout)
    assert printed["job_name"] == name and printed["final_status"]["status"] == final
    if final == "Failed":
        assert printed["final_status"]["failure_reason"] == "AlgorithmError: ExitCode 1, key ****"
        assert printed["failure_cause"] is None  # no log line names one
    assert SECRET not in result.output


def test_submit_wait_that_loses_aws_says_the_job_keeps_running(write_spec, stubbed):
    """Credentials that expire during a long --wait end the following, not the job: it bills on, so the user is
    told it runs and how to follow or stop it."""
    name = "tiny-expiring"
    sagemaker = _uploaded_and_created(stubbed, name)
    sagemaker.add_response("describe_training_job", described(name, "InProgress", "Training"))
    for _ in range(2):  # the poll, then the read that says where the job is
        sagemaker.add_client_error("describe_training_job", "ExpiredTokenException",
                                   "The security token included in the request is expired")

    result = smtrain("submit", str(write_spec()), "--job-name", name, "--wait", "--poll-seconds", "0", obj=stubbed)

    assert_user_error(result, 1, "ExpiredTokenException")
    assert f"stopped following; {name} may still run (its status could not be read: " in result.stderr
    assert f"`smtrain status {name}` says, `smtrain stop {name}` stops it" in result.stderr


@pytest.mark.parametrize(("then", "said"), [
    ("InProgress", "keeps running (InProgress: `smtrain watch {name}` follows it again, `smtrain stop {name}` "
                   "stops it)"),
    ("Completed", "had already ended: Completed"),
])
def test_submit_wait_that_stops_following_reads_where_the_job_is_before_saying_it(write_spec, stubbed, then, said):
    """Before, "keeps running" was said from the previous poll's status: a job that ended in the meantime was
    said to run on."""
    name = "tiny-throttled"
    sagemaker = _uploaded_and_created(stubbed, name)
    sagemaker.add_response("describe_training_job", described(name, "InProgress", "Training"))
    sagemaker.add_client_error("describe_training_job", "AccessDeniedException", "not allowed to describe")
    sagemaker.add_response("describe_training_job", described(name, then, "Training" if then == "InProgress"
                                                              else "Completed"))

    result = smtrain("submit", str(write_spec()), "--job-name", name, "--wait", "--poll-seconds", "0", obj=stubbed)

    assert_user_error(result, 1, "AccessDeniedException")
    assert f"stopped following; {name} {said.format(name=name)}" in result.stderr


def _interrupted_at(operation: str, signum: int = signal.SIGINT) -> boto3.Session:
    """A session on moto's server on which Ctrl-C (or `signum`) comes as `operation` is about to be sent, to the
    main thread as a terminal's does (the upload sends from boto3's transfer threads); the request is not sent."""
    session = boto3.Session(region_name="us-east-1")
    main = threading.main_thread().ident

    def ctrl_c(**_) -> None:
        signal.pthread_kill(main, signum)
        raise RuntimeError(f"{operation} not sent: {signal.Signals(signum).name} came first")

    session.events.register(f"before-send.{operation}", ctrl_c)
    return session


def test_ctrl_c_during_the_upload_says_no_job_was_created(write_spec, bucket):
    """Before, Ctrl-C mid-submit printed only `interrupted`, leaving the user to wonder whether a job bills."""
    result = smtrain("submit", str(write_spec()), "--job-name", "tiny-cut", obj=_interrupted_at("s3.PutObject"))

    assert result.exit_code == 130 and "Traceback" not in result.output
    assert result.stderr.startswith("interrupted (SIGINT): tiny-cut was not created: nothing runs on SageMaker (S3 keeps no "
                                    "part of an upload cut short;")
    assert boto3.client("sagemaker").list_training_jobs()["TrainingJobSummaries"] == []
    assert "Contents" not in boto3.client("s3").list_objects_v2(Bucket=bucket)


def test_sigterm_during_the_upload_ends_as_ctrl_c_does_and_leaves_no_source_tarball(write_spec, bucket, tmp_path,
                                                                                     monkeypatch):
    """Before, SIGTERM (a CI job cancelled, `kill`) killed smtrain outright mid-upload: no word, and the packed
    source left in $TMPDIR (smtrain's cache now). The handlers last only while the source is packed and sent."""
    monkeypatch.setenv("SMTRAIN_CACHE_DIR", str(tmp_path))
    before = signal.getsignal(signal.SIGTERM)

    result = smtrain("submit", str(write_spec()), "--job-name", "tiny-cut",
                     obj=_interrupted_at("s3.PutObject", signal.SIGTERM))
    gc.collect()  # the package, and with it its file, goes with the interrupted call's frames

    assert result.exit_code == 130 and "Traceback" not in result.output
    assert result.stderr.startswith("interrupted (SIGTERM): tiny-cut was not created"), result.stderr
    assert list((tmp_path / "sources").iterdir()) == []
    assert signal.getsignal(signal.SIGTERM) is before
    assert "Contents" not in boto3.client("s3").list_objects_v2(Bucket=bucket)


def test_ctrl_c_while_creating_the_job_says_how_to_find_and_stop_it(write_spec, bucket):
    result = smtrain("submit", str(write_spec()), "--job-name", "tiny-cut", "-o", "json",
                     obj=_interrupted_at("sagemaker.CreateTrainingJob"))

    assert result.exit_code == 130
    assert json.loads(result.stdout)["error"] == {
        "type": "Interrupted", "fix": None, "file": None, "line": None, "column": None, "field": None,
        "message": "interrupted (SIGINT): tiny-cut may have been created: `smtrain status tiny-cut` says, "
                   "`smtrain stop tiny-cut` stops it"}


def test_stop_asks_only_a_running_job_to_stop(stubbed):
    sagemaker = stubbed.stubbers["sagemaker"]
    sagemaker.add_response("describe_training_job", described("tiny-run", "InProgress", "Training"))
    sagemaker.add_response("stop_training_job", {}, {"TrainingJobName": "tiny-run"})
    sagemaker.add_response("describe_training_job", described("tiny-done", "Completed", "Completed"))

    running = smtrain("stop", "tiny-run", "-o", "json", obj=stubbed)
    done = smtrain("stop", "tiny-done", obj=stubbed)

    assert json.loads(running.stdout) == {
        "job_name": "tiny-run",
        "stop_requested": True,
        "status": "InProgress",
    }
    assert done.exit_code == 0 and done.stdout == "tiny-done is already Completed: nothing to stop\n"
