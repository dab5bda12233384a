"""The processes the emulator puts around Open MPI, so one mpirun spans emulated hosts as it spans instances.

Run as `python -I -S mpi_hooks.py <hook> ...`: standard library only, never imports `orchestrator`.

* `rsh` (`--mca plm_rsh_agent`, in place of ssh): starts an Open MPI daemon "on" a host: in that host's
  environment, as a SageMaker worker's sshd gives its sessions the worker's environment, its code directory and,
  where hosts get mount namespaces, its /opt/ml (through hostfs.py).
  The environments come from mpirun's own environment (`HOST_ENVIRONMENT_PREFIX` + host), never from a file.
  The daemon's standard output goes nowhere, as on SageMaker (`--display-map`'s job map is printed once, by mpirun).
* `exec` (`--prtemca odls_base_exec_agent`; in Open MPI 4 `--mca orte_fork_agent`): starts one rank. mpirun
  gives every rank the master's values of the variables it exports (`-x`) and the master's working directory:
  the same `/opt/ml/...` strings that on SageMaker name each instance's own disk, and here too where hosts get
  mount namespaces. Without them each host's /opt/ml is its own folder (SAGEMAKER_BASE_DIR), so the master's
  folder is replaced by the rank's host's in those values, its arguments and its working directory. It stays
  the rank's parent, records how the rank ended (`RANK_ENDS_VARIABLE`), then ends the same way, so Open MPI sees
  the rank's own exit or signal.
* `relabel`: runs the mpirun command and relabels its output as the toolkit does (`process.watch`):
  `[1,5]<stdout>:` becomes `[1,mpirank:5,algo-3]<stdout>:` with the toolkit's host label, rank // ppn + 1.
  It exits with mpirun's status, except that a job that lost a host's daemon failed: PRTE (Open MPI 5) says so
  (`PRTE has lost communication with a remote daemon`), ends the job and exits 0, where the mpirun of SageMaker's
  images (Open MPI 4) exits non-zero.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys

HOST_ENVIRONMENT_PREFIX = "SMTRAIN_HOST_ENV_"
MASTER_BASE_DIR = "SMTRAIN_MASTER_BASE_DIR"
BASE_DIR = "SAGEMAKER_BASE_DIR"
HOST_ROOT_VARIABLE = "SMTRAIN_HOST_ROOT"
"""The host's folder of the run (its /opt/ml), in every host's environment, whatever the job's paths name: where
`rsh` starts the host's daemon, and whose host a rank's ending is recorded for."""
HOSTFS_VARIABLE = "SMTRAIN_HOSTFS"
"""hostfs.py, in a host's environment when hosts get mount namespaces: the daemon starts in its host's."""
RANK_ENDS_VARIABLE = "SMTRAIN_RANK_ENDS"
"""The folder, in mpirun's environment, where `exec` records how each rank's process ended (`<rank>.json`: its
host, rank and exit code, negative for a signal). Whether mpirun's notice of a rank's death is printed at all is
a race (a peer that lost its connection to that rank may abort first, and mpirun reports only the first ending);
the record is written every time. The rank's own environment never has it."""
_RANK_VARIABLE = "OMPI_COMM_WORLD_RANK"
_HELD_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
"""What Open MPI sends the rank's process group to stop it: the rank acts on it, `exec` outlives it to record
the ending (a Python handler, which the rank's exec resets to the default)."""
_PR_SET_PDEATHSIG = 1
_TAG = re.compile(r"\[(\d),(\d+)\]<(stdout|stderr)>")
_LOST_DAEMON = re.compile(r"^[OP]RTE has lost communication with a remote daemon")
_LOST_DAEMON_EXIT = 1
_MAX_LINE = 1 << 20


def host_environment_variable(host: str) -> str:
    """`SMTRAIN_HOST_ENV_algo_2`: the variable of mpirun's environment that holds a host's environment (JSON)."""
    return HOST_ENVIRONMENT_PREFIX + re.sub(r"\W", "_", host)


def remote_shell(argv: list[str]) -> None:
    """`rsh [ssh options] <host> <command words>`."""
    words = list(argv)
    while words and words[0].startswith("-"):
        words.pop(0)
    host, command = words[0], " ".join(words[1:])
    master_base = os.environ.get(BASE_DIR, "")
    host_env = json.loads(os.environ[host_environment_variable(host)])
    for name in [name for name in os.environ if name.startswith(HOST_ENVIRONMENT_PREFIX)]:
        del os.environ[name]
    os.environ.update(host_env)
    os.environ[MASTER_BASE_DIR] = master_base
    os.chdir(os.path.join(host_env[HOST_ROOT_VARIABLE], "code"))
    _daemon_output_nowhere()
    hostfs = host_env.get(HOSTFS_VARIABLE)
    if hostfs:
        os.execv(sys.executable, [sys.executable, "-I", "-S", hostfs, "enter", host_env[HOST_ROOT_VARIABLE], "--",
                                  "/bin/sh", "-c", command])
    os.execv("/bin/sh", ["/bin/sh", "-c", command])


