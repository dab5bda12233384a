"""The source tarball: deterministic, content-addressed, and free of secrets, caches and run directories.

The SDK's own packer tars the whole source_dir (`.git`, `.env` and all) and uploads it under the job name, so a
re-submit uploads again. smtrain packs the tree itself: sorted members with fixed metadata (the same content
gives the same bytes), without what `NEVER_SHIPPED` lists, `smtrain local`'s run directories and whatever
`.smtrainignore` (gitignore syntax) adds, and under an S3 key derived from the SHA-256 of the bytes, so an
unchanged tree is uploaded once. The tarball goes to a file, not memory (a source may be gigabytes, and the upload
streams it from there), in smtrain's cache (`sources/`), locked while its process uses it: the next packing removes
what a SIGKILL or a power cut left there, no lock held. Packing reports its progress (source_progress.py), and a
tree over the limit is refused naming its largest folders and files, which `.smtrainignore` can leave out.

`.smtrainignore` can only take more out: it cannot re-include what is never shipped (`!.env`, `!/pkg/` over a
`pkg/.aws/`). A symlink is packed as the file it points at, so one that leads outside source_dir, to something
never shipped, or nowhere (a loop, a missing target) is refused rather than skipped: the job would miss a file,
or ship a secret under a harmless name. Listing such a link in `.smtrainignore` leaves it out. A file holding a
PEM private key is left out whatever its name (`deploy_key`, `config/signing.txt`), and named as the secrets are.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import functools
import hashlib
import os
import re
import tempfile
import weakref
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from orchestrator.cache_dir import writable_cache_root
from orchestrator.contract import RUN_MARKER_FILE
from orchestrator.errors import EnvironmentProblem, SpecError
from orchestrator.planning.kernel_file_systems import KernelFileSystems
from orchestrator.planning.source_progress import Advance, stage

if TYPE_CHECKING:
    import tarfile

IGNORE_FILE = ".smtrainignore"
DEFAULT_MAX_BYTES = 100 * 1024 * 1024
MAX_DEPTH = 100
"""Folders nested deeper in source_dir are refused: no source tree nests so deep, and walking one that does would
exhaust Python's recursion limit (os.walk recurses before Python 3.12) with a traceback."""
# Credentials and keys: never shipped, and named in the plan (a package directory called credentials/ or a
# .env.example is left out too: safer than shipping a secret, and the user is told).
_SECRET_NAMES = (
    ".env", ".env.*", ".envrc", ".aws/", ".ssh/", ".gnupg/", ".docker/", ".kube/", "kubeconfig*", "credentials",
    "credentials.json", ".git-credentials", ".netrc", ".npmrc", ".pypirc", ".pgpass",
    "*.pem", "*.key", "*.p12", "*.pfx", "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*",
    # other tools' credentials (s3cmd, boto 2, s3fs, gcloud, the Azure CLI, Hugging Face's login, the GitHub CLI,
    # Kaggle, Vault, Databricks, Windows' netrc) and shell histories
    ".s3cfg", ".boto", ".passwd-s3fs", "passwd-s3fs", "**/.config/gcloud/", ".azure/",
    "**/huggingface/token", "**/huggingface/stored_tokens", ".huggingface/", "**/.config/gh/", "kaggle.json",
    ".vault-token", ".databrickscfg", "_netrc",
    "application_default_credentials.json", ".*_history", ".histfile",
)
_BACKUP_SUFFIXES = ("~", ".bak", ".orig", ".old", ".save")
"""What editors and hand copies append (`.env~`, `.netrc.bak`, `key.pem.orig`): a copy of a secret is one too."""
_PRIVATE_KEY = re.compile(rb"-----BEGIN [A-Z ]*PRIVATE KEY(?: BLOCK)?-----\r?\n(?:[\w-]+: [^\n]*\n)*\s*"
                          rb"[A-Za-z0-9+/=]{16}")
