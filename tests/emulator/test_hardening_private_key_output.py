"""A job that prints a PEM private key: its base64 lines reach neither the console, nor the host's log, nor the
failure tails, but one line saying a key was hidden; interleaved ranks of one host are followed apart."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import yaml

from orchestrator.emulator.launching.launch import Launch
from orchestrator.emulator.supervising.supervisor import Limits, Supervisor
from orchestrator.redact import MASK, mask_text

pytestmark = pytest.mark.hardening

# Prints a generated key (random base64, 64 characters a line, as openssl does) with a rank's tag before each line,
# interleaved with another rank's lines, then a key whose END line never comes; writes the body to body.txt.
KEY_SCRIPT = textwrap.dedent("""
    import base64, os, sys
    tag = sys.argv[1] if len(sys.argv) > 1 else ""
    body = base64.b64encode(os.urandom(1190)).decode()
    lines = [body[at:at + 64] for at in range(0, len(body), 64)]
    open("body.txt", "w").write("\\n".join(lines))
    key = ["-----BEGIN RSA PRIVATE KEY-----", *lines, "-----END RSA PRIVATE KEY-----"]
    for number, line in enumerate(key):
        print(tag + line)
        if tag:
            print(f"[1,mpirank:0,algo-1]<stdout>:step {number}")
    print(tag + "loss=0.25")
    print(tag + "-----BEGIN OPENSSH PRIVATE KEY-----")
    print(tag + lines[0], flush=True)
""")


def _body(folder) -> list[str]:
    return (folder / "body.txt").read_text().splitlines()


def test_ranks_sharing_a_hosts_output_each_hide_their_own_key(tmp_path):
    (tmp_path / "key.py").write_text(KEY_SCRIPT)
    logs = tmp_path / "logs"
    logs.mkdir()
    lines: list[str] = []
    command = f"{sys.executable} key.py '[1,mpirank:3,algo-1]<stdout>:'"
    supervisor = Supervisor([Launch("algo-1", command, dict(os.environ), tmp_path, command)], "run-id", logs,
                            lambda host, text: lines.append(text), mask=mask_text)

    outcome = supervisor.run(Limits(timeout_seconds=60, interrupt_after=None, stop_grace_seconds=5))

    rank3 = "[1,mpirank:3,algo-1]<stdout>:"
    body = _body(tmp_path)
    assert outcome.status == "completed"
    assert lines == [*(f"[1,mpirank:0,algo-1]<stdout>:step {n}" for n in range(len(body) + 1)),
                     f"{rank3}{MASK} (a private key: {len(body) + 2} lines hidden)",
                     f"[1,mpirank:0,algo-1]<stdout>:step {len(body) + 1}", f"{rank3}loss=0.25",
                     f"{rank3}{MASK} (2 lines hidden from a private key's BEGIN line: the output ended before its "
                     "END line)"]
    log = (logs / "algo-1.log").read_text()
    assert log.endswith("\n".join(lines) + "\n")
    assert not any(line in log for line in body) and outcome.tails["algo-1"] == lines


@pytest.mark.slow
def test_a_local_run_printing_a_key_shows_none_of_its_lines(tmp_path):
    (tmp_path / "train.py").write_text(KEY_SCRIPT.replace('open("body.txt"', 'open(os.environ["BODY"]'))
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"name": "pem", "entry_point": "train.py", "framework_version": "2.3.0",
                                    "instance": {"type": "ml.c5.2xlarge", "count": 1}, "max_run_seconds": 600,
                                    "metrics": [{"name": "loss", "regex": "loss=([0-9.]+)"}]}))
    run = tmp_path / "run"
    result = subprocess.run([sys.executable, "-m", "orchestrator", "local", str(spec), "--run-dir", str(run),
                             "--verbose"], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                            env={**os.environ, "BODY": str(tmp_path / "body.txt")})

    assert result.returncode == 0, result.stdout + result.stderr
    log = (run / "logs" / "algo-1.log").read_text()
    assert f"{MASK} (a private key: {len(_body(tmp_path)) + 2} lines hidden)\nloss=0.25\n" in log
    assert "the output ended before its END line" in log
    assert '"loss"' in (run / "metrics.jsonl").read_text()  # the lines after the key are read as before
    shown = {"console": result.stdout + result.stderr, "log": log,
             **{name: (run / name).read_text() for name in ("result.json", "status.json", "metrics.jsonl")}}
    for where, text in shown.items():
        assert not any(line in text for line in _body(tmp_path)), where
