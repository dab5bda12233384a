"""`smtrain local` in CI: when stdout is not a terminal (a file, a CI log), the script's own lines are streamed to
it prefixed [algo-N], as SageMaker's fit() prints them; --quiet turns them off; --output json keeps stdout JSON."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from forked import smtrain

SCRIPT = """\
import os
print(f"result from {os.environ['SM_CURRENT_HOST']}: 42", flush=True)
"""


@pytest.fixture
def greeting_spec(tmp_path: Path) -> Path:
    source = tmp_path / "src"
    source.mkdir()
    (source / "greet.py").write_text(SCRIPT)
    spec = {"name": "stream-test", "entry_point": "greet.py", "source_dir": "src", "framework_version": "2.10.0",
            "instance": {"type": "ml.c5.2xlarge", "count": 2}, "distribution": {"mode": "none"}, "metrics": [],
            "max_run_seconds": 600}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _local(spec: Path, tmp_path: Path, *options: str) -> tuple[subprocess.CompletedProcess[str], str]:
    """Runs `smtrain local` with stdout to a real file, as a CI job's log is (tests/support/forked.py's process
    writes stdout and stderr to files); returns the run and that file's text."""
    done = smtrain("local", str(spec), "--run-dir", str(tmp_path / "run"), *options, cwd=tmp_path, timeout=300)
    return done, done.stdout


def test_stdout_to_a_file_holds_the_scripts_own_lines(greeting_spec, tmp_path):
    done, stdout = _local(greeting_spec, tmp_path)
    assert done.returncode == 0, stdout + done.stderr
    assert "[algo-1] result from algo-1: 42" in stdout.splitlines()
    assert "[algo-2] result from algo-2: 42" in stdout.splitlines()
    assert "Completed in " in done.stderr


def test_quiet_keeps_the_host_lines_out(greeting_spec, tmp_path):
    done, stdout = _local(greeting_spec, tmp_path, "--quiet")
    assert done.returncode == 0, stdout + done.stderr
    assert "result from" not in stdout + done.stderr


def test_json_output_keeps_stdout_one_document_and_streams_to_stderr(greeting_spec, tmp_path):
    done, stdout = _local(greeting_spec, tmp_path, "-o", "json")
    assert done.returncode == 0, stdout + done.stderr
    assert json.loads(stdout)["status"] == "Completed"
    assert "[algo-2] result from algo-2: 42" in done.stderr


def test_the_emulator_notes_are_one_line_pointing_to_explain(greeting_spec, tmp_path):
    done, _ = _local(greeting_spec, tmp_path)
    notes = [line for line in done.stderr.splitlines() if line.startswith("note:")]
    assert any("`smtrain local --explain`" in line for line in notes), done.stderr
    assert not any("Open MPI 5 runs in place" in line for line in done.stderr.splitlines())
    assert len(notes) <= 3, notes


def test_a_dumb_terminal_which_draws_no_progress_bar_gets_the_scripts_own_lines(greeting_spec, tmp_path):
    """TERM=dumb (an editor's shell, a CI console with a pseudo-terminal): rich draws no bar there, and the run
    showed nothing between its first notes and its end."""
    leader, follower = pty.openpty()
    with subprocess.Popen([sys.executable, "-m", "orchestrator", "local", str(greeting_spec), "--run-dir",
                           str(tmp_path / "run")], stdin=subprocess.DEVNULL, stdout=follower, stderr=follower,
                          cwd=tmp_path, env={**os.environ, "TERM": "dumb"}) as process:
        os.close(follower)
        shown = b""
        while chunk := _read(leader):
            shown += chunk
        assert process.wait(timeout=300) == 0, shown.decode(errors="replace")
    os.close(leader)
    lines = shown.decode(errors="replace").splitlines()
    assert "[algo-1] result from algo-1: 42" in lines and "[algo-2] result from algo-2: 42" in lines, lines


def _read(fd: int) -> bytes:
    """The terminal's next output; empty once the last process holding it has closed it (Linux answers EIO)."""
    try:
        return os.read(fd, 65536)
    except OSError:
        return b""


def test_force_color_colours_a_ci_log_without_drawing_the_progress_bar_into_it(greeting_spec, tmp_path):
    """CI workflows set FORCE_COLOR for colour in their logs; rich then took the log for a terminal and drew its bar
    into it, each redraw a carriage return and cursor codes the log viewer shows as one long garbled line."""
    done = smtrain("local", str(greeting_spec), "--run-dir", str(tmp_path / "run"), cwd=tmp_path, timeout=300,
                   env={**os.environ, "FORCE_COLOR": "1", "CI": "true"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "\r" not in done.stderr and "\x1b[?25l" not in done.stderr, repr(done.stderr[:400])
    assert "\x1b[1;32mCompleted\x1b[0m in " in done.stderr  # the colour asked for stays
    assert "[algo-1] result from algo-1: 42" in done.stdout.splitlines()
