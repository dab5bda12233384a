"""What a packing smtrain that was killed leaves: the next packing removes its tarball, never another live one's.

Before, the tarball went to $TMPDIR/smtrain-source-*.tar.gz: a SIGKILL (or a power cut) mid-packing or mid-upload
left it there for good, hundreds of MB a time. Now it lies in smtrain's cache, locked while its process uses it."""

from __future__ import annotations

import fcntl
import gc
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from orchestrator.planning.packaging import package

pytestmark = pytest.mark.hardening

REPO = Path(__file__).resolve().parents[2]

# Packs argv[1] and stops half-way, its progress listener asleep: a real packing, caught in the middle.
_HALF_WAY = """
import sys, time
from orchestrator.planning.packaging import package
from orchestrator.planning.source_progress import reported_to

class HalfWay:
    def begin(self, stage, total_bytes, total_files):
        self.total, self.done = total_bytes, 0
    def advance(self, done_bytes, done_files):
        self.done += done_bytes
        if self.done * 2 >= self.total:
            print("half-way", flush=True)
            time.sleep(600)
    def end(self):
        pass

with reported_to(HalfWay()):
    package(sys.argv[1], max_bytes=1 << 40)
"""


@pytest.fixture
def cache(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("SMTRAIN_CACHE_DIR", str(cache))
    return cache


def _large_source(root: Path) -> Path:
    root.mkdir()
    (root / "train.py").write_text("print('train')\n")
    (root / "weights.bin").write_bytes(os.urandom(8 << 20))  # random: gzip keeps it 8 MB
    return root


def _packing_half_way(source: Path, cache: Path, tmp_path: Path) -> tuple[subprocess.Popen[str], Path]:
    """Another smtrain, half-way through packing `source`, and its tarball (already several MB)."""
    (tmp_path / "tmp").mkdir(exist_ok=True)  # TMPDIR: where the tarball went before
    env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmp_path / "tmp")}
    child = subprocess.Popen([sys.executable, "-c", _HALF_WAY, str(source)], env=env, stdout=subprocess.PIPE,
                             text=True)
    try:
        assert child.stdout is not None and child.stdout.readline() == "half-way\n"
        tarballs = list((cache / "sources").glob("*"))
        assert len(tarballs) == 1 and tarballs[0].stat().st_size > 1 << 20, tarballs
    except BaseException:
        child.kill()
        child.wait()
        raise
    return child, tarballs[0]


def test_the_next_packing_removes_the_tarball_of_a_smtrain_killed_mid_packing(tmp_path, cache):
    child, left = _packing_half_way(_large_source(tmp_path / "large"), cache, tmp_path)
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert left.exists()  # no finaliser ran: the file stays until the next packing

    (tmp_path / "small").mkdir()
    (tmp_path / "small" / "train.py").write_text("x\n")
    packed = package(tmp_path / "small")

    assert sorted((cache / "sources").iterdir()) == [packed.tarball]
    assert list((tmp_path / "tmp").iterdir()) == []


def test_a_packing_leaves_the_tarball_another_live_smtrain_is_writing(tmp_path, cache):
    """Two packings at once both work: the one that starts second sees the first's file locked and keeps it."""
    child, held = _packing_half_way(_large_source(tmp_path / "large"), cache, tmp_path)
    try:
        size = held.stat().st_size
        packed = package(_large_source(tmp_path / "second"))

        assert sorted((cache / "sources").iterdir()) == sorted([held, packed.tarball])
        assert held.stat().st_size == size and child.poll() is None
        with held.open("rb") as handle, pytest.raises(BlockingIOError):
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        child.kill()
        child.wait()


def test_a_cache_that_cannot_be_written_packs_in_the_temporary_folder(tmp_path, monkeypatch):
    """A CI user's read-only or absent HOME: planning needs no cache, so packing still works, in $TMPDIR, and leaves
    nothing there once the package is dropped."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("SMTRAIN_CACHE_DIR", str(blocker / "cache"))  # under a file: it cannot be created
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    source = tmp_path / "src"
    source.mkdir()
    (source / "train.py").write_text("print('hi')\n")
    packed = package(source)
    assert packed.tarball.parent == temporary and packed.size_bytes > 0
    del packed
    gc.collect()
    assert list(temporary.iterdir()) == []
