"""Everything a local run writes stays inside its run directory, whole, and free of secrets; a bad run directory
is refused with one message."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from orchestrator.cli.main import main
from orchestrator.contract import RUN_MARKER_FILE
from orchestrator.emulator.instances import run_files
from orchestrator.emulator.launching import opt_ml
from orchestrator.emulator.local_run import Options, run_local
from orchestrator.errors import SpecError
from orchestrator.specs.loader import load

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def test_a_checkpoint_path_outside_opt_ml_is_emulated_inside_the_run(make_spec, tmp_path, startup_seconds):
    """The container path is the host path of nothing: a spot restart restores the checkpoint inside the run
    directory, and the directory of that name on this machine keeps every inode. In each host's namespace the job
    finds it at the container path (the run's folder bound there); without one, at that folder itself."""
    # The interruption comes once the script has written its checkpoint: 4 s on an idle machine, more when
    # starting a process takes longer now (6 times the import of smtrain's runner).
    interruption = max(4.0, 6 * startup_seconds("orchestrator.emulator.local_run"))
    outside = tmp_path / "host-ckpt"
    outside.mkdir()
    (outside / "keep.txt").write_text("not the emulator's\n")
    before = {path.name: path.stat().st_ino for path in [outside, *outside.iterdir()]}
    spec = make_spec("checkpoint_script.py", count=1, hyperparameters={"checkpoint-dir": str(outside)},
                     checkpoint={"s3_uri": "s3://bucket/ckpt/", "local_path": str(outside)})
    result = run_local(load(spec), Options(run_dir=tmp_path / "run", simulate_spot_interruption=interruption))
    assert result.status == "Completed" and result.attempts == 2, result.failure_reason
    assert {path.name: path.stat().st_ino for path in [outside, *outside.iterdir()]} == before
    emulated = result.run_dir / "container-paths" / "algo-1" / str(outside).lstrip("/")
    assert (emulated / "ckpt-algo-1.txt").read_text() == "step 1\n"
    assert (result.run_dir / "checkpoints-s3" / "ckpt-algo-1.txt").is_file()
    namespaced = subprocess.run([*opt_ml.HostFileSystem(True).enter(tmp_path), "true"], capture_output=True,
                                check=False).returncode == 0
    seen = outside if namespaced else emulated
    assert "resumed from " + str(seen / "ckpt-algo-1.txt") in (result.run_dir / "logs" / "algo-1.log").read_text()


ROTATING = {"checkpoint": {"s3_uri": "s3://bucket/ckpt/"}, "tensorboard": {"s3_uri": "s3://bucket/tb/"}}


def _rotating(make_spec, steps: int, wait_at: int = 0) -> Path:
    return make_spec("rotating_checkpoints.py", hyperparameters={
        "checkpoint-dir": "/opt/ml/checkpoints", "steps": steps, "wait-at": wait_at,
        "tensorboard-dir": "/opt/ml/output/tensorboard"}, **ROTATING)


def test_checkpoints_a_script_rotated_away_are_not_restored_after_a_spot_interruption(make_spec, tmp_path):
    """Keep-the-newest-2 on algo-1, across a rerun and a spot interruption: each restart gives both hosts the two
    kept folders only, and the prefix ends with the last two (deleting a local file deletes it in S3). The
    TensorBoard events of every step stay, as their S3 prefix keeps what the earlier jobs and attempts uploaded."""
    run_dir = tmp_path / "run"
    first = run_local(load(_rotating(make_spec, steps=2)), Options(run_dir=run_dir))
    assert first.status == "Completed", first.failure_reason

    spot = run_local(load(_rotating(make_spec, steps=6, wait_at=4)),
                     Options(run_dir=run_dir, simulate_spot_interruption_at_step=4))

    assert (spot.status, spot.attempts) == ("Completed", 2), spot.failure_reason
    for host in ("algo-1", "algo-2"):
        log = (run_dir / "logs" / f"{host}.log").read_text()
        assert "received step-3 step-4\n" in log, log
    assert sorted(path.name for path in (run_dir / "checkpoints-s3").iterdir()) == ["step-5", "step-6"]
    assert sorted(path.name for path in (run_dir / "tensorboard" / "algo-1").iterdir()) == [
        f"events.out.tfevents.step-{step}" for step in range(1, 7)]


def test_a_run_killed_before_its_hosts_received_the_checkpoints_loses_none(make_spec, tmp_path):
    """smtrain killed while it restored the prefix (algo-1 has its copy, algo-2 an empty folder): the rerun's upload
    of the killed run's checkpoints deletes nothing, and both hosts receive the prefix whole."""
    run_dir = tmp_path / "run"
    spec = _rotating(make_spec, steps=2)
    assert run_local(load(spec), Options(run_dir=run_dir)).status == "Completed"
    killed_in_restore = (
        "import os, runpy, shutil, signal, sys\n"
        "copy = shutil.copytree\n"
        "def restoring(source, target, *args, **kwargs):\n"
        "    if str(target).endswith('algo-2/checkpoints'):\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "    return copy(source, target, *args, **kwargs)\n"
        "shutil.copytree = restoring\n"
        f"sys.argv = ['smtrain', 'local', {str(spec)!r}, '--run-dir', {str(run_dir)!r}, '-q']\n"
        "runpy.run_module('orchestrator', run_name='__main__')\n")
    killed = subprocess.run([sys.executable, "-c", killed_in_restore], check=False, capture_output=True, text=True,
                            cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    assert not any((run_dir / "algo-2" / "checkpoints").iterdir()) and not (run_dir / "result.json").exists()

    rerun = run_local(load(spec), Options(run_dir=run_dir))

    assert rerun.status == "Completed", rerun.failure_reason
    assert "received step-1 step-2\n" in (run_dir / "logs" / "algo-2.log").read_text()
    assert [(path.parent.name, path.read_text()) for path in sorted((run_dir / "checkpoints-s3").rglob("state.txt"))
            ] == [("step-1", "step 1\n"), ("step-2", "step 2\n")]


def test_a_relative_checkpoint_path_is_refused(make_spec, tmp_path):
    spec = make_spec("env_dump.py", count=1, checkpoint={"s3_uri": "s3://bucket/ckpt/", "local_path": "ckpt"})
    with pytest.raises(SpecError, match="not an absolute path inside the container"):
        run_local(load(spec), Options(run_dir=tmp_path / "run"))


def test_a_full_disk_fails_the_run_whole_and_says_so(make_spec, tmp_path, monkeypatch):
    spec = make_spec("env_dump.py", count=1)
    first = run_local(load(spec), Options(run_dir=tmp_path / "run"))
    assert first.status == "Completed" and first.model_artifact.is_file()
    # The next archive is written into a file whose every write the kernel refuses with ENOSPC (a link planted
    # in the run directory would be refused: smtrain never writes through one).
    opened = run_files.open_for_writing
    monkeypatch.setattr(run_files, "open_for_writing", lambda path, *args, **kwargs: os.open("/dev/full", os.O_WRONLY)
                        if path.name == ".model.tar.gz.partial" else opened(path, *args, **kwargs))
    second = run_local(load(spec), Options(run_dir=tmp_path / "run"))
    assert second.status == "Failed" and second.exit_code == 1
    assert "the disk is full (ENOSPC)" in second.failure_reason
    assert not (tmp_path / "run" / "model.tar.gz").exists(), "no truncated or stale archive may be left"
    assert json.loads((tmp_path / "run" / "result.json").read_text())["status"] == "Failed"


def test_a_run_directory_is_reused_with_its_inputs_and_checkpoints(make_spec, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "part-0.csv").write_text("1,2\n")
    spec = make_spec("env_dump.py", inputs={"train": str(data)})
    for _ in range(2):
        result = run_local(load(spec), Options(run_dir=tmp_path / "run", inputs={"train": data}))
        assert result.status == "Completed", result.failure_reason
    assert (tmp_path / "run" / RUN_MARKER_FILE).is_file()
    assert (tmp_path / "run" / "algo-2" / "input" / "data" / "train" / "part-0.csv").read_text() == "1,2\n"


def _under_a_file(path: Path) -> Path:
    path.write_text("a file, not a directory\n")
    return path / "run"


def _someone_elses_directory(path: Path) -> Path:
    path.mkdir()
    (path / "notes.txt").write_text("mine\n")
    return path


@pytest.mark.parametrize(("prepare", "message"), [
    (_under_a_file, "cannot use"),
    (_someone_elses_directory, "is not empty and is not a run directory"),
])
def test_a_run_directory_that_cannot_be_used_is_one_message(make_spec, tmp_path, prepare, message):
    run_dir = prepare(tmp_path / "wanted")
    result = CliRunner().invoke(main, ["local", str(make_spec("env_dump.py")), "--run-dir", str(run_dir)])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    if run_dir.parent.is_dir():
        assert sorted(path.name for path in run_dir.iterdir()) == ["notes.txt"]


def test_no_file_of_the_run_holds_a_secret(make_spec, tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY")
    spec = make_spec("quiet.py", environment={"DB_PASSWORD": "hunter2-db-secret", "PLAIN": "x"},
                     hyperparameters={"api_token": "tok-9f8e7d6c5b4a"})
    (tmp_path / "src" / "quiet.py").write_text("import os\nopen(os.environ['SM_MODEL_DIR'] + '/model.txt', 'w')\n")
    result = run_local(load(spec), Options(run_dir=tmp_path / "run"))
    assert result.status == "Completed", result.failure_reason
    files = [path for path in result.run_dir.rglob("*") if path.is_file() and not path.is_symlink()]
    assert files and not [path for path in files if path.name == ".smtrain-environment"]
    for path in files:
        content = path.read_bytes()
        assert b"wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY" not in content and b"hunter2-db-secret" not in content, path
        # A hyperparameter reaches the script through the container's config file, as on SageMaker, and only there:
        # the host logs open with the command line, which shows it masked.
        assert (b"tok-9f8e7d6c5b4a" in content) == (path.name == "hyperparameters.json"), path
    assert "--api_token ****" in (result.run_dir / "logs" / "algo-1.log").read_text()
    request = json.loads((result.run_dir / "request.json").read_text())
    assert request["Environment"] == {"DB_PASSWORD": "****", "PLAIN": "x"}
    assert os.stat(result.run_dir / "request.json").st_size > 0 and Path(result.run_dir / RUN_MARKER_FILE).is_file()
