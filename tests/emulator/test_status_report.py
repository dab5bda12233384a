"""status.json as a reader polling it sees it: the end of a run is one write."""
from __future__ import annotations

from datetime import datetime, timezone

from orchestrator.emulator.supervising.status import StatusReport, read_status


def test_a_reader_never_sees_the_terminal_status_without_its_reason_and_end(tmp_path, monkeypatch):
    """Job.wait returns at the first terminal status it reads: that document must already say why and when."""
    seen = []
    original = StatusReport._write

    def write_and_read(report):
        original(report)
        seen.append(read_status(tmp_path))

    monkeypatch.setattr(StatusReport, "_write", write_and_read)
    report = StatusReport(tmp_path, {"TrainingJobName": "timed-1"}, datetime.now(timezone.utc))
    report.preparing()
    report.transition("Training")
    report.finish("Stopped", "MaxRuntimeExceeded", "MaxRuntimeExceeded: the job ran longer than max_run_seconds=2",
                  None)

    ended = [described for described in seen if described["TrainingJobStatus"] != "InProgress"]
    assert ended, "the end was written"
    for described in ended:
        assert described["FailureReason"].startswith("MaxRuntimeExceeded")
        assert described["TrainingEndTime"] == described["SecondaryStatusTransitions"][-1]["EndTime"]
    assert [item["Status"] for item in seen[-1]["SecondaryStatusTransitions"]] == [
        "Starting", "Downloading", "Training", "MaxRuntimeExceeded"]
