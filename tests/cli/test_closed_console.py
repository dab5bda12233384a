"""A terminal that closes under `smtrain local` (SIGHUP: the window closed, an ssh session dropped) interrupts the
run, and smtrain exits 130 as result.json says: its report to the dead terminal fails (EIO), and that failure
must not turn the exit code into 1 with a traceback nobody can read."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import yaml

DEADLINE_SECONDS = 300  # a safety net only: the test waits for the run's first line, then for smtrain's exit
IN_ITS_OWN_TERMINAL = ("import os, sys; os.login_tty(int(sys.argv[1])); "
                       "os.execv(sys.executable, [sys.executable, '-m', 'orchestrator', *sys.argv[2:]])")
"""Runs smtrain with the pseudo-terminal as its controlling terminal, as a shell in a terminal window does."""


def _spec(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("import time\nprint('training', flush=True)\ntime.sleep(300)\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({
        "name": "closed", "entry_point": "train.py", "source_dir": "src", "framework_version": "2.3.0",
        "instance": {"type": "ml.c5.2xlarge", "count": 1}, "metrics": [], "max_run_seconds": 600}))
    return spec


def test_a_terminal_closed_mid_run_exits_130_as_the_result_says(tmp_path):
    run = tmp_path / "run"
    leader, follower = pty.openpty()
    process = subprocess.Popen([sys.executable, "-c", IN_ITS_OWN_TERMINAL, str(follower), "local",
                                str(_spec(tmp_path)), "--run-dir", str(run)], stdin=subprocess.DEVNULL,
                               pass_fds=(follower,), cwd=tmp_path, env={**os.environ, "TERM": "xterm"})
    os.close(follower)
    log = run / "logs" / "algo-1.log"
    deadline = time.monotonic() + DEADLINE_SECONDS
    try:
        while not (log.exists() and "training" in log.read_text(errors="replace")):
            assert time.monotonic() < deadline and process.poll() is None, "the run never started training"
            if select.select([leader], [], [], 0.1)[0]:
                os.read(leader, 65536)  # drained, so smtrain never waits on a full terminal
    finally:
        os.close(leader)  # the terminal closes: SIGHUP, and every later write to it fails
    try:
        code = process.wait(timeout=DEADLINE_SECONDS)
    finally:
        process.kill()
    result = json.loads((run / "result.json").read_text())
    assert (result["status"], result["exit_code"]) == ("Interrupted", 130)
    assert code == 130