"""A PEM private key (RSA, EC, DSA, OpenSSH, PKCS#8 plain or encrypted, PGP): its BEGIN line, any headers
(`Proc-Type: ...`), base64: what `*.pem` and `id_rsa*` hold, found in a file of any name. Code that only names the
BEGIN line (a parser, a check like this one) is no key."""
_SCAN_BYTES = 1 << 20
_READ_BYTES = 1 << 20
"""How much of a file tarfile reads at once while packing: one progress report per block (its default, 16 KiB,
would mean 300,000 reports for a 5 GB file)."""
_LARGEST_SHOWN = 3
_SOURCES = "sources"
"""The folder of smtrain's cache that holds the tarballs being packed or sent, one per process."""
_TARBALL_PREFIX = "smtrain-source-"
_SCAN_OVERLAP = 4096
"""How much of one block is searched again with the next: a key's start cut across two blocks."""
SECRETS = (*_SECRET_NAMES, *(name + suffix for name in _SECRET_NAMES if not name.endswith("/")
                             for suffix in _BACKUP_SUFFIXES))
# Never shipped, whatever .smtrainignore says, matched without regard to case (`ID_RSA`, `KEY.PEM`, `.ENV`).
NEVER_SHIPPED = (
    # version control
    ".git", ".hg/", ".svn/",  # .git: a folder, or the file naming one (a worktree or submodule: gitdir: PATH)
    *SECRETS,
    # caches, virtual environments, smtrain's own file
    "__pycache__/", "*.pyc", "*.pyo", ".venv/", "venv/", ".tox/", ".nox/", ".mypy_cache/", ".pytest_cache/",
    ".ruff_cache/", ".ipynb_checkpoints/", "*.egg-info/", ".DS_Store", "node_modules/", IGNORE_FILE,
)


@dataclass(frozen=True)
class SourcePackage:
    """A packed source_dir, ready to upload."""

    directory: Path
    files: tuple[str, ...]
    sha256: str
    size_bytes: int
    tarball: Path = field(repr=False, compare=False)
    """A file in smtrain's cache, locked while this package lives and removed once it is garbage-collected or Python
    exits (after an error or a Ctrl-C too)."""
    withheld: tuple[str, ...] = ()
    """What matched `SECRETS` and was left out (a directory once, with its trailing slash)."""

    @property
    def checksum_sha256(self) -> str:
        """The SHA-256 as S3 states an object's checksum (base64 of the digest)."""
        return base64.b64encode(bytes.fromhex(self.sha256)).decode("ascii")

    def s3_uri(self, code_location: str) -> str:
        return f"{code_location.rstrip('/')}/{self.sha256}/sourcedir.tar.gz"


def package(source_dir: str | Path, max_bytes: int = DEFAULT_MAX_BYTES,
            withhold: tuple[str | Path, ...] = ()) -> SourcePackage:
    """Packs `source_dir` into a deterministic tar.gz in smtrain's cache, streaming: memory holds one read
    buffer, whatever the size of the tree. Reports its progress to the `packing` stage (source_progress.py).

    Args:
        withhold: files left out and named with the secrets (the spec file, when it holds secret values).

    Raises:
        SpecError: the packed tree is larger than `max_bytes` (a dataset or checkpoint left in source_dir is the
            usual cause); a file cannot be read; a symlink leads outside the tree, to something never shipped or
            nowhere; a hard link whose other names are not all packed; `.smtrainignore` is not valid.
    """
    import tarfile  # here: validate reaches this module (for its limits) and packs nothing

    directory = Path(source_dir).resolve()
    selection = _Selection(directory, withhold)
    candidates = selection.files()
    sizes = {relative: _size(directory, relative) for relative in candidates}
    sink = _GzipSink(max_bytes)
    packed: list[str] = []
    try:
        with stage("packing", sum(sizes.values()), len(candidates)) as advance, tarfile.open(
                fileobj=sink, mode="w", format=tarfile.PAX_FORMAT) as tar:  # type: ignore[call-overload]
            tar.copybufsize = _READ_BYTES
            # Each file is searched for a private key just before it is packed, not the whole tree first: a tree
            # over the limit is read only as far as the limit (a forgotten 5 GB dataset was read whole).
            for relative in candidates:
                if _holds_private_key(directory, relative):
                    selection.withheld.append(relative)
                    advance(sizes[relative], 1)
                    continue
                _add_file(tar, directory, relative, advance)
                packed.append(relative)
            selection.check_hard_links(packed)
        sink.finish()
    except _TooLarge:
        sink.discard()
        raise _too_large(directory, sizes, max_bytes) from None
    except BaseException:
        sink.discard()
        raise
    source = SourcePackage(directory=directory, files=tuple(packed), sha256=sink.sha256.hexdigest(),
                           size_bytes=sink.size, tarball=sink.path, withheld=tuple(sorted(selection.withheld)))
    weakref.finalize(source, sink.discard)
    return source


