"""A JIT compile is progress, not a hang, said on the console while it lasts, and a compile stopped mid-way never
blocks a later run.

The job builds a tiny C++ extension with torch.utils.cpp_extension.load_inline (scripts/jit_script.py), silent
for the whole compile, under a 3 s stall timeout that the compile outlasts on any machine (it compiles torch's
headers). The first run is interrupted (Ctrl-C) while it compiles, which leaves torch's build lock behind; the
second run builds the extension and completes instead of waiting on that lock."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

STALL_SECONDS = "3"
EXTENSION = "smtrain_tiny_op"
# Only a run that never gets there reaches these.
COMPILE_START_DEADLINE_SECONDS = 300
RUN_DEADLINE_SECONDS = 600


def _local(spec: Path, run_dir: Path) -> list[str]:
    return [sys.executable, "-m", "orchestrator", "local", str(spec), "--run-dir", str(run_dir),
            "--stall-timeout", STALL_SECONDS, "-o", "json"]


def _build_locks(*roots: Path) -> list[Path]:
    return [lock for root in roots for lock in root.glob(f"torch_extensions/**/{EXTENSION}/lock")]


def test_a_jit_compile_is_slow_not_hung_and_a_stopped_one_blocks_no_later_run(make_spec, tmp_path, monkeypatch):
    cache, user_cache = tmp_path / "smtrain-cache", tmp_path / "user-cache"
    monkeypatch.setenv("SMTRAIN_CACHE_DIR", str(cache))
    monkeypatch.setenv("XDG_CACHE_HOME", str(user_cache))  # torch's own default, were smtrain to set nothing
    spec = make_spec("jit_script.py", count=1)

    first = subprocess.Popen(_local(spec, tmp_path / "first"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, cwd=tmp_path)
    deadline = time.monotonic() + COMPILE_START_DEADLINE_SECONDS
    while not _build_locks(cache, user_cache):
        assert first.poll() is None and time.monotonic() < deadline, first.communicate(timeout=60)
        time.sleep(0.2)
    first.send_signal(signal.SIGINT)  # Ctrl-C while torch holds its build lock
    _, said = first.communicate(timeout=RUN_DEADLINE_SECONDS)
    assert first.returncode == 130, said

    second = subprocess.run(_local(spec, tmp_path / "second"), capture_output=True, text=True,
                            timeout=RUN_DEADLINE_SECONDS, cwd=tmp_path, check=False)

    assert second.returncode == 0, second.stderr
    assert "add_one(41)=42" in (tmp_path / "second" / "logs" / "algo-1.log").read_text()
    assert "slow, not hung: " in second.stderr, "the compile outlasted the stall timeout and was not stopped"
    assert ("algo-1 rank 0: compiling a C++/CUDA extension (ninja, " in second.stderr
            and "the next run reuses it from smtrain's build cache" in second.stderr), "the silent compile is said"
    built = list(cache.glob(f"torch_extensions/py*-torch*/**/{EXTENSION}/{EXTENSION}.so"))
    assert built, "built in smtrain's cache, keyed by Python and torch"
    assert not (user_cache / "torch_extensions").exists(), "nothing in the user's own cache"
    assert _build_locks(cache) == []


def test_a_compiled_gpu_script_trains_and_the_next_run_reuses_what_torch_compile_built(make_spec, tmp_path,
                                                                                       monkeypatch):
    """torch.compile on the CPU stand-in (scripts/compiled_step.py: a step compiled on "cuda", bf16 autocast,
    torch.cuda's and torch.accelerator's stream calls). Its C++ goes to smtrain's cache, not each host's /tmp,
    which the run empties: the second run compiles nothing."""
    cache = tmp_path / "smtrain-cache"
    monkeypatch.setenv("SMTRAIN_CACHE_DIR", str(cache))
    spec = make_spec("compiled_step.py", count=1, instance="ml.g5.xlarge")

    outcomes = []
    for run in ("first", "second"):
        result = subprocess.run([sys.executable, "-m", "orchestrator", "local", str(spec), "--run-dir",
                                 str(tmp_path / run), "-o", "json"], capture_output=True, text=True,
                                timeout=RUN_DEADLINE_SECONDS, cwd=tmp_path, check=False)
        assert result.returncode == 0, result.stderr
        log = (tmp_path / run / "logs" / "algo-1.log").read_text()
        outcomes.append(json.loads(next(line for line in log.splitlines() if line.startswith("{"))))

    first, second = outcomes
    assert first["agree"] and first["compiled"][-1] < first["compiled"][0], first
    assert first["graphs_compiled"] > 0 and first["graphs_from_cache"] == 0
    assert second["graphs_compiled"] == 0 and second["graphs_from_cache"] == first["graphs_compiled"], second
    assert list(cache.glob("torchinductor/py*-torch*/fxgraph")), "kept in smtrain's cache, keyed by Python and torch"
