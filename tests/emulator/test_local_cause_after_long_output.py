"""A local run's cause read from its hosts' logs however much they hold after the error that started the failure.

Before, the cause came from the last 2000 lines of each host that the supervisor keeps: a script that logged its
traceback and then printed thousands of lines while it wound down was `algo-1 (rank 0) exited with code 1` with one
of those lines as its `last line`, and rank 3's traceback in a 16-rank torchrun job, followed by 5,000 lines of
warnings, gave way to algo-2's rank 8 and its `remote process exited` (peer_lost)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner
from long_failures import HEADLINE, RANK_3_TRACEBACK, cause_at_the_end_of, rank_3_fails_then

import orchestrator
from orchestrator.cli.main import main
from orchestrator.contract import RUN_MARKER_FILE
from orchestrator.emulator.local_run import Options, run_local
from orchestrator.emulator.preparing.layout import write_result
from orchestrator.emulator.supervising.status import StatusReport, terminal_status
from orchestrator.observing import log_file_end
from orchestrator.specs.loader import load

NOISE_BEYOND_THE_KEPT_TAIL = 5000


def test_rank_3s_error_is_the_cause_whatever_its_host_printed_after_it(tmp_path):
    alone = cause_at_the_end_of(tmp_path / "alone", rank_3_fails_then(0))
    followed = cause_at_the_end_of(tmp_path / "followed", rank_3_fails_then(NOISE_BEYOND_THE_KEPT_TAIL))

    assert followed.headline() == HEADLINE
    assert followed == alone


def _ended_run(run_dir: Path, noise: int) -> Path:
    """The run directory such a run leaves: its host logs, result.json with the cause it read when it ended, and
    status.json, Failed, written by the emulator's own writers."""
    cause = cause_at_the_end_of(run_dir, rank_3_fails_then(noise))
    (run_dir / RUN_MARKER_FILE).write_text("")
    request = {"TrainingJobName": run_dir.name, "HyperParameters": {"sagemaker_torch_distributed_enabled": "true"},
               "ResourceConfig": {"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 2}}
    report = StatusReport(run_dir, request, datetime.now(timezone.utc))
    report.transition("Training")
    write_result(run_dir, {"job_name": run_dir.name, "run_dir": str(run_dir), "status": "Failed", "exit_code": 1,
                           "failure_reason": cause.text(), "failure_cause": cause.to_dict()})
    status, secondary, message = terminal_status("Failed", cause.text(), cause.to_dict())
    report.finish(status, secondary, cause.text(), None, message=message)
    return run_dir


def test_status_shows_rank_3s_own_traceback_under_the_cause_whatever_its_host_printed_after_it(tmp_path):
    """What `smtrain status` and the run's `Job` show under the cause is the failing rank's own lines, read back as far
    as they lie: before, they came from each host's last 1000 lines, which hold only the warnings and the other
    ranks' teardown, and named algo-2's rank 8, which only lost its peer, under rank 3's cause."""
    shown = {}
    for noise in (0, NOISE_BEYOND_THE_KEPT_TAIL):
        run_dir = _ended_run(tmp_path / f"rank3-{noise}", noise)
        run = CliRunner().invoke(main, ["status", str(run_dir), "-o", "json"])
        assert run.exit_code == 0, run.output
        shown[noise] = json.loads(run.stdout)
    progress = orchestrator.attach(f"local:{run_dir}").progress()

    followed = shown[NOISE_BEYOND_THE_KEPT_TAIL]
    assert followed["failure_cause"]["headline"] == HEADLINE
    assert (followed["failing_host"], followed["failing_rank"], followed["failing_host_last_lines"]) == (
        "algo-1", 3, RANK_3_TRACEBACK)
    assert (progress.failing_rank, [line.message for line in progress.failing_lines]) == (3, RANK_3_TRACEBACK)
    assert {key: followed[key] for key in ("failure_cause", "failing_host", "failing_rank",
                                           "failing_host_last_lines")} == {
        key: shown[0][key] for key in ("failure_cause", "failing_host", "failing_rank", "failing_host_last_lines")}


def test_a_search_stopped_by_its_bound_says_so_rather_than_naming_a_consequence_alone(tmp_path, monkeypatch):
    """Each host's log is read back at most CAUSE_MOST_BYTES from its end (32 MiB; 256 KiB here, which 20,000
    lines of warnings exceed)."""
    monkeypatch.setattr(log_file_end, "CAUSE_MOST_BYTES", 256 * 1024)
    cause = cause_at_the_end_of(tmp_path / "far", rank_3_fails_then(20_000))

    assert cause.headline() != HEADLINE
    assert cause.detail[0].startswith("searched: the last 256 KiB of algo-1's log hold no error of a rank's own")
    assert "the failure may have started earlier" in cause.detail[0]


WINDS_DOWN = """\
import sys
import traceback

try:
    raise ValueError("shard 7 has 0 samples")
except ValueError:
    traceback.print_exc()
    for index in range({lines}):
        print(f"releasing pinned buffer {{index}}")
    sys.exit(1)
"""


@pytest.mark.slow
def test_status_of_a_run_that_printed_thousands_of_lines_after_its_traceback_names_the_error(make_spec, tmp_path,
                                                                                             monkeypatch):
    monkeypatch.chdir(tmp_path)  # the source dir is shown as src/
    causes = {}
    for lines in (0, NOISE_BEYOND_THE_KEPT_TAIL):
        spec = make_spec("winds_down.py", count=1)
        (tmp_path / "src" / "winds_down.py").write_text(WINDS_DOWN.format(lines=lines))
        run_dir = tmp_path / f"run-{lines}"
        assert run_local(load(spec), Options(run_dir=run_dir)).status == "Failed"
        shown = CliRunner().invoke(main, ["status", str(run_dir), "-o", "json"])
        causes[lines] = json.loads(shown.stdout)["failure_cause"]

    assert causes[NOISE_BEYOND_THE_KEPT_TAIL]["headline"] == ("algo-1 (rank 0) failed: ValueError: shard 7 has 0 "
                                                              "samples at src/winds_down.py:5")
    assert causes[NOISE_BEYOND_THE_KEPT_TAIL] == causes[0]