def _size(directory: Path, relative: str) -> int:
    try:
        return (directory / relative).stat().st_size
    except OSError as exc:
        raise _unreadable(directory, relative, exc) from None


def _too_large(directory: Path, sizes: dict[str, int], max_bytes: int) -> SpecError:
    """The refusal of a tree over the limit, with what makes it big: its largest top-level folders and files,
    sizes before compression, and the `.smtrainignore` lines that would leave the largest out."""
    from rich.filesize import decimal

    tops: Counter[str] = Counter()
    for relative, size in sizes.items():
        top, nested, _ = relative.partition("/")
        tops[top + "/" if nested else top] += size
    largest_tops = [name for name, _ in tops.most_common(_LARGEST_SHOWN)]
    largest_files = sorted(sizes, key=lambda relative: -sizes[relative])[:_LARGEST_SHOWN]
    return SpecError(
        f"source_dir {directory} packs to more than the {decimal(max_bytes)} limit (--max-source-mb): its "
        f"{len(sizes)} files hold {decimal(sum(sizes.values()))} before compression; largest in it: "
        + ", ".join(f"{name} {decimal(tops[name])}" for name in largest_tops)
        + "; largest files: " + ", ".join(f"{name} {decimal(sizes[name])}" for name in largest_files),
        fix=f"leave out what the job does not need with lines in {directory / IGNORE_FILE} (gitignore syntax, e.g. "
            f"{', '.join(name for name in largest_tops if name.endswith('/')) or largest_files[0]}), pass data "
            "through inputs: (a channel), or raise the limit with --max-source-mb",
    )


def _add_file(tar: tarfile.TarFile, directory: Path, relative: str, advance: Advance) -> None:
    path = directory / relative
    try:
        with path.open("rb") as handle:
            info = tar.tarinfo(relative)
            info.size = os.fstat(handle.fileno()).st_size
            info.mode = 0o755 if os.access(path, os.X_OK) else 0o644
            info.mtime = 0
            tar.addfile(info, _Counted(handle, advance))
    except OSError as exc:
        raise _unreadable(directory, relative, exc) from None
    advance(0, 1)


class _Counted:
    """A file as tarfile reads it, each block read reported as progress."""

    def __init__(self, handle: Any, advance: Advance) -> None:
        self._handle = handle
        self._advance = advance

    def read(self, size: int = -1) -> bytes:
        block = self._handle.read(size)
        self._advance(len(block), 0)
        return block


class _TooLarge(Exception):
    pass


def gzip_compressor() -> Any:
    """The compressor of the code tarball (the bytes `gzip.compress(..., mtime=0)` gives): what is uploaded, and
    so what a function job measures its pickles with before they are written."""
    return zlib.compressobj(9, zlib.DEFLATED, 31)


