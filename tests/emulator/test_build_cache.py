"""torch's JIT extensions build in smtrain's cache, one folder per torch and Python version, and a build lock that
a stopped compile left there is removed by the next run that finds no other run using the folder."""

from __future__ import annotations

import fcntl
import sys
from importlib import metadata

from orchestrator.emulator.launching import build_cache


def test_the_extensions_folder_is_in_smtrains_cache_keyed_by_python_and_torch(tmp_path, monkeypatch):
    monkeypatch.setenv("SMTRAIN_CACHE_DIR", str(tmp_path))

    folder = build_cache.extensions_dir(sys.executable)

    version = f"py{sys.version_info.major}.{sys.version_info.minor}-torch{metadata.version('torch')}"
    assert folder == tmp_path / "torch_extensions" / version


def test_a_run_alone_removes_the_build_locks_of_killed_compiles_as_it_starts(tmp_path):
    folder = tmp_path / "torch_extensions" / "py3.11-torch2.13.0+cpu"
    (folder / "cpu_adam").mkdir(parents=True)
    (folder / "cpu_adam" / "lock").write_text("")
    (folder / "cpu_adam" / "build.ninja").write_text("")

    with build_cache.shared(folder) as removed:
        assert removed == [folder / "cpu_adam" / "lock"]
        assert not (folder / "cpu_adam" / "lock").exists()
    assert (folder / "cpu_adam" / "build.ninja").exists(), "only the lock goes; the build's files stay"


def test_a_lock_is_kept_while_another_run_uses_the_folder_and_removed_when_the_last_run_ends(tmp_path):
    folder = tmp_path / "ext"
    (folder / "op").mkdir(parents=True)
    lock = folder / "op" / "lock"
    lock.write_text("")
    with open(tmp_path / "ext.users", "w") as other_run:
        fcntl.flock(other_run, fcntl.LOCK_SH)  # another run is building there: its lock is live

        with build_cache.shared(folder) as removed:
            assert removed == [] and lock.exists()
            fcntl.flock(other_run, fcntl.LOCK_UN)  # the other run ends while this one runs
    assert not lock.exists(), "the last run to end removes what a killed compile left"


def test_a_lock_below_torch_s_own_python_and_accelerator_folder_is_removed_too(tmp_path):
    """Where a host's namespace shows the folder at ~/.cache/torch_extensions, TORCH_EXTENSIONS_DIR is unset as in
    the container and torch builds one folder deeper (`py311_cpu/<extension>`): a killed compile's lock there
    blocked every later run."""
    folder = tmp_path / "torch_extensions" / "py3.11-torch2.13.0+cpu"
    (folder / "py311_cpu" / "cpu_adam").mkdir(parents=True)
    (folder / "py311_cpu" / "cpu_adam" / "lock").write_text("")

    with build_cache.shared(folder) as removed:
        assert removed == [folder / "py311_cpu" / "cpu_adam" / "lock"]
