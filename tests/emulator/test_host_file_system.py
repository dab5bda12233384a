"""Every process of an emulated host sees the host's folder at /opt/ml; the machine's own /opt/ml stays untouched.

The runs go as this user (root here) and as an unprivileged one (`setpriv` to nobody), for each launcher.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tarfile
import uuid
from pathlib import Path

import pytest
import yaml

from orchestrator.emulator.launching import build_cache, opt_ml
from orchestrator.emulator.launching.hostfs import HOST_TMP_VARIABLE
from orchestrator.emulator.local_run import Options, run_local
from orchestrator.emulator.preparing.deviations import DEVIATIONS
from orchestrator.specs.loader import load
from unprivileged import as_nobody, shared_dir  # noqa: F401 (a fixture)

SCRIPTS = Path(__file__).parent / "scripts"
LAUNCHERS = {
    "python": {"instance": {"type": "ml.c5.2xlarge", "count": 2}, "distribution": {"mode": "none"}},
    "torchrun": {"instance": {"type": "ml.g5.2xlarge", "count": 2}, "distribution": {"mode": "torch_distributed"}},
    "mpirun": {"instance": {"type": "ml.c5.2xlarge", "count": 2},
               "distribution": {"mode": "mpi", "processes_per_host": 2}},
}
PER_HOST = {"python": 1, "torchrun": 1, "mpirun": 2}


def _write_spec(directory: Path, launcher: str, entry_point: str = "literal_opt_ml.py") -> Path:
    shutil.copytree(SCRIPTS, directory / "src")
    spec = {"name": "opt-ml", "entry_point": entry_point, "source_dir": "src", "framework_version": "2.3.0",
            "metrics": [], "max_run_seconds": 600, **LAUNCHERS[launcher]}
    path = directory / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _run_as(user: str, spec: Path, run_dir: Path) -> subprocess.CompletedProcess[str]:
    home = spec.parent
    env = {**os.environ, "HOME": str(home), "SMTRAIN_CACHE_DIR": str(home / "cache")}
    env.pop("SMTRAIN_NO_NAMESPACES", None)
    prefix: list[str] = []
    python = sys.executable
    if user == "nobody":
        prefix, python = as_nobody(home)
    command = [*prefix, python, "-m", "orchestrator", "local", str(spec), "--run-dir", str(run_dir), "-q"]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=home, timeout=600, check=False)


@pytest.mark.slow
@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
@pytest.mark.parametrize("user", ["this user", "nobody"])
def test_a_literal_opt_ml_write_lands_in_the_emulated_host(shared_dir, launcher, user):
    before = opt_ml.snapshot()
    for path in [shared_dir, *shared_dir.rglob("*")]:
        path.chmod(0o777)
    spec = _write_spec(shared_dir, launcher)
    for path in shared_dir.rglob("*"):
        path.chmod(0o777 if path.is_dir() else 0o666)
    result = _run_as(user, spec, shared_dir / "run")
    assert result.returncode == 0, result.stdout + result.stderr
    run = shared_dir / "run"
    with tarfile.open(run / "model.tar.gz") as tar:
        assert tar.getnames() == ["model.pth"]
        assert tar.extractfile("model.pth").read() == b"weights"
    notes = [(path.parent.parent.parent.name, json.loads(path.read_text()))
             for path in run.glob("algo-*/output/data/rank-*.json")]
    assert sorted(note["rank"] for _, note in notes) == list(range(2 * PER_HOST[launcher]))
    for host_folder, note in notes:  # each process wrote into its own host's /opt/ml, and saw its code there
        assert host_folder == f"algo-{note['rank'] // PER_HOST[launcher] + 1}" and note["code"]
    assert opt_ml.snapshot() == before
    if not before:
        assert not os.path.lexists("/opt/ml")


def test_without_namespaces_the_literal_paths_are_named_before_the_run(make_spec, tmp_path, monkeypatch,
                                                                      notice_recorder):
    monkeypatch.setenv(opt_ml.NO_NAMESPACES_VARIABLE, "1")
    notices = notice_recorder.notices
    result = run_local(load(make_spec("env_dump.py", count=1)), Options(run_dir=tmp_path / "run"), notice_recorder)
    assert result.status == "Completed", result.failure_reason
    source = tmp_path / "src" / "literal_opt_ml.py"
    lines = [number for number, line in enumerate(source.read_text().splitlines(), 1) if "/opt/ml" in line]
    assert lines
    named = [text for text in notices if text.startswith(f"{source}:")]
    assert [text.split(":")[1] for text in named] == [str(number) for number in lines]
    assert any("no mount namespace here (SMTRAIN_NO_NAMESPACES=1)" in text for text in notices)
    seen = json.loads(next(result.run_dir.glob("algo-1/output/data/seen-*.json")).read_text())
    assert "SMTRAIN_HOSTFS" not in seen["env"] and seen["env"]["SAGEMAKER_BASE_DIR"] == str(result.run_dir / "algo-1")


def test_a_write_to_the_machines_opt_ml_is_found(tmp_path):
    root = tmp_path / "opt-ml"
    (root / "model").mkdir(parents=True)
    (root / "model" / "old.pth").write_bytes(b"x")
    before = opt_ml.snapshot(str(root))
    assert opt_ml.escaped(before, opt_ml.snapshot(str(root))) == []
    (root / "model" / "model.pth").write_bytes(b"weights")
    assert opt_ml.escaped(before, opt_ml.snapshot(str(root))) == [str(root / "model"), str(root / "model/model.pth")]
    assert opt_ml.snapshot(str(tmp_path / "absent")) == {}


def test_without_namespaces_the_notice_says_the_host_names_do_not_resolve(tmp_path):
    """Without a namespace no /etc/hosts names algo-N: the notice said /opt/ml and /tmp were the machine's, not
    that a script meeting at algo-1 fails, and `--explain` said the names never resolve, though with namespaces
    they do."""
    notice = opt_ml.fallback_notice(opt_ml.HostFileSystem(False, "SMTRAIN_NO_NAMESPACES=1"), tmp_path, ())[0]
    assert "the host names algo-N do not resolve (no /etc/hosts naming them" in notice
    assert ("every host algo-N is at 127.0.0.1 (each host's /etc/hosts names them; without mount namespaces they do "
            "not resolve)") in DEVIATIONS[0]


def test_without_namespaces_the_notice_says_home_the_build_cache_and_the_checkpoint_path_differ(tmp_path):
    """With namespaces they are /root, ~/.cache/torch_extensions, /tmp/torchinductor_<user> and the checkpoint path
    itself; the fallback
    notice named only /opt/ml, /tmp and /etc/hosts as the machine's."""
    notice = opt_ml.fallback_notice(opt_ml.HostFileSystem(False, "SMTRAIN_NO_NAMESPACES=1"), tmp_path, ())[0]
    assert "HOME is the host's folder container-paths/<host>/root of the run, not /root" in notice
    assert "TORCH_EXTENSIONS_DIR and TORCHINDUCTOR_CACHE_DIR name smtrain's build caches" in notice
    assert ("a checkpoint path outside /opt/ml is a folder under container-paths/ (values naming it are "
            "rewritten)") in notice


