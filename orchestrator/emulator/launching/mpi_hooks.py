"""The processes the emulator puts around Open MPI, so one mpirun spans emulated hosts as it spans instances.

Run as `python -I -S mpi_hooks.py <hook> ...`: standard library only, never imports `orchestrator`.

* `rsh` (`--mca plm_rsh_agent`, in place of ssh): starts an Open MPI daemon "on" a host: in that host's
  environment, as a SageMaker worker's sshd gives its sessions the worker's environment, its code directory and,
  where hosts get mount namespaces, its /opt/ml (through hostfs.py).
  The environments come from mpirun's own environment (`HOST_ENVIRONMENT_PREFIX` + host), never from a file.
* `exec` (`--prtemca odls_base_exec_agent`; in Open MPI 4 `--mca orte_fork_agent`): starts one rank. mpirun
  gives every rank the master's values of the variables it exports (`-x`) and the master's working directory:
  the same `/opt/ml/...` strings that on SageMaker name each instance's own disk. Here each host's /opt/ml is
  its own folder, so the master's folder is replaced by the rank's host's in those values, its arguments and its
  working directory.
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
HOSTFS_VARIABLE = "SMTRAIN_HOSTFS"
"""hostfs.py, in a host's environment when hosts get mount namespaces: the daemon starts in its host's."""
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
    os.chdir(os.path.join(host_env[BASE_DIR], "code"))
    hostfs = host_env.get(HOSTFS_VARIABLE)
    if hostfs:
        os.execv(sys.executable, [sys.executable, "-I", "-S", hostfs, "enter", host_env[BASE_DIR], "--",
                                  "/bin/sh", "-c", command])
    os.execv("/bin/sh", ["/bin/sh", "-c", command])


def start_rank(argv: list[str]) -> None:
    """`exec <program> <arguments>`, run by the daemon of the rank's host."""
    env = {name: value for name, value in os.environ.items() if not name.startswith(HOST_ENVIRONMENT_PREFIX)}
    master, own = env.pop(MASTER_BASE_DIR, ""), env.get(BASE_DIR, "")
    if master and own and master != own:
        env = {name: _on_own_host(value, master, own) for name, value in env.items()}
        argv = [_on_own_host(arg, master, own) for arg in argv]
        os.chdir(_on_own_host(os.getcwd(), master, own))
    os.execvpe(argv[0], argv, env)


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
