"""The source dir handled as the training toolkit handles it: requirements.txt and setup.py installed before the
entry point (never into smtrain's own environment), shell entry points run as `./run.sh` with quoted arguments,
and the toolkit's refusals before anything starts."""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from orchestrator.emulator.local_run import Options, run_local
from orchestrator.errors import SpecError
from orchestrator.specs.loader import load

pytestmark = pytest.mark.slow

PROBE = "smtrain_probe_pkg"


@pytest.fixture(autouse=True)
def hermetic_pip(tmp_path, monkeypatch):
    """pip works offline (local wheels, setuptools from the environment), into a cache of this test's own."""
    monkeypatch.setenv("SMTRAIN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_NO_BUILD_ISOLATION", "0")


def _wheel(directory: Path, name: str, version: str, module_source: str, requires: tuple[str, ...] = ()) -> Path:
    """A minimal pure-Python wheel, built by hand (no network, no build backend)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}.py": module_source,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                            + "".join(f"Requires-Dist: {requirement}\n" for requirement in requires),
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: smtrain-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [f"{file},sha256={base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b'=').decode()},"
              f"{len(text.encode())}" for file, text in files.items()]
    files[f"{info}/RECORD"] = "\n".join([*record, f"{info}/RECORD,,"]) + "\n"
    with zipfile.ZipFile(path, "w") as archive:
        for file, text in files.items():
            archive.writestr(file, text)
    return path


def _spec(tmp_path: Path, source: Path, entry_point: str, **extra) -> Path:
    spec = {"name": "user-code", "entry_point": entry_point, "source_dir": str(source), "framework_version": "2.3.0",
            "instance": {"type": "ml.c5.2xlarge", "count": 1}, "metrics": [], "max_run_seconds": 300, **extra}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _smtrains_python_lacks(module: str) -> bool:
    probe = subprocess.run([sys.executable, "-c", f"import importlib.util as u; print(u.find_spec('{module}'))"],
                           capture_output=True, text=True, check=True)
    return probe.stdout.strip() == "None"


def test_requirements_are_installed_for_the_script_only(tmp_path):
    source = tmp_path / "src"
    _wheel(source / "wheels", PROBE, "1.0", "GREETING = 'installed from requirements.txt'\n")
    (source / "requirements.txt").write_text(f"./wheels/{PROBE}-1.0-py3-none-any.whl\n")
    (source / "train.py").write_text(
        f"import json, os, {PROBE}\n"
        "json.dump({'greeting': " + PROBE + ".GREETING, 'module': " + PROBE + ".__file__},\n"
        "          open(os.path.join(os.environ['SM_MODEL_DIR'], 'probe.json'), 'w'))\n")
    assert _smtrains_python_lacks(PROBE)
    first = run_local(load(_spec(tmp_path, source, "train.py")), Options(run_dir=tmp_path / "run"))
    assert first.status == "Completed", first.failure_reason
    report = json.loads((first.run_dir / "algo-1" / "model" / "probe.json").read_text())
    assert report["greeting"] == "installed from requirements.txt"
    assert report["module"].startswith(str(tmp_path / "cache" / "overlays"))
    assert _smtrains_python_lacks(PROBE), "the install went into smtrain's own environment"
    # The same requirements.txt again: the cached overlay, not a second install.
    second = run_local(load(_spec(tmp_path, source, "train.py")), Options(run_dir=tmp_path / "run"))
    assert second.status == "Completed", second.failure_reason
    assert len(list((tmp_path / "cache" / "overlays").iterdir())) == 2  # the overlay and its lock file


def test_a_failed_install_fails_the_job_with_pips_message(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    (source / "requirements.txt").write_text("./wheels/not_there-1.0-py3-none-any.whl\n")
    (source / "train.py").write_text("print('never runs')\n")
    result = run_local(load(_spec(tmp_path, source, "train.py")), Options(run_dir=tmp_path / "run"))
    assert result.status == "Failed" and result.exit_code == 1
    headline = result.failure_reason.splitlines()[0]
    assert headline.startswith("every host: InstallRequirementsError: pip could not install"), headline
    assert "not_there-1.0-py3-none-any.whl" in headline
    assert result.failure_cause["category"] == "requirements_install" and "requirements.txt" in result.failure_cause["fix"]
    failure = (result.run_dir / "algo-1" / "output" / "failure").read_text()
    assert failure.startswith("InstallRequirementsError:\nExitCode 1\nErrorMessage")
    assert json.loads((result.run_dir / "result.json").read_text())["status"] == "Failed"
    assert not list((tmp_path / "cache" / "overlays").glob("*/.complete"))


def test_a_dependency_no_index_has_fails_the_job_at_the_line_of_the_requirement_that_needs_it(tmp_path):
    """toppkg (line 3) requires missing-dep>=2, which no index pip searched has: pip names missing-dep alone. The
    local reason and cause say it as a SageMaker job's log of the same install is read: the requirement written in
    requirements.txt, what it needs, at its line. Before: `ERROR: No matching distribution found for missing-dep>=2
    at src/requirements.txt`, no line, nothing about toppkg."""
    source = tmp_path / "src"
    _wheel(source / "wheels", "toppkg", "1.0", "", requires=("missing-dep>=2",))
    (source / "requirements.txt").write_text("--find-links ./wheels\n# the model code\ntoppkg==1.0\n")
    (source / "train.py").write_text("print('never runs')\n")
    result = run_local(load(_spec(tmp_path, source, "train.py")), Options(run_dir=tmp_path / "run"))
    said, at = "toppkg needs missing-dep>=2, which no index has", f"{source}/requirements.txt:3"
    assert result.failure_reason.splitlines()[0] == ("every host: InstallRequirementsError: pip could not install "
                                                      f"the source dir's requirements: {said} at {at}")
    assert (result.failure_cause["exception"], result.failure_cause["location"]) == (said, at)


def test_a_smoke_whose_requirements_fail_to_install_reports_no_rank_started_and_says_the_fix(tmp_path):
    """A CI step reads the `smoke` key and the console's verdict line: pip failing before any rank started was
    reported with `smoke: null`, no `smoke FAILED` line, and no fix on the console (only `smtrain status` had it)."""
    source = tmp_path / "src"
    source.mkdir()
    (source / "requirements.txt").write_text("./wheels/not_there-1.0-py3-none-any.whl\n")
    (source / "train.py").write_text("print('never runs')\n")
    spec = _spec(tmp_path, source, "train.py", instance={"type": "ml.c5.2xlarge", "count": 2})
    command = [sys.executable, "-m", "orchestrator", "local", str(spec), "--run-dir", str(tmp_path / "run"),
               "--smoke", "60", "--smoke-steps", "1"]

    as_json = subprocess.run([*command, "-o", "json"], capture_output=True, text=True, timeout=300, check=False)
    shown = subprocess.run([*command, "-q"], capture_output=True, text=True, timeout=300, check=False)

    assert as_json.returncode == shown.returncode == 1, as_json.stderr
    smoke = json.loads(as_json.stdout)["smoke"]
    assert (smoke["ranks_started"], smoke["ranks_expected"], smoke["steps_reached"]) == (0, 2, None)
    assert smoke["missing"] == ["rank 0 (algo-1)", "rank 1 (algo-2)"]
    assert "smoke FAILED: 0 of 2 ranks started" in shown.stderr
    assert "fix: pip could not install the source dir's requirements.txt" in shown.stderr
    assert "no line of the job showed a step" not in shown.stderr


def test_setup_py_installs_the_package_and_runs_the_entry_point_as_a_module(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    (source / "setup.py").write_text("from setuptools import setup\nsetup(name='trainer-pkg', version='1.0', "
                                     "py_modules=['train', 'helpers'])\n")
    (source / "helpers.py").write_text("ANSWER = 42\n")
    (source / "train.py").write_text(
        "import json, os, sys, helpers\n"
        "json.dump({'name': __name__, 'spec': __spec__.name, 'argv': sys.argv[1:], 'answer': helpers.ANSWER},\n"
        "          open(os.path.join(os.environ['SM_MODEL_DIR'], 'module.json'), 'w'))\n")
    result = run_local(load(_spec(tmp_path, source, "train.py", hyperparameters={"epochs": 2})),
                       Options(run_dir=tmp_path / "run"))
    assert result.status == "Completed", result.failure_reason
    report = json.loads((result.run_dir / "algo-1" / "model" / "module.json").read_text())
    assert report == {"name": "__main__", "spec": "train", "argv": ["--epochs", "2"], "answer": 42}
    log = (result.run_dir / "logs" / "algo-1.log").read_text()
    assert " -m train --epochs 2" in log


@pytest.mark.parametrize(("mode", "count", "extra"), [
    ("none", 1, {}),
    ("mpi", 2, {"distribution": {"mode": "mpi", "processes_per_host": 1}}),
])
def test_a_shell_entry_point_runs_with_its_shebang_and_quoted_arguments(tmp_path, mode, count, extra, host_seen_at):
    source = tmp_path / "src"
    source.mkdir()
    (source / "run.sh").write_text((Path(__file__).parent / "scripts" / "run.sh").read_text())
    spec = _spec(tmp_path, source, "run.sh", hyperparameters={"msg": "hello world"},
                 instance={"type": "ml.c5.2xlarge", "count": count}, **({"distribution": {"mode": mode}} | extra))
    result = run_local(load(spec), Options(run_dir=tmp_path / "run"))
    assert result.status == "Completed", result.failure_reason
    for index in range(count):
        host = f"algo-{index + 1}"
        seen = json.loads((result.run_dir / host / "output" / "data" / f"args-{host}-{index}.json").read_text())
        assert seen == {"argv": ["--msg", "hello world"], "cwd": str(host_seen_at(result.run_dir, host) / "code")}


@pytest.mark.parametrize(("files", "entry_point", "message"), [
    ({"setup.py": "", "train.py": ""}, "train.py", "Python packages are not supported for torch_distributed"),
    ({"train v2.py": ""}, "train v2.py", "cannot be used because it contains the character"),
])
def test_the_toolkits_refusals_come_before_anything_starts(tmp_path, files, entry_point, message):
    source = tmp_path / "src"
    source.mkdir()
    for name, text in files.items():
        (source / name).write_text(text)
    spec = _spec(tmp_path, source, entry_point, instance={"type": "ml.g5.2xlarge", "count": 1},
                 distribution={"mode": "torch_distributed"})
    with pytest.raises(SpecError, match=message) as refused:
        run_local(load(spec), Options(run_dir=tmp_path / "run"))
    assert refused.value.exit_code == 2 and "ClientError" in refused.value.message
    assert not (tmp_path / "run").exists()


def test_a_local_package_and_a_standard_library_backport_install_as_in_the_image(tmp_path, monkeypatch):
    """pip builds a local path in its isolated build (which fetches setuptools from pip's configured index, as
    in the image, and keeps the standard library), and `dataclasses==0.6` lands in site-packages after the
    standard library, so torch still imports."""
    monkeypatch.delenv("PIP_NO_INDEX")
    monkeypatch.delenv("PIP_NO_BUILD_ISOLATION")
    wheels = tmp_path / "index"
    dataclasses_backport = "raise ImportError('the dataclasses backport shadowed the standard library')\n"
    _wheel(wheels, "dataclasses", "0.6", dataclasses_backport)
    source = tmp_path / "src"
    (source / "mypkg").mkdir(parents=True)
    (source / "mypkg" / "setup.py").write_text("from setuptools import setup\n"
                                               "setup(name='mypkg', version='0.1', py_modules=['mypkg_mod'])\n")
    (source / "mypkg" / "mypkg_mod.py").write_text("VALUE = 7\n")
    (source / "requirements.txt").write_text(f"--find-links {wheels}\n./mypkg\ndataclasses==0.6\n")
    (source / "train.py").write_text(
        "import dataclasses, json, os, torch, mypkg_mod\n"
        "json.dump({'value': mypkg_mod.VALUE, 'dataclasses': dataclasses.__file__, 'torch': torch.__version__},\n"
        "          open('/opt/ml/model/report.json', 'w'))\n")
    result = run_local(load(_spec(tmp_path, source, "train.py")), Options(run_dir=tmp_path / "run"))
    assert result.status == "Completed", result.failure_reason
    report = json.loads((result.run_dir / "algo-1" / "model" / "report.json").read_text())
    assert report["value"] == 7
    assert not report["dataclasses"].startswith(str(tmp_path / "cache"))  # the standard library's
    overlay = next((tmp_path / "cache" / "overlays").glob("*/lib/python*/site-packages"))
    assert (overlay / "dataclasses.py").is_file() and (overlay / "mypkg_mod.py").is_file()


def test_two_virtualenvs_of_one_python_get_overlays_of_their_own(tmp_path):
    """The overlay of a venv that has the requirement (nothing to install) is not reused by one that lacks it."""
    wheels = tmp_path / "index"
    _wheel(wheels, PROBE, "1.0", "GREETING = 'hello'\n")
    base = getattr(sys, "_base_executable", sys.executable)
    venvs = {}
    for name in ("with", "without"):
        venvs[name] = tmp_path / f"venv-{name}"
        subprocess.run([base, "-m", "venv", str(venvs[name])], check=True, capture_output=True, timeout=300)
    subprocess.run([str(venvs["with"] / "bin/python"), "-m", "pip", "install", "--no-index", "-q",
                    str(wheels / f"{PROBE}-1.0-py3-none-any.whl")], check=True, timeout=300)
    source = tmp_path / "src"
    source.mkdir()
    (source / "requirements.txt").write_text(f"--find-links {wheels}\n{PROBE}==1.0\n")
    (source / "train.py").write_text(f"import os, {PROBE}\n"
                                     f"open('/opt/ml/model/where.txt', 'w').write({PROBE}.__file__)\n")
    where = {}
    for name in ("with", "without"):
        result = run_local(load(_spec(tmp_path, source, "train.py")),
                           Options(run_dir=tmp_path / f"run-{name}", python=str(venvs[name] / "bin/python")))
        assert result.status == "Completed", result.failure_reason
        where[name] = (result.run_dir / "algo-1/model/where.txt").read_text()
    assert where["with"].startswith(str(venvs["with"]))
    assert where["without"].startswith(str(tmp_path / "cache" / "overlays"))


def test_a_failed_build_names_the_error_pip_reports(tmp_path):
    source = tmp_path / "src"
    (source / "brokenpkg").mkdir(parents=True)
    (source / "brokenpkg" / "setup.py").write_text("raise RuntimeError('brokenpkg needs a CUDA compiler')\n")
    (source / "requirements.txt").write_text("./brokenpkg\n")
    (source / "train.py").write_text("print('never runs')\n")
    result = run_local(load(_spec(tmp_path, source, "train.py")), Options(run_dir=tmp_path / "run"))
    assert result.status == "Failed"
    headline = result.failure_reason.splitlines()[0]
    # the build's error, then the line of requirements.txt that named the package (pip names it by its path)
    assert headline.endswith(f"RuntimeError: brokenpkg needs a CUDA compiler at {source}/requirements.txt:1"), headline
    assert "note: This error originates" not in headline
    assert result.failure_cause["location"] == f"{source}/requirements.txt:1"


def test_a_package_the_install_changes_is_named_before_the_job_runs(tmp_path, notice_recorder):
    """A requirement that moves a package the environment has to another version (numpy 1 -> 2 under a torch built
    for numpy 1, in the real case) is said, with both versions, before the job starts; the job sees the new one."""
    wheels = tmp_path / "index"
    for version in ("1.0", "2.0"):
        _wheel(wheels, PROBE, version, f"VERSION = '{version}'\n")
    venv = tmp_path / "venv"
    subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", str(venv)], check=True,
                   capture_output=True, timeout=300)
    subprocess.run([str(venv / "bin/python"), "-m", "pip", "install", "--no-index", "-q",
                    str(wheels / f"{PROBE}-1.0-py3-none-any.whl")], check=True, timeout=300)
    source = tmp_path / "src"
    source.mkdir()
    (source / "requirements.txt").write_text(f"--find-links {wheels}\n{PROBE}==2.0\n")
    (source / "train.py").write_text(f"import {PROBE}\nopen('/opt/ml/model/version.txt', 'w').write({PROBE}.VERSION)\n")
    result = run_local(load(_spec(tmp_path, source, "train.py")),
                       Options(run_dir=tmp_path / "run", python=str(venv / "bin/python")), notice_recorder)
    assert result.status == "Completed", result.failure_reason
    assert (result.run_dir / "algo-1/model/version.txt").read_text() == "2.0"
    said = notice_recorder.notices
    changed = [text for text in said if text.startswith("the install changed packages this environment has")]
    assert len(changed) == 1 and f"{PROBE} 1.0 -> 2.0 (pip did it" in changed[0], said
