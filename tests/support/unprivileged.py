"""smtrain run as an ordinary user (`setpriv` to nobody, from root), and the kernel's refusals of namespaces that
such a user meets on CI machines, each reproduced for real inside namespaces made for the test: the machine's own
limits, sysctls and processes are never changed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]

_LIMITED = """
import ctypes, os, sys
name, argv = sys.argv[1], sys.argv[2:]
libc = ctypes.CDLL("libc.so.6", use_errno=True)
ready_read, ready_write = os.pipe()
go_read, go_write = os.pipe()
child = os.fork()
if child == 0:
    if libc.unshare(0x10000000) != 0:  # CLONE_NEWUSER
        sys.exit(f"unshare: {os.strerror(ctypes.get_errno())}")
    os.write(ready_write, b"1")
    os.read(go_read, 1)
    os.setresgid(0, 0, 0)
    os.setresuid(0, 0, 0)
    with open(f"/proc/sys/user/{name}", "w") as limit:
        limit.write("0")
    os.execvp(argv[0], argv)
os.read(ready_read, 1)
for kind in ("uid_map", "gid_map"):  # ids 0-65535 are themselves inside: nobody stays nobody
    with open(f"/proc/{child}/{kind}", "w") as handle:
        handle.write("0 0 65536")
os.write(go_write, b"1")
sys.exit(os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]))
"""
"""`python -c _LIMITED NAME argv...`: argv as root of a new user namespace whose /proc/sys/user/NAME is 0. The
limits are per user namespace and bind every namespace below: the kernel refuses them there as it does on a
machine whose `user.NAME` is 0, and nowhere else."""

_SECCOMP = """
import ctypes, os, struct, sys
number, argv = int(sys.argv[1]), sys.argv[2:]
program = [(0x20, 0, 0, 4), (0x15, 1, 0, 0xC000003E), (0x06, 0, 0, 0x7FFF0000),  # not x86_64: allowed
           (0x20, 0, 0, 0), (0x15, 0, 1, number), (0x06, 0, 0, 0x00050000 | 1), (0x06, 0, 0, 0x7FFF0000)]
code = ctypes.create_string_buffer(b"".join(struct.pack("HBBI", *step) for step in program))
class Program(ctypes.Structure):
    _fields_ = [("length", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
libc = ctypes.CDLL("libc.so.6", use_errno=True)
if libc.prctl(38, 1, 0, 0, 0) or libc.prctl(22, 2, ctypes.byref(Program(len(program), ctypes.addressof(code))), 0, 0):
    sys.exit(f"seccomp: {os.strerror(ctypes.get_errno())}")  # PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP
os.execvp(argv[0], argv)
"""
"""`python -c _SECCOMP NR argv...`: argv under a seccomp filter that answers EPERM to syscall NR (x86_64), as a
container's seccomp profile does; the filter binds that process and its children only."""

_SYSCALLS = {"x86_64": {"mount": 165, "unshare": 272}}


def with_zero_limit(name: str) -> list[str]:
    """The words that run a command where the kernel's /proc/sys/user/`name` is 0 (max_user_namespaces: unshare
    of a user namespace fails with ENOSPC; max_pid_namespaces: that of a PID namespace)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to make a user namespace with nobody in it")
    return [sys.executable, "-c", _LIMITED, name]


def refusing(syscall: str) -> list[str]:
    """The words that run a command whose `syscall` fails with EPERM (a seccomp filter)."""
    numbers = _SYSCALLS.get(os.uname().machine)
    if numbers is None:
        pytest.skip(f"the seccomp filter knows x86_64's syscall numbers, not {os.uname().machine}'s")
    return [sys.executable, "-c", _SECCOMP, str(numbers[syscall])]


@pytest.fixture
def shared_dir():
    """A directory an unprivileged user may write (pytest's own temporary root is root's alone)."""
    directory = Path(tempfile.mkdtemp(prefix="smtrain-hostfs-"))
    directory.chmod(0o777)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def unprivileged_python(directory: Path, prefix: list[str]) -> str:
    """An interpreter nobody may run that sees this environment's packages: this one, or (where it lives in
    root's home, as pyenv's does) a venv of the system's Python of the same minor version over its site-packages."""
    def runs(python: str) -> bool:
        probe = "import orchestrator, os, sys, torch; assert os.path.exists(sys.executable)"
        return subprocess.run([*prefix, python, "-c", probe], capture_output=True, check=False).returncode == 0
    if runs(sys.executable):
        return sys.executable
    system = Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")
    if not system.exists():
        pytest.skip(f"{sys.executable} is not executable by nobody and there is no {system}")
    venv = directory / "venv"
    subprocess.run([str(system), "-m", "venv", "--without-pip", str(venv)], check=True)
    site_packages = next(Path(sys.prefix).glob("lib/python*/site-packages"))
    (next(venv.glob("lib/python*/site-packages")) / "smtrain_env.pth").write_text(
        f"import site; site.addsitedir({str(site_packages)!r})\n")
    for tool in Path(sys.executable).parent.iterdir():  # mpirun, torchrun: found next to the interpreter
        target = venv / "bin" / tool.name
        if tool.name.startswith("python") or target.exists() or not tool.is_file():
            continue
        text = tool.read_bytes()
        if text.startswith(b"#!") and b"python" in text.split(b"\n", 1)[0]:  # a console script: this venv's python
            target.write_bytes(b"#!" + str(venv / "bin" / "python").encode() + b"\n" + text.split(b"\n", 1)[1])
            target.chmod(0o755)
        else:
            target.symlink_to(tool)
    if not runs(str(venv / "bin" / "python")):
        pytest.skip(f"nobody cannot import this environment's packages from {site_packages}")
    return str(venv / "bin" / "python")


def as_nobody(directory: Path) -> tuple[list[str], str]:
    """The words that become nobody, and the interpreter nobody runs smtrain with."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to become an unprivileged user")
    return NOBODY, unprivileged_python(directory, NOBODY)
