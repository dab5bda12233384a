"""Isolation for every test, a real moto server on 127.0.0.1 for the AWS tests (one per xdist worker), and the
order in which scripts/test.sh's parallel workers take the modules."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from run_observers import NoticeRecorder
from suite_durations import CpuClock, DurationRecorder, module_path, recorded

REPO = Path(__file__).resolve().parent.parent

# The fixtures of the SageMaker job tests, shared by tests/cli, cloud, backends, api and observing; the workers'
# work units (a module each, or one for the modules of a group: worker_groups.py).
pytest_plugins = ["job_fixtures", "worker_groups"]

# Variables that would make a test depend on the developer's machine or leak a launcher's identity into it.
_ISOLATED_PREFIXES = ("SM_", "OMPI_", "PMIX_", "SMTRAIN_", "SAGEMAKER_", "TORCHELASTIC_", "AWS_", "GITHUB_")
_ISOLATED_NAMES = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR",
                   "MASTER_PORT", "TRAINING_JOB_NAME", "CURRENT_HOST")


# smtrain's and pip's caches (the hostname shim it compiles, requirements overlays) for every test of every
# session: kept warm between sessions, inside the checkout's own pytest cache rather than the user's home.
TEST_CACHE = REPO / ".pytest_cache" / "smtrain-test-cache"

# pytest keeps each test module's assertion rewriting as byte code beside it, unless writing byte code is off, as
# PYTHONDONTWRITEBYTECODE=1 (set on CI machines and here) turns it off: then every worker rewrote every module
# on every run, about 8 CPU-s a worker. The test processes write it again; the processes the tests start keep the
# variable as it is.
sys.dont_write_bytecode = False


@pytest.fixture(autouse=True)
def isolated_environment(monkeypatch, tmp_path_factory):
    """No AWS credentials, no SageMaker, launcher or GitHub Actions variables (a suite run in a workflow would
    annotate its tests' own specs), no user SDK config, for every test; a home and a
    working directory of its own, so that no test reads or writes the user's home or the checkout's runs/ (the
    default run directories, which `bash scripts/demo.sh` fills)."""
    for name in list(os.environ):
        if name.startswith(_ISOLATED_PREFIXES) or name in _ISOLATED_NAMES:
            monkeypatch.delenv(name, raising=False)
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SMTRAIN_CACHE_DIR", str(TEST_CACHE / "smtrain"))
    monkeypatch.setenv("PIP_CACHE_DIR", str(TEST_CACHE / "pip"))
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(home / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(home / "aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    # Empty files: no defaults apply, and both SDK v2 and smtrain refuse a variable naming a missing file.
    for variable, name in (("SAGEMAKER_USER_CONFIG_OVERRIDE", "sagemaker-user-config.yaml"),
                           ("SAGEMAKER_ADMIN_CONFIG_OVERRIDE", "sagemaker-admin-config.yaml")):
        (home / name).write_text("")
        monkeypatch.setenv(variable, str(home / name))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def moto_server():
    """moto's HTTP server in its own process on 127.0.0.1: a real endpoint, not in-process patching."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 300  # importing moto takes a while on a loaded machine; only a failure gets here
    while True:
        try:
            urllib.request.urlopen(f"{url}/moto-api/", timeout=1)
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError("moto server did not start")
            time.sleep(0.1)
    yield url
    proc.terminate()
    proc.wait(timeout=60)


@pytest.fixture
def aws(moto_server, monkeypatch):
    """Fake credentials pointed at a freshly reset moto server; yields the endpoint URL."""
    urllib.request.urlopen(urllib.request.Request(f"{moto_server}/moto-api/reset", method="POST"), timeout=60)
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_server)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return moto_server


@pytest.fixture
def notice_recorder() -> NoticeRecorder:
    return NoticeRecorder()


@pytest.fixture(scope="session")
def startup_seconds():
    """`startup_seconds("torch")`: how long a fresh interpreter of this venv takes, right now, to import those
    modules. The yardstick for a deadline that a product feature needs to cover a start-up (a smoke's seconds, a
    simulated spot interruption), which a loaded machine stretches several-fold: such deadlines are a multiple
    of it, never a bare number."""

    def measure(*modules: str) -> float:
        started = time.monotonic()
        subprocess.run([sys.executable, "-c", f"import {', '.join(modules) or 'sys'}"], check=True)
        return time.monotonic() - started

    return measure


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--record-durations", action="store_true",
                     help="after the run, write each module's seconds into tests/durations.json (run the whole "
                          "suite: the slow modules' order comes from it)")


def pytest_configure(config: pytest.Config) -> None:
    """The recorder runs in the process that gets every report: xdist's controller, or the only process.

    Ctrl-C as a terminal gives it: a shell without job control (a CI step run in the background, `nohup`) starts
    its commands with SIGINT ignored, every process the suite starts would inherit that, and the tests that press
    Ctrl-C on `smtrain local` or `tune local` would wait for a search that never hears it (the product rightly
    keeps an inherited SIG_IGN: that is how a shell shields its background jobs). A handler of this process's own
    is not inherited: the processes it starts begin with SIGINT's default, as under a terminal."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if config.getoption("record_durations"):
        config.pluginmanager.register(CpuClock(), "smtrain-cpu-clock")
        if not hasattr(config, "workerinput"):
            config.pluginmanager.register(DurationRecorder(), "smtrain-durations")


def pytest_collection_modifyitems(config, items):
    """Tests marked `gpu` run only where CUDA GPUs are visible; elsewhere they are skipped, with the reason.

    Then the order the workers take modules in (scripts/test.sh: `--dist loadscope --no-loadscope-reorder`, a
    module at a time, in this order): the modules of slow tests first, longest first (tests/durations.json), so
    that the suite does not end with one worker running a long module while the other waits; the fast modules
    after them fill the gaps."""
    gpu_tests = [item for item in items if "gpu" in item.keywords]
    if gpu_tests and not _cuda_available():
        skip = pytest.mark.skip(reason="needs a CUDA GPU (none visible on this machine)")
        for item in gpu_tests:
            item.add_marker(skip)
    marks = _module_marks(items)
    seconds = recorded()
    items.sort(key=lambda item: _place(item, marks[item.module], seconds))


def _place(item: pytest.Item, marks: set[str], seconds: dict[str, float]) -> tuple[int, float]:
    """The slow modules, the longest in the recorded durations first, then the fast ones."""
    if "slow" not in marks:
        return 1, 0
    return 0, -seconds.get(module_path(item.nodeid), 0.0)


def _module_marks(items: list[pytest.Item]) -> dict[object, set[str]]:
    """The names of the marks of each module's tests."""
    marks: dict[object, set[str]] = {}
    for item in items:
        marks.setdefault(item.module, set()).update(mark.name for mark in item.iter_markers())
    return marks


def _cuda_available() -> bool:
    import shutil

    if shutil.which("nvidia-smi") is None:
        return False
    import torch

    return torch.cuda.is_available()
