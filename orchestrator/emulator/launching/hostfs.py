"""Each emulated host's /opt/ml at the real path: a private mount namespace per host, as a container has.

Run as `python -I -S hostfs.py enter <host root> -- <program> [args]`: standard library only, never imports
`orchestrator` (the MPI hooks start it for each rank's host). It enters a new mount namespace (as an ordinary
user inside a new user namespace that maps the user to itself, so the program runs with its own uid and no
capabilities; as root a mount namespace alone), makes every mount private (nothing propagates to the machine),
places the host's folder at /opt/ml and the host's own folder of the run at /tmp, then runs the program (in its
working directory by its /opt/ml path, where it lies in the host's folder): every process it starts (torchrun's
workers, Open MPI's daemons and ranks) sees the same /opt/ml, and a literal `open("/opt/ml/model/model.pth", "w")`
lands in the run directory. Where the kernel gives a PID namespace too, the
program runs under a first process of its own (`contain`), so nothing it starts outlives the host (or smtrain);
else it is exec'd in place. `contain -- <program>` gives pip and its build hooks the PID namespace alone, tried
in a child first: where the kernel refuses it, even halfway, the program runs as it is, in a process left untouched.

Where /opt/ml does not exist on the machine it is never created there: /opt is covered by an empty tmpfs (inside
the namespace only) into which every entry of the real /opt is bound back, beside the new /opt/ml. /root is the
host's home folder of the run (HOME is /root, as in the training images), with only what the host needs of the
machine's own /root bound back into it; the shared build cache and a checkpoint path outside /opt/ml are bound at
their container paths. Where /opt itself is missing, or the kernel refuses namespaces (another OS, a locked-down
container, a seccomp profile), `enter` fails and `smtrain local` falls back to SAGEMAKER_BASE_DIR alone (`probe`).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import sys

OPT = "/opt"
OPT_ML = "/opt/ml"
HOME = "/root"
"""HOME in the training images, which run as root."""
CONTAINER_HOME_VARIABLE = "SMTRAIN_CONTAINER_HOME"
"""The host's home folder of the run, bound at /root in the namespace: what the job writes under ~ (~/.netrc,
~/.cache) lands in the run, and nothing of the user's home (~/.aws/credentials) is seen there."""
MACHINE_PATHS_VARIABLE = "SMTRAIN_MACHINE_PATHS"
"""Paths of this machine the host's processes need besides those its environment names (the job's interpreter,
smtrain's cache): each that lies under the machine's /root is bound back at its own path over the container's home.
PATH, PYTHONPATH, LD_LIBRARY_PATH, LD_PRELOAD and smtrain's own variables are read for more."""
CONTAINER_BINDS_VARIABLE = "SMTRAIN_CONTAINER_BINDS"
"""JSON [[a folder of this machine, a container path], ...]: folders kept outside the host's /opt/ml (the build
cache runs share, a checkpoint path outside /opt/ml), each bound at the container path the job uses."""
HOSTS_FILE = "/etc/hosts"
HOSTS_FILE_VARIABLE = "SMTRAIN_HOSTS_FILE"
"""A file of the run naming every emulated host at 127.0.0.1, bound over /etc/hosts in the namespace, as the
container's /etc/hosts names its cluster: a script that meets at SM_HOSTS[0] (MASTER_ADDR=algo-1) resolves it."""
TMP = "/tmp"
HOST_TMP_VARIABLE = "SMTRAIN_HOST_TMP"
"""The host's own /tmp, a folder of the run bound at /tmp in the namespace, as a container has its own: what a job
writes there lands in the run and is gone when the run ends. Every entry of the machine's /tmp is bound back into
it (a run directory or a virtual environment under /tmp stays where it is)."""
READ_ONLY_DATA_VARIABLE = "SMTRAIN_READ_ONLY_DATA"
"""Set to 1 in a host's environment (--link-inputs): its input/data, the user's own files linked, is mounted
read-only in the namespace (at the host's folder and at /opt/ml), so the job reads them and changes nothing."""
_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000
_PR_SET_PDEATHSIG = 1
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 2, 4, 8
_MS_RDONLY = 1
_MS_REMOUNT = 32
_MS_BIND = 4096
_MS_REC = 16384
_MS_PRIVATE = 1 << 18


