"""`smtrain logs` of a SageMaker job (CloudWatch, one event a line): a private key the job printed over several
events is hidden whole, per stream and rank, in a dump, in the last lines and across a follow's reads."""

from __future__ import annotations

import base64
import os

import boto3
from job_fakes import EPOCH, create_jobs, described, seed_logs

import orchestrator
from orchestrator.backends.sagemaker import SageMakerBackend
from orchestrator.cloud.logs import LOG_GROUP, LogReader
from orchestrator.redact import MASK, mask_text

BODY = [base64.b64encode(os.urandom(48)).decode() for _ in range(20)]
KEY = ["-----BEGIN ENCRYPTED PRIVATE KEY-----", *BODY, "-----END ENCRYPTED PRIVATE KEY-----"]
HIDDEN = f"{MASK} (a private key: {len(KEY)} lines hidden)"


def _events(lines: list[str], start: int = 0) -> list[tuple[int, str]]:
    return [(start + offset, line) for offset, line in enumerate(lines)]


def test_a_dump_and_the_last_lines_show_one_line_for_the_key(tiny_plan, aws):
    create_jobs(tiny_plan.create_training_job_request, ["tiny-key"])
    rank = "[1,mpirank:2,algo-1]<stdout>:"
    interleaved = [line for key_line in KEY for line in (rank + key_line, "[1,mpirank:0,algo-1]<stdout>:step")]
    seed_logs("tiny-key", {"algo-1": _events(["start", *interleaved, "done"]),
                           "algo-2": _events(["b: start", *KEY, "b: done"])})
    job = orchestrator.attach("tiny-key")

    dump = [str(line) for line in job.logs(host="algo-2")]
    last = [line.message for line in job.logs(host="algo-1", tail=3)]  # the key's BEGIN lies before these

    assert dump == ["[algo-2] b: start", f"[algo-2] {HIDDEN}", "[algo-2] b: done"]
    assert last == [f"{rank}{HIDDEN}", "[1,mpirank:0,algo-1]<stdout>:step", "done"]
    every = [line.message for line in [*job.logs(), *job.logs(tail=5)]]
    assert not any(body in message for message in every for body in BODY)


def test_a_follow_hides_a_key_whose_lines_arrive_in_two_reads(aws):
    logs = boto3.client("logs")
    logs.create_log_group(logGroupName=LOG_GROUP)
    stream = f"tiny-follow/algo-1-{EPOCH}"
    logs.create_log_stream(logGroupName=LOG_GROUP, logStreamName=stream)
    reader = LogReader(logs, "tiny-follow", mask=mask_text)

    def put(lines: list[str], start: int) -> list[str]:
        logs.put_log_events(logGroupName=LOG_GROUP, logStreamName=stream, logEvents=[
            {"timestamp": EPOCH * 1000 + offset, "message": line} for offset, line in _events(lines, start)])
        return [line.message for line in reader.read_new()]

    assert put(["epoch 1", *KEY[:10]], 0) == ["epoch 1"]
    assert put([*KEY[10:], "epoch 2"], 20) == [HIDDEN, "epoch 2"]


def test_a_follow_from_the_last_lines_hides_a_key_begun_before_them_and_one_still_open(stubbed_sagemaker):
    """`--follow --tail N` reads each stream from its end: a key whose BEGIN lies before the last lines still
    shows as its one line, and one open at the end is hidden whole when its END comes in a later read."""
    name = "tiny-key"
    for status, secondary in [("InProgress", "Training")] * 2 + [("Completed", "Completed")]:
        stubbed_sagemaker.stubbers["sagemaker"].add_response("describe_training_job",
                                                             described(name, status, secondary))
    base = seed_logs(name, {"algo-1": _events(["start", *KEY, "epoch 1", *KEY[:10]])})
    job = orchestrator.Job(SageMakerBackend(stubbed_sagemaker), name)
    lines = (line.message for line in job.logs(follow=True, tail=2, poll_seconds=0))

    first = [next(lines), next(lines)]
    later = _events([*KEY[10:], "epoch 2"], 40)
    boto3.client("logs").put_log_events(
        logGroupName=LOG_GROUP, logStreamName=f"{name}/algo-1-{EPOCH}",
        logEvents=[{"timestamp": base * 1000 + offset, "message": line} for offset, line in later])

    assert first == [HIDDEN, "epoch 1"]
    assert list(lines) == [HIDDEN, "epoch 2"]
