"""`requirements.txt`: the overlay cache follows the content of the local files it installs (a wheel
rebuilt under the same name is installed again, not served stale), and a local path outside the source dir is
refused as SageMaker's container would fail it, before pip builds anything."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

import pytest
import yaml

from orchestrator.emulator.local_run import Options, run_local
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
