"""`smtrain local --python`: the job runs with another interpreter (whose packages stand for the image's), while
smtrain stays in its own."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from orchestrator.cli.main import main
from orchestrator.emulator.launching.launch import find_tool, interpreter_versions

WHICH_PYTHON = """import json, os, sys
seen = {"prefix": sys.prefix, "torch": os.environ.get("SM_DLC_TORCH_VERSION")}
open(os.path.join(os.environ["SM_MODEL_DIR"], "seen.json"), "w").write(json.dumps(seen))
"""


def test_the_job_runs_with_the_interpreter_named(make_spec, tmp_path):
    venv = tmp_path / "job-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    spec = make_spec("which_python.py", count=1)
    (tmp_path / "src" / "which_python.py").write_text(WHICH_PYTHON)
    result = CliRunner().invoke(main, ["local", str(spec), "--run-dir", str(tmp_path / "run"), "-q",
                                       "--python", str(venv / "bin" / "python")])
    assert result.exit_code == 0, result.output
    with tarfile.open(tmp_path / "run" / "model.tar.gz") as tar:
        seen = json.loads(tar.extractfile("seen.json").read())
    # the DLC's SM_DLC_TORCH_VERSION names its image's torch: here the job's interpreter's, and this one has none
    assert seen == {"prefix": str(venv), "torch": None}


def test_an_interpreter_that_is_not_there_is_a_usage_error(make_spec, tmp_path):
    result = CliRunner().invoke(main, ["local", str(make_spec("env_dump.py", count=1)), "--run-dir",
                                       str(tmp_path / "run"), "--python", str(tmp_path / "no-python")])
    assert result.exit_code == 2, result.output
    assert "--python" in result.output and "is not an executable file here" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "run").exists()


def test_a_virtualenv_keeps_the_mpirun_of_the_interpreter_it_links_to(tmp_path, monkeypatch):
    """A virtualenv of /usr/bin/python3 has no mpirun of its own: Debian's, beside the interpreter it links to
    (the one its mpi4py was built for), comes before whatever mpirun PATH names first."""
    base, venv, elsewhere = tmp_path / "usr" / "bin", tmp_path / "venv" / "bin", tmp_path / "other" / "bin"
    for folder in (base, venv, elsewhere):
        folder.mkdir(parents=True)
    (base / "python3").touch()
    (venv / "python").symlink_to(base / "python3")
    for mpirun in (base / "mpirun", elsewhere / "mpirun"):
        mpirun.touch(mode=0o755)
    monkeypatch.setenv("PATH", str(elsewhere))
    assert find_tool("mpirun", str(venv / "python")) == str(base / "mpirun")
    assert find_tool("mpirun", str(tmp_path / "python")) == str(elsewhere / "mpirun")


def test_a_program_that_is_not_python_is_refused_before_the_run(make_spec, tmp_path):
    """/bin/true would "complete" the job without running its script, and a fake answering 5 would give a
    traceback; each is refused, exit 2, before the job starts."""
    fake = tmp_path / "fake-python"
    fake.write_text("#!/bin/sh\necho 5\n")
    fake.chmod(0o755)
    spec = make_spec("env_dump.py", count=1)
    for index, program in enumerate(("/bin/true", "/bin/echo", str(fake))):
        run_dir = tmp_path / f"run-{index}"
        result = CliRunner().invoke(main, ["local", str(spec), "--run-dir", str(run_dir), "--python", program])
        assert result.exit_code == 2, (program, result.output)
        assert f"{program} is not a Python interpreter" in result.output and "--python" in result.output
        assert "Traceback" not in result.output and isinstance(result.exception, SystemExit | None)
        assert not (run_dir / "model.tar.gz").exists()


def test_smtrain_s_own_interpreter_answers_its_versions_in_process_as_a_probe_would():
    """The default interpreter is smtrain's: its torch and Python versions come without starting another
    process, and are what the probe of the same environment through another name of it says."""
    other_name = Path(sys.executable).with_name("python3")
    if not other_name.exists() or other_name == Path(sys.executable):
        pytest.skip("no second name of this interpreter in its own directory")
    here = interpreter_versions(sys.executable)
    assert here == interpreter_versions(str(other_name))
    assert here[1] == sys.version_info[:2] and here[0] is not None  # the suite's environment has torch