def test_a_checkpoint_path_no_namespace_can_show_is_rewritten_and_said_before_the_run(tmp_path):
    """A new folder in the machine's / (/checkpoints) cannot be made in a host's namespace without writing to the
    machine: the job is given its folder under container-paths/ and the run says why. One below an existing
    folder (/opt/checkpoints) is shown at its path, and values naming it reach the job unchanged."""
    top = f"/smtrain-checkpoints-{uuid.uuid4().hex}"
    unplaced = opt_ml.HostFileSystem(True).placing(top, tmp_path / "extensions", tmp_path / "inductor", sys.executable)
    assert unplaced.in_place() == ("/opt/ml",)
    assert opt_ml.fallback_notice(unplaced, tmp_path, ()) == [
        f"checkpoint.local_path {top} is a new folder in this machine's /, which a host's namespace cannot show "
        "without writing there: the job is given its host's folder under the run's container-paths/ instead (values "
        "naming the path are rewritten to it)"]
    placed = opt_ml.HostFileSystem(True).placing("/opt/checkpoints", tmp_path / "extensions", tmp_path / "inductor",
                                                    sys.executable)
    assert placed.in_place() == ("/opt/ml", "/opt/checkpoints")
    assert opt_ml.fallback_notice(placed, tmp_path, ()) == []


def _enter_with_own_tmp(host_tmp: Path, host_root: Path, script: str) -> subprocess.CompletedProcess[str]:
    """`script` run by this interpreter inside a host's namespace whose /tmp is `host_tmp`."""
    command = [*opt_ml.HostFileSystem(True).enter(host_root), sys.executable, "-I", "-S", "-c", script]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False,
                            env={**os.environ, HOST_TMP_VARIABLE: str(host_tmp)})
    if result.returncode == 125:
        pytest.skip(f"no mount namespaces here: {result.stderr.strip()}")
    return result


