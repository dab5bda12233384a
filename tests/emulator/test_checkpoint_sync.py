"""The checkpoint prefix follows SageMaker's sync: what a host deleted is deleted from the prefix, what it added or
changed is uploaded, and a host that may not hold what it received (its restore never finished, its folder is gone)
deletes nothing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from orchestrator.emulator.preparing.checkpoint_sync import (
    RECORD_FILE,
    PrefixSync,
    Received,
    Upload,
    plan_upload,
    restore,
    upload,
)

RECEIVED = Received("/opt/ml/checkpoints", {"step-1/state.pt": (10, 1), "step-2/state.pt": (10, 2)},
                    frozenset({"algo-1", "algo-2"}))
UNTOUCHED = dict(RECEIVED.files)


def test_a_file_one_host_deleted_goes_even_though_another_host_kept_its_copy():
    """Trainer's rotation on algo-1; algo-2's restored copy is unchanged, so it is no upload that brings it back."""
    rotated = {"step-2/state.pt": (10, 2), "step-3/state.pt": (10, 3)}
    assert plan_upload(RECEIVED, {"algo-1": rotated, "algo-2": UNTOUCHED}) == Upload(
        {"step-3/state.pt": "algo-1"}, frozenset({"step-1/state.pt"}))


def test_a_file_changed_on_one_host_and_deleted_on_another_is_kept():
    changed = {**UNTOUCHED, "step-1/state.pt": (11, 5)}
    assert plan_upload(RECEIVED, {"algo-1": {}, "algo-2": changed}) == Upload(
        {"step-1/state.pt": "algo-2"}, frozenset({"step-2/state.pt"}))


def test_a_host_whose_restore_never_finished_deletes_and_overwrites_nothing():
    """Its folder holds part of the prefix, a file cut short perhaps: only a name the prefix lacks is uploaded."""
    received = Received(RECEIVED.local_path, RECEIVED.files, frozenset({"algo-1"}))
    partial = {"step-1/state.pt": (4, 99), "new.txt": (1, 7)}
    assert plan_upload(received, {"algo-1": UNTOUCHED, "algo-2": partial}) == Upload({"new.txt": "algo-2"}, frozenset())


def test_without_a_record_every_file_is_uploaded_and_nothing_deleted():
    """A run directory from before the record, or a run killed before its restore began."""
    assert plan_upload(None, {"algo-1": {"step-3/state.pt": (10, 3)}, "algo-2": {}}) == Upload(
        {"step-3/state.pt": "algo-1"}, frozenset())


def test_a_later_host_wins_a_clash_of_new_files():
    assert plan_upload(RECEIVED, {"algo-1": {**UNTOUCHED, "best.pt": (1, 1)},
                                  "algo-2": {**UNTOUCHED, "best.pt": (2, 2)}}).files == {"best.pt": "algo-2"}


def _sync(tmp_path: Path, hosts: tuple[str, ...] = ("algo-1", "algo-2")) -> PrefixSync:
    return PrefixSync(prefix=tmp_path / "checkpoints-s3", record=tmp_path / RECORD_FILE,
                      local_path="/opt/ml/checkpoints", hosts=hosts,
                      directory=lambda name: tmp_path / name / "checkpoints",
                      follow=lambda name, named: str(tmp_path / name / named.removeprefix("/opt/ml/")))


def _prefix(tmp_path: Path, *names: str) -> None:
    for name in names:
        (tmp_path / "checkpoints-s3" / name).mkdir(parents=True)
        (tmp_path / "checkpoints-s3" / name / "state.pt").write_text(name)


def _tree(folder: Path) -> list[str]:
    return sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*"))


def test_a_rotated_checkpoint_leaves_the_prefix_folder_and_all(tmp_path):
    """No empty `step-1/` is left behind: restored to a host, it would pass for a checkpoint."""
    _prefix(tmp_path, "step-1", "step-2")
    sync = _sync(tmp_path)
    restore(sync)
    saved = sync.directory("algo-1")
    (saved / "step-3").mkdir()
    (saved / "step-3" / "state.pt").write_text("step-3")
    (saved / "step-1" / "state.pt").unlink()
    (saved / "step-1").rmdir()
    upload(sync)
    assert _tree(sync.prefix) == ["step-2", "step-2/state.pt", "step-3", "step-3/state.pt"]


@pytest.mark.parametrize("host", ["missing folder", "restore cut short"])
def test_a_host_that_may_not_hold_what_it_received_deletes_nothing(tmp_path, host):
    _prefix(tmp_path, "step-1", "step-2")
    sync = _sync(tmp_path)
    if host == "missing folder":
        restore(sync)
        (sync.directory("algo-2") / "step-1" / "state.pt").unlink()
        os.rename(sync.directory("algo-2"), tmp_path / "elsewhere")
    else:  # smtrain killed once algo-1 had its copy: algo-2's folder is there, empty
        restore(_sync(tmp_path, ("algo-1",)))
        sync.directory("algo-2").mkdir(parents=True)
    upload(sync)
    assert _tree(sync.prefix) == ["step-1", "step-1/state.pt", "step-2", "step-2/state.pt"]


@pytest.mark.parametrize("record", ["another checkpoint path", "unreadable"])
def test_a_record_that_does_not_speak_for_these_folders_deletes_nothing(tmp_path, record):
    _prefix(tmp_path, "step-1")
    sync = _sync(tmp_path)
    restore(sync)
    (sync.directory("algo-1") / "step-1" / "state.pt").unlink()
    document = json.loads(sync.record.read_text())
    sync.record.write_text(json.dumps({**document, "local_path": "/checkpoints"}) if record.startswith("another")
                           else "{")
    upload(sync)
    assert _tree(sync.prefix) == ["step-1", "step-1/state.pt"]


def test_a_prefix_file_replaced_since_the_restore_is_not_deleted(tmp_path):
    _prefix(tmp_path, "step-1")
    sync = _sync(tmp_path)
    restore(sync)
    for name in sync.hosts:
        (sync.directory(name) / "step-1" / "state.pt").unlink()
    (sync.prefix / "step-1" / "state.pt").write_text("put there by hand since")
    upload(sync)
    assert (sync.prefix / "step-1" / "state.pt").read_text() == "put there by hand since"


def test_only_what_changed_is_copied(tmp_path):
    """An unchanged restored file is not read nor copied again (sizes and times tell, not contents); a changed one
    is. The prefix's step-1 is marked, same size and time: a copy would undo the mark."""
    _prefix(tmp_path, "step-1", "step-2")
    sync = _sync(tmp_path)
    restore(sync)
    uploaded = sync.prefix / "step-1" / "state.pt"
    stamp = uploaded.stat().st_mtime_ns
    uploaded.write_text("STEP-1")
    os.utime(uploaded, ns=(stamp, stamp))
    (sync.directory("algo-2") / "step-2" / "state.pt").write_text("step-2, saved again")
    upload(sync)
    assert uploaded.read_text() == "STEP-1"
    assert (sync.prefix / "step-2" / "state.pt").read_text() == "step-2, saved again"
