"""The kernel's own file systems (/proc, /sys, /dev, cgroups ...): what is in them is no data to pack or copy.

Their files look like regular files and are not: reading /proc/kmsg waits for the kernel's next message forever,
/proc/kcore is the machine's memory, a file of /sys may block on its device. A source_dir or channel folder that is
one of them, or holds one (`source_dir: /`), would hang `smtrain plan` with no output, and a local channel holding
a link to /proc/kmsg would hang `smtrain local`. Packing and a channel's copy ask here, once per tree, which devices
those file systems are, then compare each folder's (and each file's, for a channel).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

_MOUNTS = Path("/proc/self/mounts")

KERNEL_FILE_SYSTEMS = frozenset({
    "proc", "sysfs", "devtmpfs", "devfs", "devpts", "debugfs", "tracefs", "securityfs", "cgroup", "cgroup2",
    "configfs", "bpf", "pstore", "efivarfs", "fusectl", "mqueue", "binfmt_misc", "hugetlbfs", "rpc_pipefs", "nsfs",
    "selinuxfs",
})
"""By the type the mount table gives them. Not tmpfs: /tmp and /dev/shm hold real files."""


@dataclass(frozen=True)
class KernelFileSystems:
    """The devices of this machine's kernel file systems, as the mount table lists them now."""

    devices: dict[int, str]
    """st_dev -> the file system's type, e.g. "proc"."""

    @classmethod
    def mounted(cls) -> KernelFileSystems:
        """Read from the mount table (/proc/self/mounts on Linux); each mount point is stat()ed, never read."""
        devices = {}
        for mount_point, file_system in _mount_table():
            if file_system in KERNEL_FILE_SYSTEMS:
                with contextlib.suppress(OSError):
                    devices[os.stat(mount_point).st_dev] = file_system
        return cls(devices)

    def holding(self, path: Path | str) -> str | None:
        """The type of the kernel file system `path` lies on ("proc"), or None for any other (or no) file."""
        try:
            return self.devices.get(os.stat(path).st_dev)
        except (OSError, ValueError):
            return None


def _mount_table() -> Iterable[tuple[str, str]]:
    """Each mount's point and file system type. Linux's table is read here, as psutil reads it: importing psutil
    cost `smtrain plan` 10 ms of its 0.4 s. Elsewhere (macOS) psutil asks the system."""
    try:
        table = _MOUNTS.read_bytes()
    except OSError:
        import psutil

        return [(partition.mountpoint, partition.fstype) for partition in psutil.disk_partitions(all=True)]
    return [(os.fsdecode(_unescaped(fields[1])), os.fsdecode(fields[2]))
            for fields in (line.split(b" ") for line in table.splitlines()) if len(fields) > 2]


def _unescaped(field: bytes) -> bytes:
    """A mount point as the table writes it, with space, tab, newline and backslash as octal escapes (`\\040`)."""
    parts = field.split(b"\\")
    return parts[0] + b"".join(bytes([int(part[:3], 8)]) + part[3:] for part in parts[1:])
