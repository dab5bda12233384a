"""The source tarball: deterministic, content-addressed, and free of secrets and caches.

The SDK's own packer tars the whole source_dir (`.git`, `.env` and all) and uploads it under the job name, so a
re-submit uploads again. smtrain packs the tree itself: sorted members with fixed metadata (the same content
gives the same bytes), the exclusions below plus `.smtrainignore` (gitignore syntax), and an S3 key derived from
the SHA-256 of the bytes, so an unchanged tree is uploaded once.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.errors import SpecError

IGNORE_FILE = ".smtrainignore"
DEFAULT_MAX_BYTES = 100 * 1024 * 1024
# Never shipped, whatever .smtrainignore says: VCS data, credentials and keys, caches, virtual environments.
ALWAYS_EXCLUDED = (
    ".git/", ".hg/", ".svn/", "__pycache__/", "*.pyc", "*.pyo", ".env", ".env.*", ".envrc", ".aws/", ".ssh/",
    "*.pem", "*.key", "*.p12", "*.pfx", "id_rsa*", "id_ed25519*", "id_ecdsa*", ".netrc", ".pypirc",
    ".venv/", "venv/", ".tox/", ".nox/", ".mypy_cache/", ".pytest_cache/", ".ruff_cache/",
    ".ipynb_checkpoints/", "*.egg-info/", ".DS_Store", "node_modules/", IGNORE_FILE,
)


@dataclass(frozen=True)
class SourcePackage:
    """A packed source_dir, ready to upload."""

    directory: Path
    files: tuple[str, ...]
    sha256: str
    data: bytes = field(repr=False)

    @property
    def size_bytes(self) -> int:
        return len(self.data)

    def s3_uri(self, code_location: str) -> str:
        return f"{code_location.rstrip('/')}/{self.sha256}/sourcedir.tar.gz"


def package(source_dir: str | Path, max_bytes: int = DEFAULT_MAX_BYTES) -> SourcePackage:
    """Packs `source_dir` into a deterministic tar.gz.

    Raises:
        SpecError: the packed tree is larger than `max_bytes` (a dataset or checkpoint left in source_dir is the
            usual cause).
    """
    directory = Path(source_dir).resolve()
    files = tuple(_included_files(directory))
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for relative in files:
            path = directory / relative
            info = tarfile.TarInfo(relative)
            info.size = path.stat().st_size
            info.mode = 0o755 if os.access(path, os.X_OK) else 0o644
            info.mtime = 0
            with path.open("rb") as handle:
                tar.addfile(info, handle)
    data = gzip.compress(raw.getvalue(), compresslevel=9, mtime=0)
    if len(data) > max_bytes:
        raise SpecError(
            f"source_dir {directory} packs to {len(data) / 1e6:.1f} MB, over the {max_bytes / 1e6:.0f} MB limit",
            fix=f"move data out of source_dir (use inputs:), list large files in {IGNORE_FILE}, "
            "or raise the limit with --max-source-mb",
        )
    return SourcePackage(directory=directory, files=files, sha256=hashlib.sha256(data).hexdigest(), data=data)


def _included_files(directory: Path) -> list[str]:
    import pathspec

    patterns = list(ALWAYS_EXCLUDED)
    ignore_file = directory / IGNORE_FILE
    if ignore_file.is_file():
        patterns += ignore_file.read_text(encoding="utf-8").splitlines()
    spec = pathspec.GitIgnoreSpec.from_lines(patterns)
    included = []
    for root, dirs, names in os.walk(directory):
        root_path = Path(root)
        # A directory holding pyvenv.cfg is a virtualenv, whatever its name.
        dirs[:] = sorted(d for d in dirs if not (root_path / d / "pyvenv.cfg").exists()
                         and not spec.match_file(f"{(root_path / d).relative_to(directory).as_posix()}/"))
        for name in sorted(names):
            path = root_path / name
            relative = path.relative_to(directory).as_posix()
            # A symlink is followed only when it stays inside the tree: one to ~/.aws/credentials is not shipped.
            inside = not path.is_symlink() or path.resolve().is_relative_to(directory)
            if path.is_file() and inside and not spec.match_file(relative):
                included.append(relative)
    return sorted(included)