def _load_libc() -> ctypes.CDLL:
    """The C library by its soname; find_library only where that fails (it runs `ldconfig -p` each time, and every
    host's namespace, its MPI daemons and pip's container load it)."""
    try:
        return ctypes.CDLL("libc.so.6", use_errno=True)
    except OSError:
        from ctypes.util import find_library  # noqa: PLC0415 (only for a C library of another name: another OS)

        return ctypes.CDLL(find_library("c"), use_errno=True)


_libc = _load_libc()


class Refused(Exception):
    """The kernel (or this system) does not give this process a mount namespace of its own."""


def _check(result: int, what: str) -> None:
    if result != 0:
        error = ctypes.get_errno()
        raise Refused(f"{what}: {os.strerror(error)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    _check(_libc.mount(source and source.encode(), target.encode(), fstype and fstype.encode(), flags,
                       data and data.encode()), f"mount {source or fstype} on {target}")


def _new_namespace() -> bool:
    """A mount namespace of our own, and as an ordinary user a user namespace in which we keep our uid/gid; a PID
    namespace for our children where the kernel gives one. Returns whether it did."""
    uid, gid = os.geteuid(), os.getegid()
    base = _CLONE_NEWNS if uid == 0 else _CLONE_NEWUSER | _CLONE_NEWNS
    with_pids = _libc.unshare(base | _CLONE_NEWPID) == 0
    if not with_pids:
        _check(_libc.unshare(base), "unshare(CLONE_NEWNS)" if uid == 0 else "unshare(CLONE_NEWUSER | CLONE_NEWNS)")
    if uid != 0:
        try:
            with open("/proc/self/setgroups", "w") as handle:
                handle.write("deny")
            with open("/proc/self/uid_map", "w") as handle:
                handle.write(f"{uid} {uid} 1")
            with open("/proc/self/gid_map", "w") as handle:
                handle.write(f"{gid} {gid} 1")
        except OSError as error:
            raise Refused(f"mapping uid {uid} into a user namespace: {error.strerror}") from None
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
    return with_pids


class _Folders:
    """Which folders of the namespace are the run's own (the host's /tmp and home, a tmpfs of the namespace: a mount
    point made there writes nothing to this machine) and which are the machine's, bound back into them."""

    def __init__(self) -> None:
        self.own: list[str] = []
        self.machine: list[str] = []

    def owns(self, path: str) -> bool:
        """Whether the nearest of these folders that holds `path` is the run's own."""
        holders = [(len(folder), True) for folder in self.own if _within(path, folder)]
        holders += [(len(folder), False) for folder in self.machine if _within(path, folder)]
        return bool(holders) and max(holders)[1]


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _cover(directory: str, folders: _Folders) -> None:
    """`directory` becomes a tmpfs of the namespace holding every entry of the real one, bound back."""
    real = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        entries = os.listdir(real)
        _mount("smtrain", directory, "tmpfs", 0, f"mode={os.fstat(real).st_mode & 0o7777:o}")
        folders.own.append(directory)
        for name in entries:
            hidden = f"/proc/self/fd/{real}/{name}"
            visible = os.path.join(directory, name)
            if os.path.islink(hidden):
                os.symlink(os.readlink(hidden), visible)
                continue
            if os.path.isdir(hidden):
                os.mkdir(visible)
            else:
                open(visible, "w").close()  # noqa: SIM115 (a mount point for the file)
            _mount(hidden, visible, None, _MS_BIND | _MS_REC)
            folders.machine.append(visible)
    finally:
        os.close(real)


def _cover_tmp(host_tmp: str, needed: tuple[str, ...], folders: _Folders) -> None:
    """/tmp becomes `host_tmp`, into which every entry of the machine's /tmp is bound back (an entry that cannot
    be is left out, unless a path the host needs lies in it).

    Every mount point is made before the first entry is bound, and those of files are hard links of one empty
    file: a new inode per entry is what costs (hundreds of entries, on every host of every run), a link is a name."""
    real = os.open(TMP, os.O_RDONLY | os.O_DIRECTORY)
    try:
        entries = os.listdir(real)
        _mount(host_tmp, TMP, None, _MS_BIND | _MS_REC)
        folders.own.append(TMP)
        file_mount_point = None
        binds = []  # (the machine's entry, its mount point, whether this call made the mount point)
        for name in entries:
            hidden, visible = f"/proc/self/fd/{real}/{name}", os.path.join(TMP, name)
            try:  # an entry the run made there (a checkpoint path under /tmp) is covered: the machine's wins
                if os.path.islink(hidden):
                    if not os.path.lexists(visible):
                        os.symlink(os.readlink(hidden), visible)
                    continue
                made = not os.path.lexists(visible)
                if made and os.path.isdir(hidden):
                    os.mkdir(visible)
                elif made:
                    file_mount_point = _file_mount_point(visible, file_mount_point)
                binds.append((hidden, visible, made))
            except OSError:
                if _lies_in(visible, needed):
                    raise
        for hidden, visible, made in binds:
            try:
                _mount(hidden, visible, None, _MS_BIND | _MS_REC)
                folders.machine.append(visible)
            except Refused:
                if _lies_in(visible, needed):
                    raise
                if made:  # left out: no empty stand-in under the machine's entry's name
                    with contextlib.suppress(OSError):
                        (os.rmdir if os.path.isdir(visible) else os.unlink)(visible)
    finally:
        os.close(real)


