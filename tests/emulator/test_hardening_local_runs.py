"""`smtrain local`: nothing outside the run directory, no secret in the run's files or console, a run
directory used by one run at a time, and a full disk (or a file-size limit) failing the run with a reason."""

from __future__ import annotations

import json
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
import yaml

from orchestrator.emulator.launching.opt_ml import NO_NAMESPACES_VARIABLE
from orchestrator.emulator.local_plan import local_plan
from orchestrator.emulator.preparing.layout import open_run_directory, release_directory
from orchestrator.emulator.preparing.prepared_run import PreparedRun, prepare_run
from orchestrator.emulator.run_options import Options
from orchestrator.errors import SpecError
from orchestrator.specs.loader import load

pytestmark = pytest.mark.hardening

SECRET = "hunter22-do-not-show"


def _spec(tmp_path: Path, script: str = "import sys\nprint(sys.argv)\n", **extra) -> Path:
    (tmp_path / "train.py").write_text(script)
    document = {"name": "hard", "entry_point": "train.py", "framework_version": "2.3.0",
                "instance": {"type": "ml.c5.2xlarge", "count": 1}, "metrics": [], "max_run_seconds": 600, **extra}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def _smtrain(*args: str, limit_bytes: int | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    def limit() -> None:
        if limit_bytes is not None:  # writes past it fail with EFBIG, as a full disk fails them with ENOSPC
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))

    return subprocess.run([sys.executable, "-m", "orchestrator", *args], capture_output=True, text=True,
                          timeout=timeout, preexec_fn=limit)


@pytest.mark.slow
def test_a_script_printing_its_arguments_leaves_no_secret_in_the_log_the_console_or_the_config(tmp_path):
    spec = _spec(tmp_path, hyperparameters={"db-password": SECRET, "epochs": 1})
    run = tmp_path / "run"
    result = _smtrain("local", str(spec), "--run-dir", str(run), "--verbose")
    assert result.returncode == 0, result.stdout + result.stderr
    log = (run / "logs" / "algo-1.log").read_text()
    assert "--db-password" in log and "'--epochs', '1'" in log  # the script did print its arguments
    assert SECRET not in log and SECRET not in result.stdout + result.stderr
    config = run / "algo-1" / "input" / "config" / "hyperparameters.json"
    assert SECRET in config.read_text()  # the container gets it, as on SageMaker ...
    assert stat.S_IMODE(config.stat().st_mode) == 0o600  # ... but only this user may read it here