def test_the_machine_s_tmp_files_are_bound_back_each_itself_over_one_inode_of_mount_points(tmp_path):
    """Each host binds every entry of the machine's /tmp back into its own: a new empty file per entry, on every
    host of every run, was most of the system time smtrain local added (hundreds of entries on a disk where each
    new inode costs): the files' mount points are links of one. Each still shows its own content, and a write to
    it reaches the machine's file."""
    probes = {f"/tmp/smtrain-bound-back-{uuid.uuid4().hex}-{index}": f"content {index}\n" for index in range(3)}
    for path, content in probes.items():
        Path(path).write_text(content)
    host_tmp, host_root = tmp_path / "host-tmp", tmp_path / "algo-1"
    host_tmp.mkdir()
    (host_root / "code").mkdir(parents=True)
    first = next(iter(probes))
    script = (f"import json; print(json.dumps({{p: open(p).read() for p in {sorted(probes)!r}}})); "
              f"open({first!r}, 'a').write('from the job\\n'); open('/tmp/the-job-s-own', 'w').write('own\\n')")
    try:
        result = _enter_with_own_tmp(host_tmp, host_root, script)
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout) == probes  # each entry is the machine's own file, not its stand-in
        assert Path(first).read_text() == probes[first] + "from the job\n"
        assert (host_tmp / "the-job-s-own").read_text() == "own\n" and not os.path.exists("/tmp/the-job-s-own")
        mount_points = [entry for entry in host_tmp.iterdir() if entry.is_file() and entry.name != "the-job-s-own"]
        assert {os.path.basename(path) for path in probes} <= {entry.name for entry in mount_points}
        assert len({entry.stat().st_ino for entry in mount_points}) == 1
    finally:
        for path in probes:
            Path(path).unlink(missing_ok=True)


def test_entering_a_host_s_namespace_runs_no_ldconfig(tmp_path, monkeypatch):
    """hostfs.py loads the C library in every host's namespace, its MPI daemons and pip's container: finding it
    with ctypes.util.find_library ran `/sbin/ldconfig -p` each time."""
    started: list[object] = []

    def record(self, args, *rest, **options):
        started.append(args)
        raise OSError("no process in this test")

    monkeypatch.setattr(subprocess.Popen, "__init__", record)
    loaded = importlib.util.spec_from_file_location("hostfs_fresh", opt_ml.HOSTFS)
    loaded.loader.exec_module(importlib.util.module_from_spec(loaded))
    assert started == []


def test_apparmor_s_refused_uid_map_is_told_with_its_sysctl(tmp_path):
    """Ubuntu 23.10+ and GitHub's ubuntu-24.04 runners: unshare succeeds and AppArmor refuses the uid map (the
    refusal tests, without AppArmor in this kernel, refuse the mount after unshare instead). The notice gives the
    sysctl that allows it; a refusal the user asked for gets none."""
    reason = "mapping uid 1001 into a user namespace: Operation not permitted"
    refused = opt_ml.HostFileSystem(False, reason, opt_ml.allowing_change(reason))
    notice = opt_ml.fallback_notice(refused, tmp_path, ())[0]
    assert f"no mount namespace here ({reason})" in notice
    assert "`sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`" in notice
    assert opt_ml.allowing_change(f"{opt_ml.NO_NAMESPACES_VARIABLE}=1") is None


CONTAINER_PATHS_SEEN = {
    "SM_MODEL_DIR": "/opt/ml/model", "SM_CHANNEL_TRAIN": "/opt/ml/input/data/train",
    "SM_OUTPUT_DATA_DIR": "/opt/ml/output/data", "SM_OUTPUT_DIR": "/opt/ml/output", "SM_INPUT_DIR": "/opt/ml/input",
    "SM_INPUT_CONFIG_DIR": "/opt/ml/input/config", "SM_OUTPUT_INTERMEDIATE_DIR": "/opt/ml/output/intermediate",
    "SAGEMAKER_BASE_DIR": None, "PWD": "/opt/ml/code", "SM_HP_MODEL_PATH": "/opt/ml/model/best.pt",
    "cwd": "/opt/ml/code", "code on sys.path": ["/opt/ml/code", "/opt/ml/code"], "code on PYTHONPATH": ["/opt/ml/code"],
    "training_env": {"model_dir": "/opt/ml/model", "channel_input_dirs": {"train": "/opt/ml/input/data/train"},
                     "output_dir": "/opt/ml/output"},
    "HOME": "/root", "~": "/root", "the machine's home file seen": False,
    "TORCH_EXTENSIONS_DIR": None, "torch extensions": ["built-by-an-earlier-run"],
    "TORCHINDUCTOR_CACHE_DIR": None, "torch.compile's cache": ["compiled-by-an-earlier-run"],
    "SM_HP_CHECKPOINT_DIR": "/opt/checkpoints/run",
}


