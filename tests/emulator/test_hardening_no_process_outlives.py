"""Nothing smtrain starts outlives it: `kill -9` of `smtrain local` during a 2-host run leaves no job
process (a `setsid` daemon with an empty environment and a re-forking chain included), and a package build hook
that starts a daemon holding pip's output neither hangs the install nor stays behind."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
import uuid

import psutil
import pytest
import yaml

pytestmark = pytest.mark.hardening

_JOB = """
    import subprocess, sys, time
    token = sys.argv[-1]
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(900)", token], env={}, start_new_session=True)
    chain = "import os, subprocess, sys, time\\nwhile True:\\n    time.sleep(0.2)\\n    if os.fork():\\n        os._exit(0)\\n"
    subprocess.Popen([sys.executable, "-c", chain, token], env={}, start_new_session=True)
    print("ready", flush=True)
    time.sleep(900)
"""


def _marked(token: str) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        if token in (process.info["cmdline"] or []):
            found.append(process)
    return found


def _wait_for(condition, seconds: float = 240.0) -> bool:
    deadline = time.monotonic() + seconds  # a safety net only: each wait ends as soon as the condition holds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return False


def _kill_marked(token: str) -> None:
    for process in _marked(token):
        try:
            process.kill()
        except psutil.Error:
            pass


@pytest.mark.slow
def test_kill_9_of_smtrain_local_leaves_no_job_process(tmp_path):
    token = f"smtrain-orphan-{uuid.uuid4().hex}"
    (tmp_path / "train.py").write_text(textwrap.dedent(_JOB))
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"name": "orphans", "entry_point": "train.py", "framework_version": "2.3.0",
                                    "instance": {"type": "ml.c5.2xlarge", "count": 2}, "max_run_seconds": 1200,
                                    "hyperparameters": {"token": token}}))
    run = tmp_path / "run"
    smtrain = subprocess.Popen([sys.executable, "-m", "orchestrator", "local", str(spec), "--run-dir", str(run)],
                               cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def both_ready() -> bool:
            return all((run / "logs" / f"{host}.log").is_file()
                       and "ready" in (run / "logs" / f"{host}.log").read_text() for host in ("algo-1", "algo-2"))

        assert _wait_for(both_ready), "the job never started on both hosts"
        # 2 hosts: each rank, its daemon and its chain's current link. One look can miss the link: psutil lists
        # the pids first, and a link that forks on (every 0.2 s) before its turn is read is gone, its child unlisted.
        assert _wait_for(lambda: len(_marked(token)) >= 6), [p.info for p in _marked(token)]
        smtrain.send_signal(signal.SIGKILL)
        smtrain.wait()
        assert _wait_for(lambda: not _marked(token), 60), [p.info for p in _marked(token)]
    finally:
        smtrain.kill()
        _kill_marked(token)


_HOOK = """
import os, subprocess, sys
from setuptools import setup

token = {token!r}
if "egg_info" in sys.argv or "bdist_wheel" in sys.argv or "install" in sys.argv or "develop" in sys.argv:
    pip = os.getppid()
    while pip > 1 and b"pip" not in open(f"/proc/{{pip}}/cmdline", "rb").read():
        pip = int(open(f"/proc/{{pip}}/stat").read().rsplit(")", 1)[1].split()[1])
    held = os.open(f"/proc/{{pip}}/fd/1", os.O_WRONLY)  # pip's own output, which smtrain reads to its end
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(900)", token], stdout=held, stderr=held,
                     stdin=subprocess.DEVNULL, start_new_session=True, env={{}})
setup(name="hookpkg", version="0.1", py_modules=["hookpkg_mod"])
"""


@pytest.mark.slow
def test_a_build_hooks_daemon_holding_pips_output_neither_hangs_the_install_nor_stays(tmp_path, monkeypatch):
    monkeypatch.setenv("SMTRAIN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_NO_BUILD_ISOLATION", "0")  # pip's spelling of "no isolated build": offline
    token = f"smtrain-hook-{uuid.uuid4().hex}"
    source = tmp_path / "src"
    (source / "hookpkg").mkdir(parents=True)
    (source / "hookpkg" / "setup.py").write_text(_HOOK.format(token=token))
    (source / "hookpkg" / "hookpkg_mod.py").write_text("VALUE = 7\n")
    (source / "requirements.txt").write_text("./hookpkg\n")
    (source / "train.py").write_text("import hookpkg_mod\nprint('value', hookpkg_mod.VALUE)\n")
    spec = source / "spec.yaml"
    spec.write_text(yaml.safe_dump({"name": "hook", "entry_point": "train.py", "framework_version": "2.3.0",
                                    "instance": {"type": "ml.c5.2xlarge", "count": 1}, "max_run_seconds": 600}))
    try:
        # 600 s is a safety net: pip ends in seconds, and a held pipe would hang the install to pip's own limit
        result = subprocess.run([sys.executable, "-m", "orchestrator", "local", str(spec), "--run-dir",
                                 str(tmp_path / "run")], capture_output=True, text=True, timeout=600, cwd=source)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "value 7" in (tmp_path / "run" / "logs" / "algo-1.log").read_text()
        assert _wait_for(lambda: not _marked(token), 60), "the build hook's daemon outlived the install"
    finally:
        _kill_marked(token)