def _file_mount_point(path: str, made_before: str | None) -> str:
    """An empty file at `path` to bind a file onto: a link of the one made before where there is one. Returns the
    file to link the next ones to."""
    if made_before:
        try:
            os.link(made_before, path)
            return made_before
        except OSError:  # too many links to it (or none allowed here): a file of its own
            pass
    open(path, "w").close()  # noqa: SIM115
    return path


def _lies_in(entry: str, needed: tuple[str, ...]) -> bool:
    """Whether a path the host needs (its folder, the working directory, the interpreter) lies in `entry`."""
    return any(_within(path, entry) for path in needed)


def _machine_paths(host_root: str, cwd: str) -> list[str]:
    """What the host's processes need of the machine's /root, outermost first: the run, the working directory,
    smtrain's interpreter and hooks, and what the environment names (its search paths, smtrain's variables)."""
    named = [os.path.dirname(host_root), cwd, sys.prefix, sys.base_prefix, os.path.dirname(os.path.abspath(__file__)),
             os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))]
    for name, value in os.environ.items():
        if name in ("PATH", "PYTHONPATH", "LD_LIBRARY_PATH") or (name.startswith("SMTRAIN_") and name not in (
                CONTAINER_BINDS_VARIABLE, CONTAINER_HOME_VARIABLE)):
            named += value.split(os.pathsep)
        elif name == "LD_PRELOAD":
            named += value.replace(":", " ").split()
    kept: list[str] = []
    for path in sorted({os.path.realpath(path) for path in named if os.path.isabs(path)}, key=len):
        if _within(path, HOME) and path != HOME and os.path.lexists(path) and not any(
                _within(path, outer) for outer in kept):
            kept.append(path)
    return kept


def _opened(paths: list[str]) -> list[tuple[int, str]]:
    """Each path with a descriptor that still reaches it once its folder is covered (those this user cannot reach
    are nothing its processes can need)."""
    result = []
    for path in paths:
        try:
            result.append((os.open(path, os.O_PATH), path))
        except OSError:
            continue
    return result


def _make_mount_point(path: str, directory: bool, folders: _Folders) -> None:
    """A directory (or an empty file) at `path` to mount onto, made in a folder of the run or a tmpfs of the
    namespace: a folder of the machine on the way is covered by a tmpfs first, so nothing is written to it.

    Raises:
        Refused: the nearest existing folder is the machine's /, which cannot be covered.
    """
    if os.path.lexists(path):
        return
    ancestor = os.path.dirname(path)
    while not os.path.lexists(ancestor):
        ancestor = os.path.dirname(ancestor)
    real = os.path.realpath(ancestor)
    if not folders.owns(real):
        if real == "/":
            raise Refused(f"{path} cannot be made without writing to this machine's /")
        _cover(real, folders)
    if directory:
        os.makedirs(path, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "w").close()  # noqa: SIM115 (a mount point for the file)


def _bind_all(opened: list[tuple[int, str]], folders: _Folders) -> None:
    """Each opened folder (or file) bound at its path, recorded as the machine's."""
    for descriptor, path in opened:
        try:
            source = f"/proc/self/fd/{descriptor}"
            _make_mount_point(path, os.path.isdir(source), folders)
            _mount(source, path, None, _MS_BIND | _MS_REC)
            folders.machine.append(path)
        finally:
            os.close(descriptor)


