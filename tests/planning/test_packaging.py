"""The source tarball: deterministic bytes, no secrets or caches, .smtrainignore honoured, size limited."""

from __future__ import annotations

import fcntl
import gc
import hashlib
import io
import os
import tarfile
import tempfile

import pytest

from orchestrator.errors import SpecError
from orchestrator.planning.packaging import package


def _tree(root):
    files = {
        "train.py": "print('train')\n",
        "lib/util.py": "X = 1\n",
        ".git/config": "[core]\n",
        ".env": "AWS_SECRET_ACCESS_KEY=oops\n",
        ".aws/credentials": "[default]\n",
        "keys/deploy.pem": "-----BEGIN-----\n",
        "lib/__pycache__/util.cpython-311.pyc": "x",
        "venv/lib/site.py": "x",
        "data/big.bin": "0" * 10,
        "notes.md": "hi\n",
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / "venv" / "pyvenv.cfg").write_text("home = /usr\n")
    (root / ".smtrainignore").write_text("data/\n*.md\n")
    return root


def _members(data: bytes) -> list[str]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        return tar.getnames()


def test_packaging_excludes_secrets_caches_and_ignored_files(tmp_path):
    pkg = package(_tree(tmp_path))
    assert _members(pkg.tarball.read_bytes()) == ["lib/util.py", "train.py"]
    assert pkg.files == ("lib/util.py", "train.py")
    # Secrets are named for the plan (a directory once); version control, caches and ignored files are not.
    assert pkg.withheld == (".aws/", ".env", "keys/deploy.pem")


def test_packaging_is_deterministic_and_content_addressed(tmp_path):
    first = package(_tree(tmp_path))
    os.utime(tmp_path / "train.py", (1, 1))
    second = package(tmp_path)
    assert first.tarball.read_bytes() == second.tarball.read_bytes() and first.sha256 == second.sha256
    (tmp_path / "train.py").write_text("print('changed')\n")
    assert package(tmp_path).sha256 != first.sha256
    assert first.s3_uri("s3://b/code/") == f"s3://b/code/{first.sha256}/sourcedir.tar.gz"


def test_packaging_keeps_executable_bits_and_nothing_else(tmp_path):
    (tmp_path / "run.sh").write_text("#!/bin/sh\n")
    (tmp_path / "run.sh").chmod(0o775)
    (tmp_path / "train.py").write_text("x\n")
    packed = package(tmp_path)  # held: its temporary file goes with it
    with tarfile.open(packed.tarball, mode="r:gz") as tar:
        modes = {member.name: (member.mode, member.mtime, member.uid, member.uname) for member in tar}
    assert modes == {"run.sh": (0o755, 0, 0, ""), "train.py": (0o644, 0, 0, "")}


def test_packaging_refuses_symlinks_out_of_the_tree_and_follows_those_inside(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "settings.txt").write_text("secret")
    source = tmp_path / "src"
    source.mkdir()
    (source / "train.py").write_text("x\n")
    (source / "alias.py").symlink_to(source / "train.py")
    assert package(source).files == ("alias.py", "train.py")
    (source / "settings.txt").symlink_to(outside / "settings.txt")
    with pytest.raises(SpecError, match="settings.txt is a symlink to .*, outside source_dir"):
        package(source)


def test_packaging_refuses_an_oversized_tree_naming_its_size_and_what_is_big(tmp_path, monkeypatch):
    """The refusal says how big the tree is and what makes it big (largest folders and files, in MB), and where
    the lines that leave them out go; the file of the abandoned tarball is gone."""
    monkeypatch.setenv("SMTRAIN_CACHE_DIR", str(tmp_path / "cache"))
    source = tmp_path / "src"
    for name, size in (("data/shards/a.bin", 300_000), ("data/b.bin", 150_000), ("ckpt/model.pt", 200_000)):
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_bytes(os.urandom(size))
    (source / "train.py").write_text("x\n")

    with pytest.raises(SpecError) as refused:
        package(source, max_bytes=100_000)

    assert refused.value.message == (
        f"source_dir {source} packs to more than the 100.0 kB limit (--max-source-mb): its 4 files hold 650.0 kB "
        "before compression; largest in it: data/ 450.0 kB, ckpt/ 200.0 kB, train.py 2 bytes; largest files: "
        "data/shards/a.bin 300.0 kB, ckpt/model.pt 200.0 kB, data/b.bin 150.0 kB")
    assert f"lines in {source / '.smtrainignore'} (gitignore syntax, e.g. data/, ckpt/)" in refused.value.fix
    assert list((tmp_path / "cache" / "sources").iterdir()) == []


def test_the_tarball_lies_locked_in_smtrains_cache_and_goes_with_its_package(tmp_path, monkeypatch):
    """Nothing in $TMPDIR, where a SIGKILL used to leave it for good; nothing left in the cache either."""
    monkeypatch.setenv("SMTRAIN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("x\n")
    packed = package(tmp_path / "src")
    tarball = packed.tarball
    assert tarball.parent == tmp_path / "cache" / "sources" and tarball.stat().st_size == packed.size_bytes
    assert hashlib.sha256(tarball.read_bytes()).hexdigest() == packed.sha256
    with tarball.open("rb") as handle, pytest.raises(BlockingIOError):  # what tells a live one from a leftover
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)

    del packed
    gc.collect()

    assert list((tmp_path / "cache" / "sources").iterdir()) == list((tmp_path / "tmp").iterdir()) == []
