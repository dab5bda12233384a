"""Each emulated host's own home and /tmp: a job writing ~/.netrc, ~/.aws/credentials or
~/.ssh/known_hosts writes them inside the run, never into the user's home, and a file it writes to /tmp does not
outlive the run (the container has its own /tmp)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.hardening

_JOB = """
    import os, pathlib, sys
    home = pathlib.Path(os.path.expanduser("~"))
    for name in (".netrc", ".aws/credentials", ".ssh/known_hosts"):
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text("written by the job\\n")
    pathlib.Path(sys.argv[-1]).write_text("tmp\\n")
    print("wrote", home, os.path.exists(sys.argv[-1]), flush=True)
"""


@pytest.mark.slow
def test_a_job_writes_its_home_and_tmp_files_inside_the_run(tmp_path):
    user_home = tmp_path / "user-home"
    user_home.mkdir()
    probe = f"/tmp/smtrain-host-tmp-{uuid.uuid4().hex}"
    (tmp_path / "train.py").write_text(textwrap.dedent(_JOB))
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"name": "home", "entry_point": "train.py", "framework_version": "2.3.0",
                                    "instance": {"type": "ml.c5.2xlarge", "count": 2}, "max_run_seconds": 600,
                                    "hyperparameters": {"probe": probe}}))
    run = tmp_path / "run"
    result = subprocess.run([sys.executable, "-m", "orchestrator", "local", str(spec), "--run-dir", str(run)],
                            capture_output=True, text=True, timeout=300, cwd=tmp_path,
                            env={**os.environ, "HOME": str(user_home)})
    try:
        assert result.returncode == 0, result.stdout + result.stderr
        assert not {".netrc", ".aws", ".ssh"} & {entry.name for entry in user_home.iterdir()}  # (smtrain's .cache)
        namespaced = "no mount namespace here" not in result.stdout + result.stderr
        for host in ("algo-1", "algo-2"):
            home = run / "container-paths" / host / "root"
            assert (home / ".aws" / "credentials").read_text() == "written by the job\n"
            assert (home / ".netrc").is_file() and (home / ".ssh" / "known_hosts").is_file()
            seen = "/root" if namespaced else home  # the container's HOME, its folder bound there
            assert f"wrote {seen} True" in (run / "logs" / f"{host}.log").read_text()
        if not namespaced:
            pytest.skip("no mount namespaces on this machine: /tmp stays the machine's (docs/security.md)")
        assert not os.path.exists(probe)  # the host's /tmp ended with the run
        assert not (run / "host-tmp").exists()
    finally:
        Path(probe).unlink(missing_ok=True)


@pytest.mark.slow
def test_a_job_s_temporary_files_go_to_its_host_s_tmp_even_where_this_shell_sets_tmpdir(tmp_path):
    """CI runners often set TMPDIR: inherited, it sent the job's tempfile (and Open MPI's session directory) past
    the host's own /tmp into that folder, where they stayed after the run."""
    user_tmp = tmp_path / "user-tmp"
    user_tmp.mkdir()
    (tmp_path / "train.py").write_text("import tempfile\nprint('tempdir', tempfile.mkdtemp(), flush=True)\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"name": "tmpdir", "entry_point": "train.py", "framework_version": "2.3.0",
                                    "instance": {"type": "ml.c5.2xlarge", "count": 1}, "max_run_seconds": 600}))
    run = tmp_path / "run"
    result = subprocess.run([sys.executable, "-m", "orchestrator", "local", str(spec), "--run-dir", str(run)],
                            capture_output=True, text=True, timeout=300, cwd=tmp_path, check=False,
                            env={**os.environ, "TMPDIR": str(user_tmp), "TEMP": str(user_tmp), "TMP": str(user_tmp)})
    assert result.returncode == 0, result.stdout + result.stderr
    if "no mount namespace here" in result.stdout + result.stderr:
        pytest.skip("no mount namespaces on this machine: /tmp stays the machine's (docs/security.md)")
    assert "tempdir /tmp/tmp" in (run / "logs" / "algo-1.log").read_text()
    assert list(user_tmp.iterdir()) == []
