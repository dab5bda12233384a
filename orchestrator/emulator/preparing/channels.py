"""How a channel's data reaches each emulated host: all of it, its own share (ShardedByS3Key), or a FIFO per
epoch (Pipe mode), as SageMaker delivers S3 data to the instances (sagemaker-contract.md §12).

ShardedByS3Key gives each host that gets the channel a disjoint part of its objects, together all of them.
SageMaker does not document which object goes where; here the objects, sorted by key (the path under the
channel; a linked file or folder's under the link's name, as `aws s3 sync` uploads them), are dealt round-robin to
the hosts in host order (the deviations list says so). Every mode places or feeds the same objects (`objects`).

Pipe mode gives the script no directory but FIFOs `/opt/ml/input/data/<channel>_<epoch>`: `<channel>_0` exists
when the script starts, and the next epoch's exists once the script has opened one (SageMaker promises no moment;
its own readers wait for the file, docs/local.md). Each carries every object of the host's share, in key order,
concatenated (decompressed when the channel says Gzip).
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import os
import shutil
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from orchestrator.contract import RUN_MARKER_FILE
from orchestrator.planning.kernel_file_systems import KernelFileSystems
from orchestrator.wording import counted, special_file_kind

_CHUNK = 1 << 20
_GZIP_MAGIC = b"\x1f\x8b"
MAX_DEPTH = 512
"""No S3 key (at most 1,024 bytes) names a file more folders deep than this; walking a folder nested past about
1,000 would also exhaust Python's recursion (os.walk and rglob recurse before Python 3.12)."""


class NotChannelData(Exception):
    """An entry of a local channel that no S3 object could hold, so SageMaker's copy of the channel never holds it:
    a FIFO, a socket, a device, or a file of the kernel's own file systems. Copying one was a run that never ended
    (a link to /proc/kmsg waits for the kernel's next message) or that filled the disk (a link to /dev/zero)."""

    def __init__(self, entry: Path, what: str) -> None:
        super().__init__(f"{entry} is {what}: SageMaker copies a channel from S3 objects, and no object holds that")
        self.entry = entry


def require_data(path: Path, kernel: KernelFileSystems) -> None:
    """Raises NotChannelData unless `path` (its links followed) is a regular file or a folder off the kernel's file
    systems. Only stat()ed: opening a FIFO waits for a writer, and a device may act on being opened."""
    kind = special_file_kind(os.stat(path).st_mode)
    link = f"a link to {os.path.realpath(path)}, " if path.is_symlink() else ""
    if kind:
        raise NotChannelData(path, f"{link}{kind}")
    file_system = kernel.holding(path)
    if file_system:
        raise NotChannelData(path, f"{link}on the kernel's {file_system} file system (reading some of its files "
                                   "never ends)")


@dataclass(frozen=True)
class ChannelObject:
    """One S3 object of a local channel: its key under the channel's prefix, and the file holding its bytes."""

    key: str
    file: Path


def objects(source: Path) -> list[ChannelObject]:
    """The channel's objects, as `aws s3 sync` of the folder would upload them (it follows links by default): every
    file below `source` (or `source` itself), keyed by its path under `source`, a linked file or a linked folder's
    files under the link's own name; sorted by key, S3's listing order. The one listing of the channel that
    ShardedByS3Key deals out, a Pipe-mode FIFO carries and `--link-inputs` links, so every mode gives the job the
    same files. Each entry passes `require_data`, as a full copy's does, so none leaves out a FIFO without a word
    nor reads a link to /dev/zero or /proc/kmsg. A link that leads nowhere is left out (an upload skips it); a link
    back to a folder the walk is in is not followed again (the full copy's rule; an upload would repeat it until
    the path is too long); a run directory inside the data is neither walked nor checked (its FIFOs are a run's
    own).

    Raises:
        NotChannelData: an entry no S3 object could hold, before any of it is read.
    """
    kernel = KernelFileSystems.mounted()
    require_data(source, kernel)
    if not source.is_dir():
        return [ChannelObject(source.name, source)]
    found = []
    pending = [(source, "", frozenset({os.path.realpath(source)}))]
    while pending:  # no recursion: a walk through links nests as deep as the links lead
        folder, prefix, walked = pending.pop()
        if (folder / RUN_MARKER_FILE).is_file():  # never a run directory inside the data
            continue
        with os.scandir(folder) as scan:
            entries = [Path(entry.path) for entry in scan]
        for entry in entries:
            if not entry.exists():
                continue
            require_data(entry, kernel)
            if not entry.is_dir():
                found.append(ChannelObject(prefix + entry.name, entry))
            elif (real := os.path.realpath(entry)) not in walked:
                pending.append((entry, f"{prefix}{entry.name}/", walked | {real}))
    return sorted(found, key=lambda item: item.key)