def _cover_home(home_dir: str, kept: list[tuple[int, str]], folders: _Folders) -> None:
    """/root becomes the host's home folder of the run, and each path the host needs of the machine's /root (the
    interpreter under ~/.pyenv, smtrain's cache) is bound back at its own path, a mount point made in the run."""
    _mount(home_dir, HOME, None, _MS_BIND | _MS_REC)
    folders.own.append(HOME)
    _bind_all(kept, folders)


def placeable(container_path: str) -> bool:
    """Whether a host's namespace can show a folder at `container_path` without writing to this machine: under
    its own /root or /tmp, or below an existing folder other than / (covered by a tmpfs of the namespace)."""
    if _within(container_path, HOME) or _within(container_path, TMP) or os.path.isdir(container_path):
        return True
    ancestor = os.path.dirname(container_path)
    while not os.path.lexists(ancestor):
        ancestor = os.path.dirname(ancestor)
    return os.path.realpath(ancestor) != "/"


def enter(host_root: str) -> bool:
    """Makes `host_root` this process's /opt/ml, in a namespace of its own. Returns whether the processes this
    one starts get a PID namespace of their own (`contain`).

    Raises:
        Refused: no namespace here, /opt is missing, or the result is not the host's folder.
    """
    host_root = os.path.realpath(host_root)
    if host_root == OPT_ML or host_root.startswith(OPT_ML + "/"):
        raise Refused(f"the run directory {host_root} is inside the machine's own {OPT_ML}")
    if not os.path.isdir(OPT):
        raise Refused(f"{OPT} does not exist on this machine")
    cwd = os.getcwd()
    home_dir = os.environ.get(CONTAINER_HOME_VARIABLE)
    binds = json.loads(os.environ.get(CONTAINER_BINDS_VARIABLE) or "[]")
    with_pids = _new_namespace()
    # opened in the namespace (a mount's source must be in it), before anything covers them
    kept = _opened(_machine_paths(host_root, os.path.realpath(cwd))) if home_dir and os.path.isdir(HOME) else []
    bound = _opened([source for source, _ in binds])
    if len(bound) != len(binds):
        raise Refused(f"a folder to bind into the container is missing: {binds}")
    folders = _Folders()
    hosts = os.environ.get(HOSTS_FILE_VARIABLE)
    if hosts and os.path.isfile(HOSTS_FILE):
        _mount(hosts, HOSTS_FILE, None, _MS_BIND)
    data = os.path.join(host_root, "input", "data")
    if os.environ.get(READ_ONLY_DATA_VARIABLE) == "1" and os.path.isdir(data):  # before /opt/ml: it carries it
        _mount(data, data, None, _MS_BIND | _MS_REC)
        _mount(None, data, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY)
    if not os.path.isdir(OPT_ML) or os.path.islink(OPT_ML):
        _cover(OPT, folders)
        if not os.path.lexists(OPT_ML):
            os.mkdir(OPT_ML)
    _mount(host_root, OPT_ML, None, _MS_BIND | _MS_REC)
    placed, wanted = os.stat(OPT_ML), os.stat(host_root)
    if (placed.st_dev, placed.st_ino) != (wanted.st_dev, wanted.st_ino):
        raise Refused(f"{OPT_ML} is not {host_root} after the bind mount")
    host_tmp = os.environ.get(HOST_TMP_VARIABLE)
    if host_tmp and os.path.isdir(host_tmp) and os.path.isdir(TMP):
        needed = (host_root, os.path.realpath(cwd), os.path.realpath(sys.executable))
        _cover_tmp(os.path.realpath(host_tmp), needed, folders)
    if home_dir and os.path.isdir(HOME):
        _cover_home(os.path.realpath(home_dir), kept, folders)
    _bind_all([(descriptor, target) for (descriptor, _), (_, target) in zip(bound, binds, strict=True)], folders)
    _enter_working_directory(cwd, host_root)
    return with_pids


def _enter_working_directory(cwd: str, host_root: str) -> None:
    """Back into `cwd`, by its /opt/ml path where it lies in the host's folder: the job's os.getcwd(), its
    tracebacks and what it passes on (PWD, mpirun's working directory for every rank) name /opt/ml/code, as in the
    container, not the run directory."""
    real = os.path.realpath(cwd)
    if real == host_root or real.startswith(host_root + "/"):
        cwd = OPT_ML + real[len(host_root):]
        os.environ["PWD"] = cwd
    os.chdir(cwd)


