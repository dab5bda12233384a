"""A job's notebook summary: a progress bar with step, rate and time left, losses first among the latest
metrics, every shown value escaped; and the live displays a status read replaces in place."""

from __future__ import annotations

from datetime import datetime, timezone

from orchestrator.cloud.notebook import LiveSummary, Summary
from orchestrator.observing.metric_series import ProgressEstimate
from orchestrator.observing.progress import JobProgress


def _summary(**fields) -> Summary:
    estimate = ProgressEstimate(step=40, total=96, epoch=1, epochs=3, steps_per_second=2.0,
                                at=datetime(2026, 11, 24, tzinfo=timezone.utc))
    return Summary(**{"title": "Training job j", "status": "InProgress", "secondary_status": "Training",
                      "progress": JobProgress(estimate), "latest": {"train:samples_per_sec": 1520.3, "train:loss": 0.25},
                      "rows": [("cost so far", "about USD 1.20")], **fields})


def test_summary_shows_progress_cost_and_latest_metrics():
    shown = _summary().to_html()
    assert '<progress value="40" max="96"' in shown
    assert "step 40/96 (42%), epoch 1/3, 2 steps/s, about 28 s to go" in shown
    assert "train:loss = 0.25, train:samples_per_sec = 1520.3" in shown
    assert "about USD 1.20" in shown
    text = _summary().to_text()
    assert text.splitlines()[0] == "Training job j: InProgress / Training"


def test_summary_escapes_what_it_shows():
    shown = _summary(rows=[("failure", "<script>alert(1)</script>")]).to_html()
    assert "<script>" not in shown and "&lt;script&gt;" in shown


def test_live_summary_replaces_every_display_of_the_job(monkeypatch):
    shown, updated = [], []

    class Handle:
        def update(self, bundle, raw):
            updated.append(bundle["text/plain"].splitlines()[0])

    def display(bundle, raw, display_id):
        shown.append(bundle)
        return Handle()

    import IPython.display

    monkeypatch.setattr(IPython.display, "display", display)
    live = LiveSummary()
    live.update(_summary())  # nothing shown yet: nothing to update
    assert not live.shown and updated == []
    live.show(_summary(status=None))
    live.show(_summary(status=None))
    live.update(_summary(status="Completed", secondary_status="Completed"))
    assert updated == ["Training job j: Completed / Completed"] * 2