def folder_too_deep(source: Path) -> Path | None:
    """A folder under `source` nested more than MAX_DEPTH deep, or None; walked without recursion, links not
    followed (the copy follows those that leave `source` once, and never back into a folder it is copying)."""
    pending = [(source, 0)] if source.is_dir() else []
    while pending:
        folder, depth = pending.pop()
        if depth > MAX_DEPTH:
            return folder
        with contextlib.suppress(OSError), os.scandir(folder) as scan:
            pending.extend((Path(entry.path), depth + 1) for entry in scan if entry.is_dir(follow_symlinks=False))
    return None


def first_not_gzip(items: list[Path]) -> Path | None:
    """The first of `items` that is not gzip data (its first bytes are not gzip's magic number), or None: a
    channel that says CompressionType Gzip over plain files would otherwise feed the job empty epochs."""
    for item in items:
        with open(item, "rb") as handle:
            if handle.read(2) != _GZIP_MAGIC:
                return item
    return None


def share(items: list[ChannelObject], hosts: list[str], host: str) -> list[ChannelObject]:
    """The part of `items` ShardedByS3Key gives `host`, one of `hosts` (those that get the channel)."""
    return items[hosts.index(host)::len(hosts)]


def empty_share_notice(name: str, count: int, hosts: list[str], pipe: bool) -> str | None:
    """The hosts `share` gives no file of a channel of `count` files (those past the first `count`), said in a
    notice; None when every host gets one. SageMaker's S3DataSource reference says the same happens there."""
    idle = hosts[count:]
    if not idle:
        return None
    what = "an empty FIFO each epoch" if pipe else "an empty directory"
    return (f"channel {name} is ShardedByS3Key: {', '.join(idle)} {'gets' if len(idle) == 1 else 'get'} no file "
            f"({what}): the channel has {counted(count, 'file')} for {len(hosts)} instances; "
            "SageMaker gives those instances no data either (give the channel at least as many files as instances)")


def link_inputs_notice(namespaced: bool) -> str:
    """What --link-inputs means for the user's files: read-only where hosts have namespaces, else only relinked."""
    if namespaced:
        return ("--link-inputs: the local channels are your files, linked and mounted read-only in each host: the "
                "job reads them, and a write, delete or rename there fails (Read-only file system)")
    return ("--link-inputs: the local channels' files are your files, linked: what the job deletes, renames or "
            "creates stays in the run, but a write into an existing file changes yours (no mount namespace here to "
            "make them read-only)")


def unlinked_notice(name: str, files: list[Path]) -> str:
    """What --link-inputs copied instead of linking, named (the first few) so the user knows no link leads to them."""
    shown = ", ".join(str(file) for file in files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
    return (f"--link-inputs: {counted(len(files), 'file')} of channel {name} could not be "
            f"hard-linked into the run directory (another file system, or the kernel refused the link), so each "
            f"host got a copy, out of the job's reach (a symbolic link would lead its writes to yours): {shown}")


def place_share(items: list[ChannelObject], target: Path, link: bool) -> list[Path]:
    """Writes `items` under `target`, each at its key, as SageMaker's download of those objects leaves them;
    returns the files `link` could not link (copied instead)."""
    target.mkdir(parents=True, exist_ok=True)
    kernel = KernelFileSystems.mounted()
    copied = []
    for item in items:
        destination = target / item.key
        destination.parent.mkdir(parents=True, exist_ok=True)
        if not link:
            copy_file(item.file, destination, kernel)
        elif not link_file(item.file, destination, kernel):
            copied.append(item.file)
    return copied


def link_file(source: Path, target: Path, kernel: KernelFileSystems) -> bool:
    """`--link-inputs`' link: a hard link, which the host's read-only mount of its input/data covers. Where none
    can be made (another file system, a file the kernel will not let this user link, its link count full) the
    file is copied and False returned: a symbolic link would lead the job's writes out of the mount, into the
    user's file."""
    require_data(source, kernel)
    try:
        os.link(source, target, follow_symlinks=True)
    except OSError as error:
        if error.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK):
            raise
        shutil.copy2(source, target)
        return False
    return True


def copy_file(source: Path, target: Path, kernel: KernelFileSystems) -> None:
    """One file of a channel copied, once `require_data` has said it is one."""
    require_data(source, kernel)
    shutil.copy2(source, target)