def _die_with_parent(parent: int) -> None:
    """SIGKILL when the parent process dies (however: a SIGKILL included); at once if it already has."""
    _check(_libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")
    if os.getppid() != parent:
        os._exit(137)


def contain(argv: list[str]) -> None:
    """Runs `argv` under a first process (PID 1) of the new PID namespace, and ends as it ends.

    Nothing started inside outlives the namespace's first process: when it exits, the kernel kills every process
    left in the namespace (a daemon, a re-forking `setsid` chain), and it dies with this process, which dies with
    smtrain (parent-death signals), so `kill -9` of smtrain leaves no job process. The first process forwards no
    signal and is never a job's: a job's process keeps the default actions a PID 1 would lose.
    """
    parent = os.getppid()
    _die_with_parent(parent)
    status_read, status_write = os.pipe()
    first = os.fork()
    if first == 0:
        os.close(status_read)
        _die_with_parent(os.getppid())
        _run_first_process(argv, status_write)
    os.close(status_write)
    _wait_ignoring_signals(first)
    with os.fdopen(status_read, "rb") as pipe:
        reported = pipe.read()
    _end_as(int(reported) if reported else 137 << 8)


def _wait_ignoring_signals(child: int) -> int:
    """`child`'s wait status. smtrain signals the job's processes itself, and a SIGTERM meant for them all must not
    cut their grace short, so a process holding them ignores it."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    return os.waitpid(child, 0)[1]


def contain_where_given(argv: list[str]) -> None:
    """Runs `argv` under `contain` where the kernel gives a PID namespace, else as it is; ends as it ends.

    The namespace is tried in a child, so this process stays as it was until it is given: a kernel may let
    unshare succeed and refuse what follows (Ubuntu's AppArmor restriction refuses the uid map, a seccomp profile
    the mount), and a process left in such a half-made namespace cannot run pip (its uid unmapped; its first
    child the PID namespace's first process, after which every fork fails with ENOMEM)."""
    parent = os.getppid()
    given_read, given_write = os.pipe()
    attempt = os.fork()
    if attempt == 0:
        os.close(given_read)
        try:
            with_pids = _new_namespace()
        except (Refused, OSError):
            with_pids = False
        if not with_pids:
            os._exit(0)
        os.write(given_write, b"1")
        os.close(given_write)
        contain(argv)
    os.close(given_write)
    with os.fdopen(given_read, "rb") as pipe:
        given = pipe.read() == b"1"
    if not given:
        os.waitpid(attempt, 0)
        os.execvp(argv[0], argv)
    _die_with_parent(parent)
    _end_as(_wait_ignoring_signals(attempt))


def _run_first_process(argv: list[str], status_pipe: int) -> None:
    """PID 1: mounts the namespace's own /proc, starts `argv`, reaps every orphan, reports `argv`'s wait status."""
    with contextlib.suppress(Refused):  # a /proc the kernel will not mount here: the machine's stays
        _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    child = os.fork()
    if child == 0:
        os.close(status_pipe)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        try:
            os.execvp(argv[0], argv)
        except OSError as error:
            sys.stderr.write(f"smtrain hostfs: {argv[0]}: {error.strerror}\n")
            os._exit(127)
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        if pid == child:
            os.write(status_pipe, str(status).encode())
            break
    os._exit(0)  # the namespace ends here: the kernel kills what the job left running


def _end_as(status: int) -> None:
    """Exits as the job's process ended: with its code, or killed by its signal."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        sys.exit(128 + sig)
    sys.exit(os.WEXITSTATUS(status))


def main() -> None:
    """`enter <host root> -- <program> [args]`: exits 125 with the reason when the namespace is refused.
    `contain -- <program> [args]`: the program in a PID namespace of its own where the kernel gives one (pip and
    its build hooks), else as it is."""
    if len(sys.argv) >= 3 and sys.argv[1:3] == ["contain", "--"]:
        contain_where_given(sys.argv[3:])
    if len(sys.argv) < 5 or sys.argv[1] != "enter" or sys.argv[3] != "--":
        sys.exit("usage: hostfs.py enter <host root> -- <program> [args]")
    try:
        with_pids = enter(sys.argv[2])
    except (Refused, OSError) as error:
        sys.stderr.write(f"smtrain hostfs: {error}\n")
        sys.exit(125)
    if with_pids:
        contain(sys.argv[4:])
    os.execvp(sys.argv[4], sys.argv[4:])


if __name__ == "__main__":
    main()