def _container_paths_seen(run_dir: Path) -> dict[int, dict]:
    seen = {}
    for log in run_dir.glob("logs/algo-*.log"):
        for line in log.read_text().splitlines():
            _, found, rest = line.partition("container paths of rank ")
            if found:
                rank, _, document = rest.partition(": ")
                seen[int(rank)] = json.loads(document)
    return seen


@pytest.mark.slow
@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
def test_every_path_a_rank_is_given_is_the_container_s_and_its_error_names_the_user_s_line(tmp_path, launcher,
                                                                                          monkeypatch):
    """On SageMaker the toolkit gives a job /opt/ml paths and starts it in /opt/ml/code; with each host's folder at
    /opt/ml, the emulation gave the run directory's real paths instead, so a job's own errors named
    `.../runs/<run>/algo-2/input/data/train/x.csv`. The cause still names the user's file and line.

    Outside /opt/ml the job is in the container too: HOME is /root (it was the run's container-paths/<host>/root),
    none of the machine's own /root is there, torch builds its extensions in ~/.cache/torch_extensions, which is
    smtrain's shared build cache (TORCH_EXTENSIONS_DIR named that cache), torch.compile's default folder,
    /tmp/torchinductor_<user>, is smtrain's shared one (TORCHINDUCTOR_CACHE_DIR named it), and a checkpoint path
    outside /opt/ml reaches the job as the request has it (it was rewritten to container-paths/), with what it saves there kept in
    the run and the machine's /opt unchanged."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "present.csv").write_text("1,2\n")
    spec = _write_spec(tmp_path, launcher, entry_point="container_paths.py")
    document = yaml.safe_load(spec.read_text())
    machine_home_file = Path("/root") / f".smtrain-machine-home-{uuid.uuid4().hex}"
    printed = tmp_path / "ranks-printed"
    printed.mkdir()
    document.update(hyperparameters={"model_path": "/opt/ml/model/best.pt", "checkpoint_dir": "/opt/checkpoints/run"},
                    inputs={"train": str(data)}, environment={"MACHINE_HOME_FILE": str(machine_home_file),
                                                     "RANKS_PRINTED_DIR": str(printed)},
                    checkpoint={"s3_uri": "s3://bucket/ckpt/", "local_path": "/opt/checkpoints"})
    spec.write_text(yaml.safe_dump(document))
    entered = subprocess.run([*opt_ml.HostFileSystem(True).enter(tmp_path), "true"], capture_output=True, text=True,
                             timeout=60, check=False)
    if entered.returncode != 0:
        pytest.skip(f"no mount namespaces here ({entered.stderr.strip()}): the job is given its host's folder")
    if not os.access("/root", os.W_OK):
        pytest.skip("the machine's /root cannot be written here: no file of its own to look for in the job's home")
    monkeypatch.setenv("SMTRAIN_CACHE_DIR", str(tmp_path / "cache"))  # as _run_as gives the run
    extensions = build_cache.extensions_dir(sys.executable)
    (extensions / "built-by-an-earlier-run").mkdir(parents=True)
    (build_cache.inductor_cache_dir(sys.executable) / "compiled-by-an-earlier-run").mkdir(parents=True)
    machine_opt = sorted(os.listdir("/opt"))
    machine_home_file.write_text("the user's own\n")
    try:
        result = _run_as("this user", spec, tmp_path / "run")
    finally:
        machine_home_file.unlink()
    assert result.returncode == 1, result.stdout + result.stderr
    seen = _container_paths_seen(tmp_path / "run")
    assert sorted(seen) == list(range(2 * PER_HOST[launcher]))
    for rank, paths in seen.items():
        assert paths == CONTAINER_PATHS_SEEN, rank
        host = f"algo-{rank // PER_HOST[launcher] + 1}"
        saved = tmp_path / "run" / "container-paths" / host / "opt" / "checkpoints" / "run" / f"rank-{rank}.txt"
        assert saved.read_text() == "saved\n"
    assert sorted(os.listdir("/opt")) == machine_opt
    assert sorted(path.name for path in extensions.iterdir()) == ["built-by-an-earlier-run"]
    source = (tmp_path / "src" / "container_paths.py").read_text().splitlines()
    line = next(number for number, text in enumerate(source, 1) if "missing.csv" in text)
    reason = json.loads((tmp_path / "run" / "result.json").read_text())["failure_reason"]
    assert reason.splitlines()[0] == (
        f"algo-2 (rank {2 * PER_HOST[launcher] - 1}) failed: FileNotFoundError: [Errno 2] No such file or "
        f"directory: '/opt/ml/input/data/train/missing.csv' at src/container_paths.py:{line}")
