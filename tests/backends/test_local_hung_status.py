"""A local run stopped as hung, read back afterwards: SageMaker's statuses stay Failed (its API has no Hung),
and `smtrain status` (text and JSON) says Hung, names the rank the others waited for as the cause and shows
the last lines of that rank's host. The run directory is written by the emulator's own writers (StatusReport,
terminal_status, write_result) from a hang report of recorded stacks, as a hung `smtrain local` run ends."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from click.testing import CliRunner

from orchestrator.cli.main import main
from orchestrator.contract import RUN_MARKER_FILE
from orchestrator.emulator.preparing.layout import write_result
from orchestrator.emulator.supervising.stacks import RankProcess, RankStack
from orchestrator.emulator.supervising.stall import STACKS_FILE, HangReport
from orchestrator.emulator.supervising.status import StatusReport, terminal_status

WAITING_IN_BACKWARD = """Thread 6 (active): "MainThread"
    _engine_run_backward (torch/autograd/graph.py:979)
    backward (torch/autograd/__init__.py:395)
    Tensor.backward (torch/_tensor.py:623)
    main (train.py:27)
    <module> (train.py:36)
"""
ASLEEP = """Thread 5 (active): "MainThread"
    check (train.py:12)
    main (train.py:26)
    <module> (train.py:36)
"""
CULPRIT = ("Hung: rank 1 (algo-2) is not in a collective, at check (train.py:12); the others wait for it: "
           "rank 0 (algo-1) in backward's gradient all-reduce called at main (train.py:27)")


def _hung_run(run_dir: Path) -> None:
    (run_dir / "logs").mkdir(parents=True)
    (run_dir / RUN_MARKER_FILE).write_text("")
    (run_dir / "logs" / "algo-1.log").write_text("epoch=0 step=1/10 loss=1.7\nepoch=0 step=2/10 loss=1.8\n")
    (run_dir / "logs" / "algo-2.log").write_text("rank 1 about to sleep\n")
    request = {"TrainingJobName": "hang-ddp-1",
               "ResourceConfig": {"InstanceType": "ml.g5.xlarge", "InstanceCount": 2}}
    report = StatusReport(run_dir, request, datetime.now(timezone.utc))
    report.transition("Training")
    hang = HangReport(16.0, (RankStack(RankProcess(11, "algo-1", 0), WAITING_IN_BACKWARD, "py-spy"),
                             RankStack(RankProcess(12, "algo-2", 1), ASLEEP, "py-spy")))
    (run_dir / STACKS_FILE).write_text(hang.text())
    reason = f"{hang.summary()}; every rank's stack: {run_dir / STACKS_FILE}"
    cause = hang.cause(run_dir / STACKS_FILE).to_dict()
    write_result(run_dir, {"job_name": "hang-ddp-1", "run_dir": str(run_dir), "status": "Hung",
                           "exit_code": 4, "failure_reason": reason, "failure_cause": cause})
    status, secondary, message = terminal_status("Hung", reason, cause)
    report.finish(status, secondary, reason, None, message=message)


def test_a_hung_local_run_reads_failed_with_hung_and_its_culprit_as_the_cause(tmp_path):
    run_dir = tmp_path / "hang-ddp-1"
    _hung_run(run_dir)

    text = CliRunner().invoke(main, ["status", str(run_dir)])
    shown = CliRunner().invoke(main, ["status", str(run_dir), "-o", "json"])

    assert text.exit_code == 0 and shown.exit_code == 0, text.output + shown.output
    document = json.loads(shown.stdout)
    assert (document["status"], document["secondary_status"]) == ("Failed", "Failed")
    assert document["history"][-1] == {**document["history"][-1], "status": "Failed", "message": CULPRIT}
    assert {key: document["failure_cause"][key] for key in ("host", "rank", "category", "headline")} == {
        "host": "algo-2", "rank": 1, "category": "hung", "headline": CULPRIT}
    assert document["failing_host"] == "algo-2"
    assert document["failing_host_last_lines"] == ["rank 1 about to sleep"]
    lines = text.stdout.splitlines()
    assert f"  cause      {CULPRIT}" in lines
    fix = "  fix        find why rank 1 (algo-2) never reaches the collective"
    assert any(line.startswith(fix) for line in lines)
    assert "  last lines of algo-2 (the host the others wait for)" in lines


def test_watching_a_run_that_ended_hung_exits_4_as_the_run_did(tmp_path):
    run_dir = tmp_path / "hang-ddp-1"
    _hung_run(run_dir)

    watched = CliRunner().invoke(main, ["watch", str(run_dir), "--stall-timeout", "600"])

    assert watched.exit_code == 4, watched.output
    assert CULPRIT in watched.output


def test_a_hung_or_interrupted_run_gets_a_status_message_of_its_own():
    cause = {"headline": CULPRIT}

    assert terminal_status("Hung", "Hung: ...", cause) == ("Failed", "Failed", CULPRIT)
    assert terminal_status("Hung", "Hung: ...") == (
        "Failed", "Failed", "Hung: stopped by smtrain's stall check")
    assert terminal_status("Failed", "algo-2 (rank 1) failed: ValueError", cause) == (
        "Failed", "Failed", None)
    # Ctrl-C or a CI runner's SIGTERM, not the "(simulated spot interruption)" the run goes on after
    message = "smtrain was interrupted (SIGHUP) and stopped every process of the job"
    assert terminal_status("Interrupted", None, interrupted_by="SIGHUP") == ("Stopped", "Interrupted", message)