def _daemon_output_nowhere() -> None:
    """The daemon's standard output goes nowhere, as a SageMaker worker's does: there ORTE's daemon leaves its ssh
    session (/dev/null its output), where here it stays in it (`--leave-session-attached`, launch.py) and printed
    `--display-map`'s job map into the master's log once more per host. The ranks' output reaches mpirun apart
    (`--tag-output`); the daemon's errors, on its standard error, still reach the log."""
    nowhere = os.open(os.devnull, os.O_WRONLY)
    os.dup2(nowhere, 1)
    os.close(nowhere)


def start_rank(argv: list[str]) -> None:
    """`exec <program> <arguments>`, run by the daemon of the rank's host: runs the rank, records how it ended
    where mpirun's environment names a folder for it, and ends the same way."""
    env = {name: value for name, value in os.environ.items() if not name.startswith(HOST_ENVIRONMENT_PREFIX)}
    master, own = env.pop(MASTER_BASE_DIR, ""), env.get(BASE_DIR, "")
    ends = env.pop(RANK_ENDS_VARIABLE, "")
    if master and own and master != own:
        env = {name: _on_own_host(value, master, own) for name, value in env.items()}
        argv = [_on_own_host(arg, master, own) for arg in argv]
        os.chdir(_on_own_host(os.getcwd(), master, own))
    rank = env.get(_RANK_VARIABLE, "")
    if not (ends and rank.isdigit()):
        os.execvpe(argv[0], argv, env)
    for number in _HELD_SIGNALS:
        signal.signal(number, lambda *_: None)
    code = subprocess.Popen(argv, env=env, close_fds=False, preexec_fn=_die_with_parent).wait()
    record_rank_end(ends, os.path.basename(env.get(HOST_ROOT_VARIABLE, "").rstrip("/")), int(rank), code)
    _end_as(code)


def _die_with_parent() -> None:
    """Where `exec` is killed (a SIGKILL to it alone), the rank dies with it: Open MPI counts the rank as ended
    then, and nothing of a run outlives it."""
    import ctypes  # noqa: PLC0415 (in the rank's fork only)

    ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _end_as(code: int) -> None:
    """Ends this process as the rank ended: its exit code, or its signal (without a core file of this process)."""
    if code >= 0:
        os._exit(code)
    import resource  # noqa: PLC0415

    resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
    if -code not in (signal.SIGKILL, signal.SIGSTOP):  # this process's handler or SIG_IGN (Python's SIGPIPE)
        signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
    os._exit(128 - code)  # a signal whose default is not to end the process


def record_rank_end(folder: str, host: str, rank: int, exit_code: int) -> None:
    """Writes one rank's ending into `folder` (whole or not at all: a reader never sees half of it)."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{rank}.json")
    with open(path + ".part", "w", encoding="utf-8") as record:
        json.dump({"host": host, "rank": rank, "exit_code": exit_code}, record)
    os.replace(path + ".part", path)


def rank_ends(folder: str) -> dict[tuple[str, int], int]:
    """Each recorded rank's exit code (negative: killed by that signal), by its host and rank; a file that is no
    such record is left out."""
    found: dict[tuple[str, int], int] = {}
    names = os.listdir(folder) if os.path.isdir(folder) else []
    for name in sorted(name for name in names if name.endswith(".json")):
        try:
            with open(os.path.join(folder, name), encoding="utf-8") as record:
                document = json.load(record)
            found[(str(document["host"]), int(document["rank"]))] = int(document["exit_code"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return found


def _on_own_host(value: str, master: str, own: str) -> str:
    """The master's folder replaced by this host's wherever it is a whole path component, in its plain and its
    JSON-escaped spelling."""
    for old, new in {master: own, json.dumps(master)[1:-1]: json.dumps(own)[1:-1]}.items():
        value = re.sub(re.escape(old) + r"(?=[/\"':;,\s\]}]|$)", lambda _match, new=new: new, value)
    return value


def relabel(argv: list[str]) -> int:
    """`relabel <processes per host> <shell command>`: runs the command, relabelling its output lines."""
    per_host, command = int(argv[0]), argv[1]
    process = subprocess.Popen(["/bin/sh", "-c", command], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    # The supervisor signals the training processes; mpirun ends when they do, and so does this process (which
    # ignores the signals only once mpirun has started, so mpirun does not inherit that).
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    assert process.stdout is not None
    out = sys.stdout.buffer
    lost_daemon = False
    for raw in iter(lambda: process.stdout.readline(_MAX_LINE), b""):
        line = raw.decode("utf-8", errors="surrogateescape")
        line = _TAG.sub(lambda m: f"[{m[1]},mpirank:{m[2]},algo-{int(m[2]) // per_host + 1}]<{m[3]}>", line)
        out.write(line.encode("utf-8", errors="surrogateescape"))
        out.flush()
        lost_daemon = lost_daemon or bool(_LOST_DAEMON.match(line))
    code = process.wait()
    if code == 0 and lost_daemon:
        return _LOST_DAEMON_EXIT
    return 128 - code if code < 0 else code


def main() -> None:
    hook, argv = sys.argv[1], sys.argv[2:]
    if hook == "rsh":
        remote_shell(argv)
    elif hook == "exec":
        start_rank(argv)
    elif hook == "relabel":
        sys.exit(relabel(argv))
    else:
        sys.exit(f"mpi_hooks.py: unknown hook {hook!r}")


if __name__ == "__main__":
    main()
