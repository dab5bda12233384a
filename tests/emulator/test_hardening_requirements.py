"""`requirements.txt`: the overlay cache follows the content of the local files it installs (a wheel
rebuilt under the same name is installed again, not served stale), a local path outside the source dir is
refused as SageMaker's container would fail it, before pip builds anything, and a run that waits for another run's
install of the same requirements says so."""

from __future__ import annotations

import base64
import fcntl
import hashlib
import os
import threading
import time
import zipfile
from pathlib import Path

import pytest
import yaml

from orchestrator.emulator.local_run import Options, QuietObserver, run_local
from orchestrator.specs.loader import load

pytestmark = [pytest.mark.slow, pytest.mark.hardening]


@pytest.fixture(autouse=True)
def hermetic_pip(tmp_path, monkeypatch):
    monkeypatch.setenv("SMTRAIN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_NO_BUILD_ISOLATION", "0")  # pip's spelling of "no isolated build": offline


def _wheel(directory: Path, name: str, version: str, module_source: str) -> Path:
    """A minimal pure-Python wheel, built by hand (no network, no build backend)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    files = {f"{name}.py": module_source,
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: smtrain-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = [f"{file},sha256={base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b'=').decode()},"
              f"{len(text.encode())}" for file, text in files.items()]
    files[f"{info}/RECORD"] = "\n".join([*record, f"{info}/RECORD,,"]) + "\n"
    with zipfile.ZipFile(path, "w") as archive:
        for file, text in files.items():
            archive.writestr(file, text)
    return path


def _spec(tmp_path: Path, source: Path) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump({"name": "reqs", "entry_point": "train.py", "source_dir": str(source),
                                    "framework_version": "2.3.0", "instance": {"type": "ml.c5.2xlarge", "count": 1},
                                    "max_run_seconds": 300}))
    return path


def test_a_wheel_rebuilt_under_the_same_name_is_installed_again(tmp_path):
    source = tmp_path / "src"
    (source / "train.py").parent.mkdir()
    (source / "train.py").write_text("import rebuilt_probe\nprint('value', rebuilt_probe.VALUE)\n")
    (source / "requirements.txt").write_text("./wheels/rebuilt_probe-1.0-py3-none-any.whl\n")
    for value in (1, 2):
        _wheel(source / "wheels", "rebuilt_probe", "1.0", f"VALUE = {value}\n")
        result = run_local(load(_spec(tmp_path, source)), Options(run_dir=tmp_path / "run"))
        assert result.status == "Completed", result.failure_reason
        assert f"value {value}" in (result.run_dir / "logs" / "algo-1.log").read_text()


def test_a_file_url_outside_the_source_dir_is_refused_before_it_is_built(tmp_path):
    outside = tmp_path / "outside-pkg"
    outside.mkdir()
    ran = tmp_path / "the-build-hook-ran"
    (outside / "setup.py").write_text(f"open({str(ran)!r}, 'w').close()\n"
                                      "from setuptools import setup\nsetup(name='outside-pkg', version='0.1')\n")
    source = tmp_path / "src"
    source.mkdir()
    (source / "train.py").write_text("print('ran')\n")
    (source / "requirements.txt").write_text(f"{outside.as_uri()}\n")
    result = run_local(load(_spec(tmp_path, source)), Options(run_dir=tmp_path / "run"))
    assert result.status == "Failed" and "outside the source dir" in result.failure_reason
    assert not ran.exists()


class _Notices(QuietObserver):
    def __init__(self) -> None:
        self.said: list[str] = []

    def notice(self, text: str) -> None:
        self.said.append(text)


def test_a_run_waiting_for_another_runs_install_of_the_same_requirements_says_so(tmp_path):
    source = tmp_path / "src"
    (source / "train.py").parent.mkdir()
    (source / "train.py").write_text("import waited_probe\nprint('value', waited_probe.VALUE)\n")
    (source / "requirements.txt").write_text("./wheels/waited_probe-1.0-py3-none-any.whl\n")
    _wheel(source / "wheels", "waited_probe", "1.0", "VALUE = 7\n")
    spec = load(_spec(tmp_path, source))
    assert run_local(spec, Options(run_dir=tmp_path / "first")).status == "Completed"
    [entry] = (tmp_path / "cache" / "overlays").glob("*/")
    (entry / ".complete").unlink()  # as another run leaves it while it installs: half-built, its lock held
    notices, ended = _Notices(), []
    with open(entry.parent / f"{entry.name}.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        lock.truncate(0)
        lock.write(f"{os.getpid()}\n")
        lock.flush()
        second = threading.Thread(target=lambda: ended.append(
            run_local(spec, Options(run_dir=tmp_path / "second"), notices)))
        second.start()
        deadline = time.monotonic() + 240  # a safety net only: the wait ends as soon as the run says it waits
        while not any("waiting for another run" in text for text in notices.said) and time.monotonic() < deadline:
            time.sleep(0.1)
    second.join()
    [waited] = [text for text in notices.said if "waiting for another run" in text]
    assert f"(process {os.getpid()})" in waited and str(entry) in waited
    assert ended[0].status == "Completed", ended[0].failure_reason
    assert "value 7" in (tmp_path / "second" / "logs" / "algo-1.log").read_text()
