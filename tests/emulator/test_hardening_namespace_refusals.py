"""`smtrain local` as an ordinary user where the kernel refuses namespaces, as on CI runners: the run completes,
says once what differs and the change that gives the full emulation, and leaves no process behind.

Each refusal is the kernel's own, made inside namespaces of the test (tests/support/unprivileged.py), never by
changing the machine:
- `user.max_user_namespaces=0` (Debian, RHEL-likes): the limit set to 0 in a user namespace made for the test,
  which binds every namespace below it; unshare fails with ENOSPC;
- Docker's default seccomp profile: a seccomp filter answering EPERM to unshare;
- AppArmor's `kernel.apparmor_restrict_unprivileged_userns=1` (Ubuntu 23.10+, GitHub's ubuntu-24.04 runners):
  unshare succeeds and what follows is refused with EPERM; the uid map's refusal needs AppArmor in the kernel,
  so the mount's is reproduced, by a seccomp filter answering EPERM to mount: the step after unshare that fails;
- `user.max_pid_namespaces=0`: mount namespaces given, PID namespaces refused (ENOSPC).
"""

from __future__ import annotations

import os
import subprocess
import textwrap
import time
import uuid
from pathlib import Path

import psutil
import pytest
import yaml
from unprivileged import as_nobody, refusing, shared_dir, with_zero_limit  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.hardening, pytest.mark.slow]

_JOB = """
    import subprocess, sys, hookpkg_mod
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(900)", sys.argv[-1]], start_new_session=True,
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print("value", hookpkg_mod.VALUE, flush=True)
"""

REFUSALS = {  # the words that make the refusal, what the notice names as the reason, and the change it gives
    "max_user_namespaces=0": (lambda: with_zero_limit("max_user_namespaces"),
                              "unshare(CLONE_NEWUSER | CLONE_NEWNS): No space left on device",
                              "`sudo sysctl -w user.max_user_namespaces=15000`"),
    "seccomp refuses unshare": (lambda: refusing("unshare"),
                                "unshare(CLONE_NEWUSER | CLONE_NEWNS): Operation not permitted",
                                "`docker run --security-opt seccomp=unconfined`"),
    "unshare ok, mount refused": (lambda: refusing("mount"), "mount None on /: Operation not permitted",
                                  "`sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`"),
}


def _write_project(directory: Path, token: str) -> Path:
    """Two hosts whose job needs a local package from requirements.txt (pip and its build run contained) and
    leaves a daemon behind when it ends."""
    source = directory / "src"
    (source / "hookpkg").mkdir(parents=True)
    (source / "hookpkg" / "setup.py").write_text(
        "from setuptools import setup\nsetup(name='hookpkg', version='0.1', py_modules=['hookpkg_mod'])\n")
    (source / "hookpkg" / "hookpkg_mod.py").write_text("VALUE = 7\n")
    (source / "requirements.txt").write_text("./hookpkg\n")
    (source / "train.py").write_text(textwrap.dedent(_JOB))
    spec = directory / "spec.yaml"
    spec.write_text(yaml.safe_dump({"name": "refused", "entry_point": "train.py", "source_dir": "src",
                                    "framework_version": "2.3.0", "instance": {"type": "ml.c5.2xlarge", "count": 2},
                                    "max_run_seconds": 600, "hyperparameters": {"token": token}}))
    for path in [directory, *directory.rglob("*")]:
        path.chmod(0o777 if path.is_dir() else 0o666)
    return spec


def _run_refused(refusal: list[str], directory: Path) -> tuple[subprocess.CompletedProcess[str], str, list[str]]:
    """smtrain local as nobody under `refusal`: its result, the token its job's daemon carries, and the entries it
    left in this machine's /tmp."""
    token = f"smtrain-refused-{uuid.uuid4().hex}"
    spec = _write_project(directory, token)
    nobody, python = as_nobody(directory)
    env = {**os.environ, "HOME": str(directory), "SMTRAIN_CACHE_DIR": str(directory / "cache"),
           "PIP_NO_INDEX": "1", "PIP_NO_BUILD_ISOLATION": "0"}  # pip's spelling of "no isolated build": offline
    env.pop("SMTRAIN_NO_NAMESPACES", None)
    started = time.time()
    result = subprocess.run([*refusal, *nobody, python, "-m", "orchestrator", "local", str(spec), "--run-dir",
                             str(directory / "run")], capture_output=True, text=True, env=env, cwd=directory,
                            timeout=600, check=False)
    made_by_nobody = [(entry.path, entry.stat(follow_symlinks=False)) for entry in os.scandir("/tmp")]
    left = [path for path, status in made_by_nobody if status.st_uid == 65534 and status.st_ctime >= started]
    return result, token, left


def _daemons(token: str) -> list[psutil.Process]:
    found = [process for process in psutil.process_iter(["cmdline"]) if token in (process.info["cmdline"] or [])]
    for process in found:  # the assertion fails on them; they go anyway
        process.kill()
    return found


@pytest.mark.parametrize("refusal", sorted(REFUSALS))
def test_a_refused_namespace_falls_back_says_so_once_with_the_change_and_leaves_nothing(shared_dir, refusal):
    """On `unshare ok, mount refused` pip ran in the half-made namespace hostfs.py had tried for it and failed
    (`OSError: [Errno 12] Cannot allocate memory`: its first child had been the PID namespace's first process), and
    no notice said how to get the namespaces."""
    words, reason, change = REFUSALS[refusal]
    result, token, left = _run_refused(words(), shared_dir)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "Traceback" not in output
    notices = [line for line in output.splitlines() if "no mount namespace here" in line]
    assert len(notices) == 1, output
    assert f"no mount namespace here ({reason})" in notices[0]
    for differs in ("a literal /opt/ml path", "/tmp is this machine's", "algo-N do not resolve", "kill -9"):
        assert differs in notices[0]
    assert change in notices[0] and "docs/host-file-system.md" in notices[0]
    for host in ("algo-1", "algo-2"):
        assert "value 7" in (shared_dir / "run" / "logs" / f"{host}.log").read_text()
    assert _daemons(token) == []
    assert left == []


def test_without_pid_namespaces_the_run_keeps_its_mount_namespaces_and_says_what_outlives(shared_dir):
    """`user.max_pid_namespaces=0`: each host still sees its /opt/ml; the run said nothing of the one guarantee
    it loses (no process outliving smtrain's own kill -9)."""
    result, token, left = _run_refused(with_zero_limit("max_pid_namespaces"), shared_dir)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "Traceback" not in output and "no mount namespace here" not in output
    notices = [line for line in output.splitlines() if "no PID namespace here" in line]
    assert len(notices) == 1 and "not after its own kill -9" in notices[0], output
    for host in ("algo-1", "algo-2"):
        assert "value 7" in (shared_dir / "run" / "logs" / f"{host}.log").read_text()
    assert _daemons(token) == []
    assert left == []