def copy_tree(source: Path, target: Path, skip: Callable[[str, list[str]], set[str]]) -> None:
    """A host's copy of a channel folder, as an upload to S3 and SageMaker's download would leave it: never a
    link to outside the channel (the job's write to its copy would change the user's file there), so a link that
    leads outside is copied as what it points at, and a link that stays inside becomes the same relative link in
    the copy (it reads the copy's file). A link that leads nowhere is left out, as an upload skips it, and a link
    back to a folder being copied is not followed again, so the copy holds the files `objects` lists. `skip`
    names, as shutil.copytree's `ignore` does, the folders not to copy (a run directory inside the channel).

    Raises:
        NotChannelData: an entry no S3 object could hold (`require_data`), before any of it is read.
    """
    root = Path(os.path.realpath(source))
    kernel = KernelFileSystems.mounted()
    require_data(root, kernel)
    _copy_folder(root, root, target, skip, frozenset({root}), kernel)


def _copy_folder(root: Path, folder: Path, target: Path, skip: Callable[[str, list[str]], set[str]],
                 copying: frozenset[Path], kernel: KernelFileSystems) -> None:
    target.mkdir(exist_ok=True)
    with os.scandir(folder) as scan:
        entries = sorted(scan, key=lambda entry: entry.name)
    skipped = skip(str(folder), [entry.name for entry in entries])
    for entry in entries:
        if entry.name in skipped:
            continue
        source, destination = Path(entry.path), target / entry.name
        if not entry.is_symlink():
            require_data(source, kernel)
            if entry.is_dir():
                _copy_folder(root, source, destination, skip, copying | {source}, kernel)
            else:
                shutil.copy2(source, destination)
            continue
        resolved = Path(os.path.realpath(source))
        if not resolved.exists():
            continue
        if resolved == root or resolved.is_relative_to(root):
            inside = target.joinpath(*[".."] * len(folder.relative_to(root).parts)) if folder != root else target
            destination.symlink_to(os.path.relpath(inside / resolved.relative_to(root), target))
            continue
        require_data(source, kernel)
        if resolved.is_dir():
            if resolved not in copying:  # a link back to a folder being copied would copy forever
                _copy_folder(resolved, resolved, destination, skip, copying | {resolved}, kernel)
        else:
            shutil.copy2(resolved, destination)


@dataclass(frozen=True)
class PipeChannel:
    """One host's Pipe-mode channel: where its FIFOs go and what each epoch carries."""

    data_dir: Path
    name: str
    items: tuple[Path, ...]
    gzip: bool

    def fifo(self, epoch: int) -> Path:
        return self.data_dir / f"{self.name}_{epoch}"


class PipeFeeders:
    """Feeds every Pipe-mode channel of a run, one thread per host and channel, for as long as the run lasts."""

    def __init__(self, channels: list[PipeChannel]) -> None:
        self._channels = channels
        self._stopped = threading.Event()
        self._threads: list[threading.Thread] = []

    def __enter__(self) -> PipeFeeders:
        for channel in self._channels:
            _make_fifo(channel.fifo(0))  # there before the script starts, as on SageMaker
            thread = threading.Thread(target=self._feed, args=(channel,), name=f"pipe-{channel.name}", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def __exit__(self, *_: object) -> None:
        self._stopped.set()
        for channel, thread in zip(self._channels, self._threads):
            _release(channel, thread)

    def _feed(self, channel: PipeChannel) -> None:
        epoch = 0
        while not self._stopped.is_set():
            path = channel.fifo(epoch)
            _make_fifo(path)
            # The next epoch's FIFO is made before this one can open: a script that has this epoch open (and so
            # one that closes it early and opens the next at once) always finds the next one there.
            _make_fifo(channel.fifo(epoch + 1))
            try:
                with open(path, "wb") as pipe:  # blocks until the script opens the epoch for reading
                    if self._stopped.is_set():
                        return
                    for item in channel.items:
                        _copy(item, pipe, channel.gzip)
            except BrokenPipeError:  # the script stopped reading this epoch early: the next one follows
                pass
            except OSError:
                return
            with contextlib.suppress(OSError):
                path.unlink()  # a read epoch is gone, as SageMaker's is
            epoch += 1


def _make_fifo(path: Path) -> None:
    if not path.exists():
        os.mkfifo(path, 0o600)


def _copy(item: Path, pipe: object, compressed: bool) -> None:
    opener = gzip.open if compressed else open
    with opener(item, "rb") as source:  # type: ignore[operator]
        shutil.copyfileobj(source, pipe, _CHUNK)  # type: ignore[arg-type]


def _release(channel: PipeChannel, thread: threading.Thread) -> None:
    """Unblocks a feeder waiting for a reader that will not come (the run is over): open its FIFO once."""
    while thread.is_alive():
        for path in _fifos(channel):
            with contextlib.suppress(OSError):
                descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
                os.close(descriptor)
        thread.join(0.05)
    for path in _fifos(channel):  # a restarted job starts again at epoch 0
        with contextlib.suppress(OSError):
            path.unlink()


def _fifos(channel: PipeChannel) -> Iterator[Path]:
    return channel.data_dir.glob(f"{channel.name}_*")
