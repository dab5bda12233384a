from pathlib import Path

import psutil
import pytest

from orchestrator.planning import kernel_file_systems
from orchestrator.planning.kernel_file_systems import KernelFileSystems


def test_kernel_file_systems_are_those_psutil_lists():
    """The mount table read directly names the same kernel file systems as psutil's reading of it."""
    if not Path("/proc/self/mounts").is_file():
        pytest.skip("no /proc/self/mounts on this machine")
    by_psutil = {}
    for partition in psutil.disk_partitions(all=True):
        if partition.fstype in kernel_file_systems.KERNEL_FILE_SYSTEMS and Path(partition.mountpoint).exists():
            by_psutil[Path(partition.mountpoint).stat().st_dev] = partition.fstype

    assert KernelFileSystems.mounted().devices == by_psutil
    assert KernelFileSystems.mounted().holding("/proc/self/status") == "proc"


def test_kernel_file_systems_mount_points_with_escaped_characters(tmp_path, monkeypatch):
    """The table writes a space, a tab, a newline and a backslash in a mount point as octal escapes."""
    mount_point = tmp_path / "my data\\ \tdisk"
    mount_point.mkdir()
    table = tmp_path / "mounts"
    escaped = str(mount_point).replace("\\", "\\134").replace(" ", "\\040").replace("\t", "\\011")
    table.write_text(f"sysfs /sys sysfs rw 0 0\nproc {escaped} proc rw,nosuid 0 0\n")
    monkeypatch.setattr(kernel_file_systems, "_MOUNTS", table)

    assert KernelFileSystems.mounted().holding(mount_point / ".") == "proc"
