"""No process outlives a run: children, orphans and `setsid` + `env -i` escapees started by the entry
point (also under torchrun) are gone after every exit path, and a process that ignores SIGTERM delays Ctrl-C by
a bounded, announced grace that a second Ctrl-C cuts short."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import psutil
import pytest
import yaml

from orchestrator.backends.local import LocalBackend
from orchestrator.emulator.local_run import Options, run_local
from orchestrator.emulator.supervising.supervisor import INTERRUPT_GRACE_SECONDS
from orchestrator.specs.loader import load

pytestmark = [pytest.mark.slow, pytest.mark.hardening]

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = Path(__file__).parent / "scripts"
SPAWNED_PER_PROCESS = 3


def _tagged(tag: str) -> list[psutil.Process]:
    """Live processes whose command line carries the tag (the spawner's leftovers)."""
    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        if tag in (process.info["cmdline"] or []) and process.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(process)
    return found


def _wait_for(tag: str, count: int, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while len(_tagged(tag)) < count:
        assert time.monotonic() < deadline, f"only {len(_tagged(tag))} of {count} tagged processes started"
        time.sleep(0.2)


@pytest.fixture
def spawner_spec(tmp_path):
    """A spec whose entry point leaves processes behind; returns (spec path, tag)."""
    source = tmp_path / "src"
    shutil.copytree(SCRIPTS, source)
    tag = f"smtrain-test-{uuid.uuid4().hex[:12]}"

    def make(then: str, mode: str = "none", count: int = 2, instance: str = "ml.c5.2xlarge",
             max_run_seconds: int = 600) -> tuple[Path, str]:
        spec = {"name": "leftovers", "entry_point": "spawner.py", "source_dir": "src", "framework_version": "2.3.0",
                "instance": {"type": instance, "count": count}, "distribution": {"mode": mode}, "metrics": [],
                "max_run_seconds": max_run_seconds, "hyperparameters": {"tag": tag, "then": then}}
        path = tmp_path / "spec.yaml"
        path.write_text(yaml.safe_dump(spec))
        return path, tag

    yield make
    for process in _tagged(tag):  # never leave the suite's machine littered, whatever the outcome
        process.kill()


@pytest.mark.parametrize(("then", "max_run_seconds", "status"),
                         [("complete", 600, "Completed"), ("fail", 600, "Failed"), ("wait", 4, "Stopped")])
def test_run_ends_with_no_process_left(spawner_spec, tmp_path, then, max_run_seconds, status):
    spec, tag = spawner_spec(then, max_run_seconds=max_run_seconds)
    result = run_local(load(spec), Options(run_dir=tmp_path / "run"))
    assert result.status == status, result.failure_reason
    assert _tagged(tag) == []


def _wait_for_line(log: Path, text: str, process: subprocess.Popen[str], seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while not (log.exists() and text in log.read_text(errors="replace")):
        assert time.monotonic() < deadline and process.poll() is None, f"no {text!r} in {log}"
        time.sleep(0.1)


def _local(spec: Path, run_dir: Path) -> tuple[subprocess.Popen[str], list[str]]:
    """`smtrain local` in its own process, its console collected line by line as it comes."""
    process = subprocess.Popen([sys.executable, "-m", "orchestrator", "local", str(spec), "--run-dir", str(run_dir)],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO)
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(iter(process.stdout.readline, "")), daemon=True).start()
    return process, lines


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda sig: sig.name)
def test_a_signal_to_smtrain_leaves_no_process(spawner_spec, tmp_path, sig):
    spec, tag = spawner_spec("wait")
    process, lines = _local(spec, tmp_path / "run")
    _wait_for(tag, 2 * SPAWNED_PER_PROCESS)
    process.send_signal(sig)
    assert process.wait(timeout=600) == 130, "".join(lines)
    assert _tagged(tag) == []
    reason = json.loads((tmp_path / "run" / "result.json").read_text())["failure_reason"]
    assert reason.startswith(f"interrupted ({sig.name} forwarded to every training process as SIGTERM); "), reason
    status = LocalBackend().describe(str(tmp_path / "run"))  # what `smtrain status` and Job.status() read later
    said = status.transitions[-1].message
    assert said == f"smtrain was interrupted ({sig.name}) and stopped every process of the job", said


def test_ctrl_c_under_torchrun_leaves_no_process(spawner_spec, tmp_path):
    spec, tag = spawner_spec("wait", mode="torch_distributed", instance="ml.g5.2xlarge")
    process, lines = _local(spec, tmp_path / "run")
    _wait_for(tag, 2 * SPAWNED_PER_PROCESS)
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=600) == 130, "".join(lines)
    assert _tagged(tag) == []


