"""`smtrain images`: the image table smtrain plans from, as text and JSON (click's CliRunner)."""

from __future__ import annotations

import datetime
import json

import pytest
from click.testing import CliRunner

from orchestrator.cli.main import main
from orchestrator.specs import images


class _Nov22(datetime.date):
    """The day the table was checked: 2.9's patches have ended, 2.10's have not."""

    @classmethod
    def today(cls) -> datetime.date:
        return cls(2026, 11, 22)


@pytest.fixture(autouse=True)
def _today(monkeypatch):
    monkeypatch.setattr(datetime, "date", _Nov22)


def _rows() -> dict[str, dict]:
    result = CliRunner().invoke(main, ["images", "--output", "json"])
    assert result.exit_code == 0, result.output
    return {row["framework_version"]: row for row in json.loads(result.stdout)}


def test_images_json_lists_current_past_and_unverified_images():
    rows = _rows()

    assert rows["2.10.0"] == {
        "framework_version": "2.10.0", "python": ["py313"], "repository": "pytorch-training",
        "tags": {"cpu": "2.10.0-cpu-py313-ubuntu22.04-sagemaker", "gpu": "2.10.0-gpu-py313-cu130-ubuntu22.04-sagemaker"},
        "ga": "2026-01-21", "end_of_patch": "2027-01-21", "patched": True, "smddp": False, "toolkit": True,
        "unverified": False,
    }
    assert (rows["2.9.0"]["end_of_patch"], rows["2.9.0"]["patched"]) == ("2026-10-15", False)
    # the Amazon Linux 2023 images, checked against the release data (scripts/refresh_images.py)
    assert rows["2.13.0"]["repository"] == "pytorch" and rows["2.13.0"]["unverified"] is False
    assert rows["2.13.0"]["tags"] == {"gpu": "2.13.0-cu133-amzn2023-sagemaker", "cpu": "2.13.0-cpu-amzn2023-sagemaker"}
    assert (rows["2.11.0"]["ga"], rows["2.11.0"]["end_of_patch"]) == ("2026-04-30", "2027-04-30")
    assert rows["2.13.0"]["toolkit"] is True and rows["2.13.0"]["smddp"] is False
    assert rows["2.3.0"]["tags"] == {"cpu": "2.3.0-cpu-py311", "gpu": "2.3.0-gpu-py311"}
    assert [version for version, row in rows.items() if row["smddp"]][-1] == "2.5.1"  # no SMDDP after 2.5
    assert next(iter(rows)) == "1.13.1" and list(rows)[-1] == "2.13.0"


def test_images_text_marks_past_end_of_patch_smddp_and_unverified():
    result = CliRunner().invoke(main, ["images"])

    assert result.exit_code == 0, result.output
    lines = {line.split()[0]: line for line in result.stdout.splitlines() if line.strip()[:1].isdigit()}
    assert "2026-10-15 ✗" in lines["2.9.0"]
    assert "2027-01-21" in lines["2.10.0"] and "✗" not in lines["2.10.0"]
    assert "2.10.0-gpu-py313-cu130-ubuntu22.04-sagemaker" in lines["2.10.0"]
    assert "before 2026 ✗" in lines["2.5.1"] and " yes " in lines["2.5.1"]
    assert " no " in lines["2.6.0"]
    assert "unverified" not in lines["2.13.0"] and "unverified" not in lines["2.10.0"]  # 2.11-2.13: release data
    assert f"checked {images.checked()}" in result.stdout


def test_images_text_has_no_empty_column_and_its_notes_are_whole_sentences(monkeypatch):
    """The `status` column was empty on every row (it says only `unverified`), and the caption wrapped at the
    table's width mid-sentence, padded with spaces: now the column shows only where a row is unverified, and the
    notes come one sentence a line, each short enough for an 80-column terminal."""
    from rich.console import Console

    from orchestrator.cli import render

    shown = []
    monkeypatch.setattr(Console, "print", lambda self, *args, **kwargs: shown.append(args[0]))
    rows = render.image_rows()

    render.print_images(rows)
    table, *notes = shown
    assert [column.header for column in table.columns][-1] == "SMDDP"
    assert notes[:2] == ["✗: past its end of patch, so AWS releases no more security fixes for it.",
                         f"Release data: aws/deep-learning-containers, checked {images.checked()}."]
    assert all(len(note) <= 80 and note.endswith(".") for note in notes)

    shown.clear()
    render.print_images([{**rows[-1], "unverified": True}])
    table, *notes = shown
    assert [column.header for column in table.columns][-1] == "status"
    assert notes[-1].startswith("unverified: ") and "allow_unverified: true" in notes[-1]
