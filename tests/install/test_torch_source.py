"""scripts/install_torch.sh: the CPU build of torch from PyTorch's CPU index where it answers, else what pip
resolves, said either way; an index that does not answer costs seconds (the probe's timeout), not minutes.

pip itself is replaced by a recorder (a real install would download torch); the probe is the script's own.
"""

from __future__ import annotations

import http.server
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _recording_python(tmp_path: Path) -> tuple[Path, Path]:
    """A `python` that runs the probe with this interpreter and records `-m pip ...` calls instead of running them."""
    record = tmp_path / "pip-calls"
    shim = tmp_path / "python"
    shim.write_text(f'#!/bin/sh\nif [ "$1" = "-m" ]; then echo "$@" >> {record}; exit 0; fi\n'
                    f'exec {sys.executable} "$@"\n')
    shim.chmod(0o755)
    return shim, record


def _install(shim: Path, index: str, probe_seconds: str = "3") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SMTRAIN_TORCH_INDEX": index, "SMTRAIN_TORCH_PROBE_SECONDS": probe_seconds}
    return subprocess.run(["bash", str(REPO / "scripts" / "install_torch.sh"), str(shim)], capture_output=True,
                          text=True, env=env, timeout=120, check=True)


def test_a_silent_index_costs_the_probe_timeout_and_pip_resolves_the_pin(tmp_path):
    shim, record = _recording_python(tmp_path)
    with socket.socket() as silent:  # accepts connections (the kernel's backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        started = time.monotonic()
        result = _install(shim, f"http://127.0.0.1:{silent.getsockname()[1]}/whl/cpu", probe_seconds="0.2")
        elapsed = time.monotonic() - started
    assert "as pip resolves it" in result.stderr and "did not answer within 0.2 s" in result.stderr
    calls = record.read_text().splitlines()
    assert calls == ["-m pip install --quiet -c constraints.txt torch==2.13.0"]
    assert elapsed < 60, elapsed  # the probe's 0.2 s plus start-up, not pip's default 15 s x 5 retries


def test_a_reachable_cpu_index_is_used_and_named(tmp_path):
    shim, record = _recording_python(tmp_path)

    class Index(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            self.send_response(200 if self.path == "/whl/cpu/torch/" else 404)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Index)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        index = f"http://127.0.0.1:{server.server_address[1]}/whl/cpu"
        result = _install(shim, index)
    finally:
        server.shutdown()
    assert f"CPU build from PyTorch's CPU index {index}" in result.stderr
    (call,) = record.read_text().splitlines()
    assert f"--index-url {index} --extra-index-url https://pypi.org/simple" in call
    assert call.endswith("torch==2.13.0")
