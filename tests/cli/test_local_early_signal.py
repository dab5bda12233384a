"""A SIGTERM that comes while `smtrain local` is still starting (its imports, the spec's reading: a CI runner
cancelling a job it has just begun) ends it as Ctrl-C does, `interrupted` and 130, where it used to die at once
with 143 and no word. The command is held as it reads its input: its --hyperparameters-file (how `tune local`
hands a trial its values) is a FIFO the test never writes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
DEADLINE_SECONDS = 120  # a safety net only: the wait ends as soon as smtrain opens the file


def test_a_sigterm_while_the_input_is_read_says_interrupted(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({
        "name": "early", "entry_point": "train.py", "source_dir": "src", "framework_version": "2.3.0",
        "instance": {"type": "ml.c5.2xlarge", "count": 1}, "metrics": [], "max_run_seconds": 600}))
    values = tmp_path / "values.json"
    os.mkfifo(values)
    process = subprocess.Popen([sys.executable, "-m", "orchestrator", "local", str(spec), "--hyperparameters-file",
                                str(values), "--run-dir", str(tmp_path / "run")], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, cwd=REPO)
    writer = None
    try:
        deadline = time.monotonic() + DEADLINE_SECONDS
        while writer is None:  # a FIFO opens for writing, without waiting, only once a reader has it open
            assert process.poll() is None and time.monotonic() < deadline, process.communicate()
            try:
                writer = os.open(values, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=DEADLINE_SECONDS)
    finally:
        process.kill()
        if writer is not None:
            os.close(writer)
    assert process.returncode == 130, (process.returncode, stdout, stderr)
    assert "interrupted (SIGTERM)" in stderr and "Traceback" not in stderr, stderr
    assert not (tmp_path / "run").exists()
