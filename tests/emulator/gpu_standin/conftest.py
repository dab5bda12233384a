"""Runs GPU-shaped scripts in fresh processes with the CPU stand-in switched on only through the environment, as
`smtrain local` will: its directory first on PYTHONPATH, and SMTRAIN_GPU_STANDIN* set. Nothing is patched in
pytest's own process."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[3]
STANDIN_DIR = REPO / "orchestrator" / "emulator" / "gpu_standin"
VENV_BIN = Path(sys.executable).parent
TIMEOUT_S = 600  # only a hang reaches it: a loaded machine can take minutes for a multi-rank run


def load_torch_free_module(name: str) -> ModuleType:
    """``smtrain_gpu_standin/<name>.py`` loaded by path, as the emulator can. (Putting the stand-in's directory
    on pytest's sys.path would let its smdistributed stand-in leak into other tests.)"""
    path = STANDIN_DIR / "smtrain_gpu_standin" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"standin_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


STANDIN_ENV = load_torch_free_module("env")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


_PART_MARKER = "=== smtrain test part ==="
_PARTS_RUNNER = f"""
import json, os, runpy, sys, traceback
for name, script, arguments in json.loads(sys.argv[1]):
    print({_PART_MARKER!r}, flush=True)
    print({_PART_MARKER!r}, file=sys.stderr, flush=True)
    try:
        if os.path.isfile(script):
            sys.argv = [script, *arguments]
            runpy.run_path(script, run_name="__main__")
        else:
            exec(compile(script, name, "exec"), {{"__name__": "__main__"}})
    except BaseException:
        traceback.print_exc()
    sys.stdout.flush()
    sys.stderr.flush()
"""


class Standin:
    """Starts processes under the stand-in, in `work_dir`, and reads what they print."""

    scripts = Path(__file__).resolve().parent / "scripts"
    env_module = STANDIN_ENV
    torch_free_module = staticmethod(load_torch_free_module)

    def __init__(self, work_dir: Path) -> None:
        self.work_dir = work_dir

    def environment(self, num_gpus: int | None = 4, gpu_name: str = "NVIDIA A10G", pythonpath: str = "",
                    **extra: str) -> dict[str, str]:
        """A clean environment with the stand-in's directory first on PYTHONPATH and the stand-in on for
        `num_gpus` GPUs per host (None: off). One thread per process and gloo on loopback, for 2-core machines.
        TMPDIR is the test's folder: torchrun's agents leave a torchelastic_* folder there, not in /tmp."""
        env = {
            "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "HOME": str(self.work_dir),
            "TMPDIR": str(self.work_dir),
            "LANG": "C.UTF-8",
            "OMP_NUM_THREADS": "1",
            "GLOO_SOCKET_IFNAME": "lo",
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(_free_port()),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(STANDIN_DIR), pythonpath])),
        }
        if num_gpus is not None:
            env[STANDIN_ENV.NUM_GPUS] = str(num_gpus)
            env[STANDIN_ENV.GPU_NAME] = gpu_name
        env.update(extra)
        return env

    def start(self, command: list[str], env: dict[str, str]) -> subprocess.Popen:
        # Its own process group: a launcher that times out is killed with the ranks it started.
        return subprocess.Popen(command, env=env, cwd=self.work_dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)

    @classmethod
    def finish(cls, process: subprocess.Popen, check: bool = True) -> subprocess.CompletedProcess:
        return cls.finish_all([process], check)[0]

    @staticmethod
    def finish_all(processes: list[subprocess.Popen], check: bool = True) -> list[subprocess.CompletedProcess]:
        """Waits for processes that wait on each other (the nodes of one job), reading every output at once, so
        that none blocks on a full pipe; fails the test with every output when one does not end in time (all are
        killed, ranks included) or (`check`) exits non-zero."""
        outputs: dict[int, tuple[str, str]] = {}
        readers = [threading.Thread(target=lambda index=index, process=process: outputs.__setitem__(
            index, process.communicate()), daemon=True) for index, process in enumerate(processes)]
        for reader in readers:
            reader.start()
        deadline = time.monotonic() + TIMEOUT_S
        for reader in readers:
            reader.join(max(deadline - time.monotonic(), 0))
        late = [process for process in processes if process.poll() is None]
        for process in late:
            os.killpg(process.pid, signal.SIGKILL)
        for reader in readers:
            reader.join()
        report = "\n".join(f"{process.args} (exit {process.returncode}):\n{outputs[index][0]}\n{outputs[index][1]}"
                           for index, process in enumerate(processes))
        if late:
            pytest.fail(f"{len(late)} of {len(processes)} process(es) did not finish within {TIMEOUT_S} s:\n{report}")
        if check:
            assert all(process.returncode == 0 for process in processes), report
        return [subprocess.CompletedProcess(process.args, process.returncode, *outputs[index])
                for index, process in enumerate(processes)]

    def run(self, command: list[str], env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess:
        return self.finish(self.start(command, env), check)

    def python(self, *args: str, **env_options) -> subprocess.CompletedProcess:
        """``python ARGS`` in the environment that `env_options` describe (see `environment`)."""
        return self.run([sys.executable, *args], self.environment(**env_options))

    def parts(self, parts: list[tuple[str, str, list[str]]], env: dict[str, str]) -> dict[str, tuple[str, str]]:
        """Several scripts (name, path or ``-c`` code, arguments) run one after the other in one process under
        `env`, each as ``__main__`` in its own namespace, so that torch is started once for them: each part's own
        stdout and stderr (cut at the marker lines printed between them), a part that raised ending with its
        traceback, so that one failing leaves the others' answers."""
        result = self.run([sys.executable, "-c", _PARTS_RUNNER, json.dumps(parts)], env, check=False)
        cut = [output.split(_PART_MARKER + "\n") for output in (result.stdout, result.stderr)]
        assert all(len(pieces) == len(parts) + 1 for pieces in cut), (result.returncode, result.stdout, result.stderr)
        return {name: (cut[0][index + 1], cut[1][index + 1]) for index, (name, _, _) in enumerate(parts)}

    @staticmethod
    def json_lines(output: str) -> list[dict]:
        """The JSON objects a script printed, one per line (launcher lines, e.g. mpirun's, may prefix them)."""
        return [json.loads(line[line.index("{"):]) for line in output.splitlines()
                if "{" in line and line.rstrip().endswith("}")]

    def mpirun(self, num_processes: int, script: Path) -> list[str]:
        """Open MPI, with the stand-in's variables exported to every rank as the emulator must (``-x``)."""
        launcher = VENV_BIN / "mpirun"
        if not launcher.exists():
            pytest.skip(f"no {launcher}; install the [local] extra for Open MPI")
        root_flag = ["--allow-run-as-root"] if os.geteuid() == 0 else []
        exported = ["PYTHONPATH", "MASTER_ADDR", "MASTER_PORT", "GLOO_SOCKET_IFNAME", "OMP_NUM_THREADS",
                    STANDIN_ENV.NUM_GPUS, STANDIN_ENV.GPU_NAME]
        return [str(launcher), *root_flag, "--oversubscribe", "-np", str(num_processes),
                *[item for name in exported for item in ("-x", name)], sys.executable, "-m", "mpi4py", str(script)]

    @staticmethod
    def torchrun(*args: str) -> list[str]:
        return [sys.executable, "-m", "torch.distributed.run", *args]


@pytest.fixture
def standin(tmp_path) -> Standin:
    return Standin(tmp_path)


@pytest.fixture(scope="module")
def module_standin(tmp_path_factory) -> Standin:
    """For a module whose tests share one expensive run."""
    return Standin(tmp_path_factory.mktemp("standin"))