def test_ctrl_c_with_a_process_ignoring_sigterm_is_announced_and_bounded(spawner_spec, tmp_path):
    spec, tag = spawner_spec("ignore-term", count=1)
    process, lines = _local(spec, tmp_path / "run")
    _wait_for(tag, SPAWNED_PER_PROCESS)
    _wait_for_line(tmp_path / "run" / "logs" / "algo-1.log", "ignoring SIGTERM", process)
    interrupted = time.monotonic()
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=600) == 130, "".join(lines)
    seconds = time.monotonic() - interrupted
    output = "".join(lines)
    assert INTERRUPT_GRACE_SECONDS <= seconds < INTERRUPT_GRACE_SECONDS + 15, (seconds, output)
    assert f"interrupted (SIGINT): waiting up to {INTERRUPT_GRACE_SECONDS:g} s for 1 process: algo-1 rank 0 (pid " \
        in output
    assert "Ctrl-C again kills them now" in output
    assert "killing 1 process: algo-1 rank 0 (pid" in output and f"after {INTERRUPT_GRACE_SECONDS:g} s" in output
    assert _tagged(tag) == []
    print(f"Ctrl-C to exit with a process ignoring SIGTERM: {seconds:.1f} s")


def test_second_ctrl_c_kills_at_once(spawner_spec, tmp_path):
    spec, tag = spawner_spec("ignore-term", count=1)
    process, lines = _local(spec, tmp_path / "run")
    _wait_for(tag, SPAWNED_PER_PROCESS)
    _wait_for_line(tmp_path / "run" / "logs" / "algo-1.log", "ignoring SIGTERM", process)
    first = time.monotonic()
    process.send_signal(signal.SIGINT)
    deadline = time.monotonic() + 90
    while not any("Ctrl-C again kills them now" in line for line in lines):
        assert time.monotonic() < deadline and process.poll() is None, "".join(lines)
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=600) == 130, "".join(lines)
    assert time.monotonic() - first < INTERRUPT_GRACE_SECONDS, "killed before the first Ctrl-C's grace ran out"
    assert "on a second interruption: killing 1 process: algo-1 rank 0 (pid" in "".join(lines)
    assert _tagged(tag) == []


_NOTEBOOK = """
import json, signal, sys
from pathlib import Path
import psutil
# A Jupyter kernel installs its own SIGINT handler; a process started where SIGINT is ignored (a CI script run in
# the background by a shell without job control) would otherwise inherit the ignoring and never be interrupted.
signal.signal(signal.SIGINT, signal.default_int_handler)
from orchestrator import run_local
from orchestrator.emulator.run_options import Options
from orchestrator.specs.loader import load
try:
    run_local(load(sys.argv[1]), Options(run_dir=Path(sys.argv[2])))
except KeyboardInterrupt:
    zombies = []
    for child in psutil.Process().children(recursive=True):
        try:
            if child.status() == psutil.STATUS_ZOMBIE:
                zombies.append(child.pid)
        except psutil.NoSuchProcess:  # reaped since it was listed
            pass
    print(json.dumps(zombies))
"""


def test_a_notebooks_interrupt_leaves_no_zombie_in_its_kernel(spawner_spec, tmp_path):
    """A kernel interrupted during `orchestrator.run_local` lives on: the run's processes must be reaped, not left
    as zombies of the kernel (the CLI's process exits, which hid them)."""
    spec, tag = spawner_spec("wait")
    kernel = subprocess.Popen([sys.executable, "-c", _NOTEBOOK, str(spec), str(tmp_path / "run")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    _wait_for(tag, 2 * SPAWNED_PER_PROCESS)
    kernel.send_signal(signal.SIGINT)  # what Jupyter's interrupt sends the kernel
    output, errors = kernel.communicate(timeout=600)
    assert (kernel.returncode, output.strip()) == (0, "[]"), errors[-3000:]
    assert _tagged(tag) == []