class _GzipSink:
    """A write-only file that gzips what tarfile writes as it comes (the bytes `gzip.compress(..., mtime=0)`
    gives: zlib's gzip header) into a locked file of smtrain's cache, hashing the output, and stops at `max_bytes`
    of it."""

    def __init__(self, max_bytes: int) -> None:
        self._compressor = gzip_compressor()
        self._out = _locked_tarball()
        self.path = Path(self._out.name)
        self.sha256 = hashlib.sha256()
        self.size = 0
        self._max_bytes = max_bytes
        self._written = 0

    def write(self, data: bytes) -> int:
        self._written += len(data)
        self._keep(self._compressor.compress(data))
        return len(data)

    def tell(self) -> int:
        return self._written

    def finish(self) -> None:
        """Writes the rest out; the file stays open, its lock held, while the package is read and uploaded."""
        self._keep(self._compressor.flush())
        self._out.flush()

    def discard(self) -> None:
        """Removes the file, then lets its lock go: the order another packing's clean-up removes one in."""
        self.path.unlink(missing_ok=True)
        self._out.close()

    def _keep(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.size > self._max_bytes:
            raise _TooLarge
        self._out.write(chunk)
        self.sha256.update(chunk)


def _locked_tarball() -> IO[bytes]:
    """A new file in `<smtrain cache>/sources/`, locked (flock) until it is removed. A SIGKILL or a power cut
    leaves the file but not the lock (the kernel drops it), so the next packing knows the file is nobody's; a pid
    in its name would not say so (pids are reused)."""
    folder = _tarball_folder()
    _remove_leftovers(folder)
    while True:
        out = tempfile.NamedTemporaryFile(dir=folder, prefix=_TARBALL_PREFIX, suffix=".tar.gz", delete=False)
        fcntl.flock(out, fcntl.LOCK_EX)
        if os.fstat(out.fileno()).st_nlink:  # else another packing removed it as a leftover before it was locked
            return out
        out.close()


def _tarball_folder() -> Path:
    """`sources/` in smtrain's cache; the system's temporary folder where the cache cannot be written (a CI user's
    read-only HOME): planning needs no cache, and the tarball is removed as it is in the cache."""
    try:
        folder = writable_cache_root() / _SOURCES
    except EnvironmentProblem:
        return Path(tempfile.gettempdir())
    folder.mkdir(exist_ok=True)
    return folder


def _remove_leftovers(folder: Path) -> None:
    """Removes the tarballs no process holds the lock of: those of a smtrain that was killed (SIGKILL, a power
    cut). One listing of the folder; a file another smtrain is packing or uploading stays. Silent: the file was
    smtrain's own, and nothing was lost that anyone could use."""
    for path in folder.glob(f"{_TARBALL_PREFIX}*.tar.gz"):
        with contextlib.suppress(OSError), path.open("rb") as leftover:  # gone meanwhile, or in use
            fcntl.flock(leftover, fcntl.LOCK_EX | fcntl.LOCK_NB)
            path.unlink()


def _holds_private_key(directory: Path, relative: str) -> bool:
    """Whether the file holds a PEM private key's BEGIN line, read a block at a time (memory stays bounded)."""
    overlap = b""
    try:
        with (directory / relative).open("rb") as handle:
            while block := handle.read(_SCAN_BYTES):
                if _PRIVATE_KEY.search(overlap + block):
                    return True
                overlap = block[-_SCAN_OVERLAP:]
    except OSError as exc:
        raise _unreadable(directory, relative, exc) from None
    return False


def _unreadable(directory: Path, relative: str, exc: OSError) -> SpecError:
    return SpecError(f"source_dir {directory}: cannot read {relative}: {exc.strerror or exc}",
                     fix=f"make it readable, or list it in {IGNORE_FILE}")


def left_out_of_package(directory: Path) -> Callable[[Path], bool]:
    """Whether packing `directory` leaves a path inside it out (never shipped, `.smtrainignore`, a virtualenv or a
    run directory), told from names alone: no file is read and no link followed. `smtrain init` looks only at what
    the job would ship, and this is how packing judges it.

    Raises:
        SpecError: `.smtrainignore` is not valid.
    """
    never = _lowercase_spec(NEVER_SHIPPED)
    ignored = _ignore_file_spec(directory)

    def left_out(path: Path) -> bool:
        relative = path.relative_to(directory).as_posix()
        if path.is_dir() and not path.is_symlink():
            if _is_unshipped_folder(path):
                return True
            relative += "/"
        return bool(never.match_file(relative.lower()) or ignored.match_file(relative))

    return left_out


def _is_unshipped_folder(path: Path) -> bool:
    """A virtualenv, whatever its name; a run directory of `smtrain local` (logs, outputs, per-host files)."""
    return (path / "pyvenv.cfg").exists() or _is_run_directory(path)


def _is_run_directory(path: Path) -> bool:
    """A run directory of `smtrain local`: its marker, or algo-1's SageMaker config (runs written before the
    marker existed)."""
    return ((path / RUN_MARKER_FILE).is_file()
            or (path / "algo-1" / "input" / "config" / "resourceconfig.json").is_file())


class _Selection:
    """Which files of a tree are packed: the never-shipped list wins over `.smtrainignore`."""

    def __init__(self, directory: Path, withhold: tuple[str | Path, ...] = ()) -> None:
        self._directory = directory
        self._withhold = {Path(path).resolve() for path in withhold}
        self._never = _lowercase_spec(NEVER_SHIPPED)
        # Asked only of what the never-shipped list leaves out, so pathspec's plain matcher will do: its re2 set
        # took 7 ms to build, a fifth of what `smtrain plan` spends packing a small tree.
        self._secrets = _lowercase_spec(SECRETS, backend="simple")
        self._ignored = _ignore_file_spec(directory)
        self._kernel = KernelFileSystems.mounted()
        self.withheld: list[str] = []
        kind = self._kernel.holding(directory)
        if kind:
            raise SpecError(f"source_dir {directory} is on the kernel's {kind} file system, which holds no files to "
                            "ship (reading some never ends)", fix="point source_dir at the folder of your code")

    def files(self) -> list[str]:
        """The files to pack, sorted, before any is read: `package` leaves out those holding a private key."""
        included = []
        for root, dirs, names in os.walk(self._directory, onerror=self._walk_error):
            root_path = Path(root)
            dirs[:] = [name for name in sorted(dirs) if self._keeps_directory(root_path / name)]
            parts = root_path.relative_to(self._directory).parts
            if dirs and len(parts) >= MAX_DEPTH:
                raise SpecError(f"source_dir {self._directory}: {parts[0]}/ nests folders more than {MAX_DEPTH} deep",
                                fix=f"move it out of source_dir, or list {parts[0]}/ in {IGNORE_FILE}")
            for name in sorted(names):
                path = root_path / name
                relative = self._relative(path)
                if self._left_out(relative):
                    continue
                if path in self._withhold:
                    self.withheld.append(relative)
                    continue
                if path.is_symlink():
                    self._check_link(path, relative)
                if path.is_file():  # not a socket, FIFO or device
                    included.append(relative)
        return sorted(included)

    def check_hard_links(self, included: list[str]) -> None:
        """A file with more names than the package holds is refused: its other name may be `.env` or a
        credentials file outside source_dir, shipped here under a harmless name."""
        names: dict[tuple[int, int], list[str]] = {}
        links: dict[tuple[int, int], int] = {}
        for relative in included:
            path = self._directory / relative
            if path.is_symlink():
                continue
            try:
                status = path.stat()
            except OSError as exc:
                raise _unreadable(self._directory, relative, exc) from None
            if status.st_nlink > 1:
                names.setdefault((status.st_dev, status.st_ino), []).append(relative)
                links[(status.st_dev, status.st_ino)] = status.st_nlink
        for inode, packed in names.items():
            if len(packed) < links[inode]:
                raise SpecError(f"source_dir {self._directory}: {packed[0]} is a hard link with {links[inode]} "
                                f"names, {len(packed)} of them packed: another name (outside source_dir, or one "
                                "never shipped such as .env) may hold a secret", fix=f"replace it with a copy "
                                f"(cp {packed[0]} tmp && mv tmp {packed[0]}), or list it in {IGNORE_FILE}")

    def _keeps_directory(self, path: Path) -> bool:
        relative = self._relative(path) + "/"
        if self._left_out(relative):
            return False
        if path.is_symlink():  # checked, never descended: what it points at inside the tree is packed there
            self._check_link(path, relative.rstrip("/"))
            return False
        kind = self._kernel.holding(path)
        if kind:  # `source_dir: /` holds /proc, whose kmsg is read forever
            raise SpecError(f"source_dir {self._directory}: {relative} is the kernel's {kind} file system, which "
                            "holds no files to ship (reading some never ends)",
                            fix=f"point source_dir at the folder of your code, or list {relative} in {IGNORE_FILE}")
        return not _is_unshipped_folder(path)

    def _check_link(self, path: Path, relative: str) -> None:
        try:
            target = path.resolve(strict=True)
        except (OSError, RuntimeError):  # RuntimeError: a symlink loop, before Python 3.13
            raise SpecError(f"source_dir {self._directory}: {relative} is a symlink that leads nowhere (a loop or "
                            "a missing target)", fix=f"remove it, or list it in {IGNORE_FILE}") from None
        if not target.is_relative_to(self._directory):
            raise SpecError(f"source_dir {self._directory}: {relative} is a symlink to {target}, outside "
                            "source_dir", fix=f"copy what the job needs into source_dir, or list {relative} in "
                            f"{IGNORE_FILE}")
        inner = self._relative(target) + ("/" if target.is_dir() else "")
        if self._never_shipped(inner) or any(_is_run_directory(parent) for parent in target.parents
                                             if parent.is_relative_to(self._directory)):
            raise SpecError(f"source_dir {self._directory}: {relative} is a symlink to {inner.rstrip('/')}, "
                            "which is never shipped (credentials, keys, version control, caches or a run "
                            "directory)", fix=f"remove the link, or list it in {IGNORE_FILE}")

    def _never_shipped(self, relative: str) -> bool:
        return self._never.match_file(relative.lower())

    def _left_out(self, relative: str) -> bool:
        """Whether `relative` is not packed; a secret left out is remembered for the plan."""
        if self._never_shipped(relative):
            if self._secrets.match_file(relative.lower()):
                self.withheld.append(relative)
            return True
        return bool(self._ignored.match_file(relative))

    def _relative(self, path: Path) -> str:
        return path.relative_to(self._directory).as_posix()

    def _walk_error(self, error: OSError) -> None:
        relative = self._relative(Path(error.filename)) if error.filename else "."
        raise _unreadable(self._directory, relative, error)


@functools.cache
def _lowercase_spec(patterns: tuple[str, ...], backend: str | None = None) -> Any:
    """A constant list of patterns, lowercased, as a gitignore spec (matched against lowercased paths), compiled
    once per process: compiling NEVER_SHIPPED or SECRETS costs about 8 ms of CPU, and a notebook, a tuning or a
    test process packs many times."""
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines((pattern.lower() for pattern in patterns), backend=backend)


def _ignore_file_spec(directory: Path) -> Any:
    """`.smtrainignore` as a gitignore spec; a line pathspec cannot read is named with its number."""
    import pathspec

    ignore_file = directory / IGNORE_FILE
    if not ignore_file.is_file():
        return pathspec.GitIgnoreSpec.from_lines([])
    try:
        lines = ignore_file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{ignore_file}: cannot read as UTF-8 text: {getattr(exc, 'strerror', None) or exc}",
                        fix="save it as UTF-8 text with one gitignore pattern per line") from None
    for number, line in enumerate(lines, start=1):
        try:
            pathspec.GitIgnoreSpec.from_lines([line])
        except ValueError as exc:
            raise SpecError(f"{ignore_file}:{number}: not a gitignore pattern: {line!r} ({exc})",
                            fix="fix or remove the line (a trailing \\ escapes nothing)") from None
    return pathspec.GitIgnoreSpec.from_lines(lines)