def test_a_home_that_cannot_hold_the_cache_is_refused_before_the_run_with_the_variable_that_moves_it(
        tmp_path, monkeypatch):
    """A CI user's HOME is often absent or read-only (HOME=/nonexistent): the run said nothing of the cache and
    stopped half-way with mkdir's traceback."""
    home = tmp_path / "home"
    home.write_text("a file, so that not even root can make ~/.cache under it\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("SMTRAIN_CACHE_DIR")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    run = tmp_path / "run"
    result = _smtrain("local", str(_spec(tmp_path)), "--run-dir", str(run))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert f"smtrain's cache {home}/.cache/smtrain cannot be written" in result.stderr
    assert "export SMTRAIN_CACHE_DIR=" in result.stderr
    assert not run.exists()


def test_a_container_path_whose_dots_leave_it_is_refused(tmp_path):
    spec = _spec(tmp_path, hyperparameters={"model-dir": "/opt/ml/model/../../../../../escaped"})
    with pytest.raises(SpecError, match=r"leads out of it \(to /escaped\)"):
        _prepare(spec, Options(run_dir=tmp_path / "run"))
    assert not (tmp_path / "escaped").exists()


def test_a_container_path_is_normalised_before_it_is_placed(tmp_path, monkeypatch):
    """Without namespaces (SAGEMAKER_BASE_DIR) a value naming /opt/ml is placed in the host's folder."""
    monkeypatch.setenv(NO_NAMESPACES_VARIABLE, "1")
    spec = _spec(tmp_path, hyperparameters={"out": "/opt/ml/model/../output/data"},
                 environment={"OUT_DIR": "/opt/ml/./model//x"})
    prepared = _prepare(spec, Options(run_dir=tmp_path / "run"))
    host = prepared.layout.hosts[0]
    config = json.loads((host.config_dir / "hyperparameters.json").read_text())
    assert json.loads(config["out"]) == str(host.root / "output" / "data")
    [process] = prepared.host_processes("id", 1234)
    assert process.env["OUT_DIR"] == str(host.root / "model" / "x")


def test_in_a_host_s_namespace_a_container_path_reaches_the_job_as_the_request_has_it(tmp_path):
    """Where each host's folder is at /opt/ml, the job gets /opt/ml values as on SageMaker: rewritten to the run
    directory, a script's `--model-dir /opt/ml/model` named that folder in its own paths and errors."""
    spec = _spec(tmp_path, hyperparameters={"out": "/opt/ml/model/../output/data"},
                 environment={"OUT_DIR": "/opt/ml/./model//x"})
    prepared = _prepare(spec, Options(run_dir=tmp_path / "run"))
    if not prepared.host_fs.namespaced:
        pytest.skip(f"no mount namespaces here ({prepared.host_fs.refused_because})")
    config = json.loads((prepared.layout.hosts[0].config_dir / "hyperparameters.json").read_text())
    assert json.loads(config["out"]) == "/opt/ml/model/../output/data"
    [process] = prepared.host_processes("id", 1234)
    assert process.env["OUT_DIR"] == "/opt/ml/./model//x"


def test_a_channel_that_holds_the_run_directory_is_copied_without_it(tmp_path):
    (tmp_path / "data.csv").write_text("1,2\n")
    spec = _spec(tmp_path, inputs={"train": "s3://bucket/train/"}, local_inputs={"train": "."})
    prepared = _prepare(spec, Options(run_dir=tmp_path / "runs" / "one"))
    channel = prepared.layout.hosts[0].data_dir / "train"
    assert (channel / "data.csv").read_text() == "1,2\n"
    assert list((channel / "runs").iterdir()) == []  # the run directory (marked) is left out of its own channel


def test_a_run_directory_in_use_is_refused_naming_the_process(tmp_path):
    run = tmp_path / "run"
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys
            from pathlib import Path
            from orchestrator.emulator.preparing.layout import open_run_directory, release_directory
            open_run_directory(Path({str(run)!r}))
            print("held", flush=True)
            sys.stdin.read()
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        (run / "logs" / "algo-1.log").write_text("the first run's log\n")
        with pytest.raises(SpecError, match=rf"in use by a run still going: process {holder.pid} \(python"):
            open_run_directory(run)
        assert (run / "logs" / "algo-1.log").is_file(), "the running run's tree must be left alone"
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
    open_run_directory(run)  # free again once that process has ended
    assert not (run / "logs" / "algo-1.log").exists()


@pytest.mark.slow
def test_a_log_that_cannot_be_written_fails_the_run_with_a_reason(tmp_path):
    spec = _spec(tmp_path, "import sys, time\nfor _ in range(4000):\n    print('x' * 100)\ntime.sleep(600)\n")
    run = tmp_path / "run"
    started = time.monotonic()
    result = _smtrain("local", str(spec), "--run-dir", str(run), "--stall-timeout", "0", limit_bytes=200_000)
    assert result.returncode == 1, result.stdout + result.stderr
    assert time.monotonic() - started < 200, "the run must stop at once, not wait for the job or a stall timeout"
    assert "Traceback" not in result.stderr
    document = json.loads((run / "result.json").read_text())
    assert document["status"] == "Failed"
    assert "LogError: writing" in document["failure_reason"] and "algo-1.log" in document["failure_reason"]


@pytest.mark.slow
def test_a_channel_that_cannot_be_copied_fails_the_run_with_a_reason(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "big.bin").write_bytes(b"\0" * 300_000)
    spec = _spec(tmp_path, inputs={"train": "s3://bucket/train/"}, local_inputs={"train": "data"},
                 source_dir="src")
    (tmp_path / "src").mkdir()
    (tmp_path / "train.py").rename(tmp_path / "src" / "train.py")
    run = tmp_path / "run"
    result = _smtrain("local", str(spec), "--run-dir", str(run), limit_bytes=200_000)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and "ChannelError: copying channel train" in result.stderr
    document = json.loads((run / "result.json").read_text())
    assert document["status"] == "Failed" and "ChannelError" in document["failure_reason"]


@pytest.mark.slow
@pytest.mark.parametrize("channel", ["s3://bucket/train/", {"uri": "s3://bucket/train/", "distribution": "ShardedByS3Key"}],
                         ids=["replicated", "sharded"])
def test_link_inputs_channels_are_read_only_to_the_job(tmp_path, channel):
    """A ShardedByS3Key share was linked symbolically, to the user's file outside the read-only mount: the job's
    write reached the user's data."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.csv").write_text("a\n")
    script = textwrap.dedent("""
        import errno, os
        path = os.path.join(os.environ["SM_CHANNEL_TRAIN"], "a.csv")
        print("read", open(path).read().strip())
        for change in (lambda: open(path, "a").write("changed\\n"), lambda: os.remove(path),
                       lambda: open(path + ".new", "w").close()):
            try:
                change()
            except OSError as error:
                assert error.errno == errno.EROFS, error
                print("refused:", os.strerror(error.errno))
            else:
                raise SystemExit("the channel took a change")
    """)
    (tmp_path / "src").mkdir()
    spec = _spec(tmp_path / "src", script, inputs={"train": channel}, local_inputs={"train": "../data"},
                 source_dir=".")
    result = _smtrain("local", str(spec), "--run-dir", str(tmp_path / "run"), "--link-inputs", "--verbose")
    assert result.returncode == 0, result.stdout + result.stderr
    shown = " ".join((result.stderr + result.stdout).split())
    assert "mounted read-only in each host" in shown and "read a" in shown
    assert shown.count("refused: Read-only file system") == 3
    assert sorted(path.name for path in data.iterdir()) == ["a.csv"] and (data / "a.csv").read_text() == "a\n"


@pytest.mark.slow
@pytest.mark.parametrize("distribution", ["FullyReplicated", "ShardedByS3Key"])
def test_link_inputs_copies_a_file_on_another_file_system_so_the_job_cannot_write_to_it(tmp_path, distribution):
    """A file on another file system than the run cannot be hard-linked: it was linked symbolically, to the user's
    file outside the read-only mount, and the job's write reached it."""
    other = Path("/dev/shm")
    if not other.is_dir() or other.stat().st_dev == tmp_path.stat().st_dev:
        pytest.skip("needs /dev/shm on another file system than the test's temporary directory")
    data = Path(tempfile.mkdtemp(prefix="smtrain-link-inputs-", dir=other))
    try:
        (data / "a.csv").write_text("a\n")
        script = textwrap.dedent("""
            import errno, os
            path = os.path.join(os.environ["SM_CHANNEL_TRAIN"], "a.csv")
            try:
                open(path, "a").write("changed\\n")
            except OSError as error:
                assert error.errno == errno.EROFS, error
                print("refused:", os.strerror(error.errno))
            print("read", open(path).read().split())
        """)
        spec = _spec(tmp_path, script, inputs={"train": {"uri": "s3://bucket/train/", "distribution": distribution}},
                     local_inputs={"train": str(data)}, source_dir="src")
        (tmp_path / "src").mkdir()
        (tmp_path / "train.py").rename(tmp_path / "src" / "train.py")
        result = _smtrain("local", str(spec), "--run-dir", str(tmp_path / "run"), "--link-inputs", "--verbose")
        assert result.returncode == 0, result.stdout + result.stderr
        assert (data / "a.csv").read_text() == "a\n"
        shown = " ".join((result.stderr + result.stdout).split())
        assert "refused: Read-only file system" in shown and "read ['a']" in shown
        assert "1 file of channel train could not be hard-linked into the run directory" in shown
        assert f"so each host got a copy, out of the job's reach (a symbolic link would lead its writes to yours): " \
               f"{data / 'a.csv'}" in shown
    finally:
        shutil.rmtree(data)


@pytest.mark.slow
def test_link_inputs_without_namespaces_keeps_the_users_data_when_the_job_deletes_renames_or_adds_files(
        tmp_path, monkeypatch):
    monkeypatch.setenv("SMTRAIN_NO_NAMESPACES", "1")
    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    (data / "a.csv").write_text("a\n")
    (data / "sub" / "b.csv").write_text("b\n")
    (data / "c.csv").write_text("c\n")
    script = textwrap.dedent("""
        import os, shutil
        channel = os.environ["SM_CHANNEL_TRAIN"]
        os.remove(os.path.join(channel, "a.csv"))
        shutil.rmtree(os.path.join(channel, "sub"))
        os.rename(os.path.join(channel, "c.csv"), os.path.join(channel, "moved.csv"))
        with open(os.path.join(channel, "new.csv"), "w") as handle:
            handle.write("new\\n")
        print("changed the channel")
    """)
    spec = _spec(tmp_path, script, inputs={"train": "s3://bucket/train/"}, local_inputs={"train": "data"},
                 source_dir="src")
    (tmp_path / "src").mkdir()
    (tmp_path / "train.py").rename(tmp_path / "src" / "train.py")
    result = _smtrain("local", str(spec), "--run-dir", str(tmp_path / "run"), "--link-inputs")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "a write into an existing file changes yours" in " ".join((result.stderr + result.stdout).split())
    assert sorted(str(path.relative_to(data)) for path in data.rglob("*")) == ["a.csv", "c.csv", "sub", "sub/b.csv"]
    assert (data / "a.csv").read_text() == "a\n" and (data / "sub" / "b.csv").read_text() == "b\n"


def _prepare(spec: Path, settings: Options) -> PreparedRun:
    """The run prepared as `run_local` prepares it: planned for this machine first, then written out; the run
    directory let go as `run_local` lets go of it when its run ends."""
    prepared = prepare_run(local_plan(load(spec), settings), settings)
    release_directory(prepared.layout.root)
    return prepared
