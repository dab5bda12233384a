"""The opt-in of published scripts (tests/support/published_scripts.py): a provided folder is used only with the
recorded digests, and a skip says where the files come from and how to provide them."""

from __future__ import annotations

import hashlib
from pathlib import Path

import published_scripts
import pytest
from published_scripts import published

NANOGPT_SOURCE = Path(__file__).resolve().parents[1] / "examples" / "nanogpt" / "SOURCE"
HF_SOURCE = Path(__file__).resolve().parents[1] / "emulator" / "frameworks" / "SOURCE"
TEXT = b"print('written for this test')\n"
DIGEST = {"train.py": hashlib.sha256(TEXT).hexdigest()}


def _skip_reason(name: str, source: Path) -> str:
    with pytest.raises(pytest.skip.Exception) as skipped:
        published(name, DIGEST, source)
    return str(skipped.value)


def test_a_provided_folder_with_the_recorded_files_is_used(tmp_path, monkeypatch):
    (tmp_path / "nanoGPT").mkdir()
    (tmp_path / "nanoGPT" / "train.py").write_bytes(TEXT)
    monkeypatch.setattr(published_scripts, "PROVIDED", str(tmp_path))

    assert published("nanoGPT", DIGEST, NANOGPT_SOURCE) == tmp_path / "nanoGPT"


def test_without_the_files_the_skip_names_the_commit_and_the_checkout(tmp_path, monkeypatch):
    monkeypatch.setattr(published_scripts, "PROVIDED", None)
    unset = _skip_reason("nanoGPT", NANOGPT_SOURCE)
    monkeypatch.setattr(published_scripts, "PROVIDED", str(tmp_path))
    empty = _skip_reason("nanoGPT", NANOGPT_SOURCE)

    commit = "3adf61e154c3fe3fca428ad6bc3818b27a3b8291"
    assert "SMTRAIN_PUBLISHED_SCRIPTS is not set" in unset and f"SMTRAIN_PUBLISHED_SCRIPTS={tmp_path}" in empty
    for reason in (unset, empty):
        assert f"karpathy/nanoGPT at {commit} (tests/examples/nanogpt/SOURCE)" in reason, reason
        assert (f"git clone https://github.com/karpathy/nanoGPT <folder>/nanoGPT && git -C <folder>/nanoGPT "
                f"checkout {commit}") in reason, reason


def test_files_of_several_repositories_are_named_by_their_source(monkeypatch):
    monkeypatch.setattr(published_scripts, "PROVIDED", None)

    reason = _skip_reason("hf-examples", HF_SOURCE)

    assert "train.py" in reason and "tests/emulator/frameworks/SOURCE" in reason and "<folder>/hf-examples" in reason


def test_a_provided_file_that_differs_fails_rather_than_passing_for_the_published_one(tmp_path, monkeypatch):
    (tmp_path / "nanoGPT").mkdir()
    (tmp_path / "nanoGPT" / "train.py").write_bytes(TEXT + b"# changed\n")
    monkeypatch.setattr(published_scripts, "PROVIDED", str(tmp_path))

    with pytest.raises(pytest.fail.Exception, match="train.py is not the published file"):
        published("nanoGPT", DIGEST, NANOGPT_SOURCE)
