"""SIGTERM or SIGHUP while requirements.txt installs stops smtrain as Ctrl-C does: pip (and what it
started) is killed and waited for, result.json says Interrupted, exit 130, and pip's temporary folders are not left
in the machine's temporary folder. pip is held mid-install by an index on 127.0.0.1 that accepts its connection and
never answers."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time

import psutil
import pytest
import yaml

pytestmark = [pytest.mark.slow, pytest.mark.hardening]


def _pip_processes(root: psutil.Process) -> list[psutil.Process]:
    found = []
    for process in root.children(recursive=True):
        try:
            if "pip" in process.cmdline():
                found.append(process)
        except psutil.Error:
            continue
    return found


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_termination_during_the_install_ends_pip_and_writes_the_result(tmp_path, monkeypatch, signum):
    monkeypatch.setenv("SMTRAIN_CACHE_DIR", str(tmp_path / "cache"))
    machine_tmp = tmp_path / "machine-tmp"  # this shell's TMPDIR, where pip put its folders (they stayed there)
    machine_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(machine_tmp))
    with socket.socket() as index:
        index.bind(("127.0.0.1", 0))
        index.listen(8)
        port = index.getsockname()[1]
        source = tmp_path / "src"
        source.mkdir()
        (source / "train.py").write_text("print('never reached')\n")
        (source / "requirements.txt").write_text(f"--index-url http://127.0.0.1:{port}/simple\n"
                                                 "smtrain-nonexistent-package\n")
        spec = tmp_path / "spec.yaml"
        spec.write_text(yaml.safe_dump({"name": "inst", "entry_point": "train.py", "source_dir": "src",
                                        "framework_version": "2.3.0", "instance": {"type": "ml.c5.2xlarge"},
                                        "metrics": []}))
        run = tmp_path / "run"
        smtrain = subprocess.Popen([sys.executable, "-m", "orchestrator", "local", str(spec), "--run-dir", str(run)],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            index.settimeout(240)
            connection, _ = index.accept()  # pip is installing now
            pips = _pip_processes(psutil.Process(smtrain.pid))
            assert pips, "pip should be running"
            smtrain.send_signal(signum)
            _, stderr = smtrain.communicate(timeout=120)
            connection.close()
        finally:
            if smtrain.poll() is None:
                smtrain.kill()
    assert smtrain.returncode == 130, stderr
    assert "Traceback" not in stderr
    deadline = time.monotonic() + 30
    while any(process.is_running() and process.status() != psutil.STATUS_ZOMBIE for process in pips):
        assert time.monotonic() < deadline, "pip outlived smtrain"
        time.sleep(0.1)
    result = json.loads((run / "result.json").read_text())
    assert result["status"] == "Interrupted" and result["exit_code"] == 130
    assert sorted(path.name for path in machine_tmp.iterdir()) == []
    assert not list((tmp_path / "cache").glob("overlays/*/.pip-tmp"))
