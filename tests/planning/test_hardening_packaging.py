"""Secrets in the source tarball: run directories, re-includes, the never-shipped list, symlinks, and
the trees that used to end in a traceback (a symlink loop, an unreadable file, a bad .smtrainignore line)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from deep_trees import nested_folders

from orchestrator.cli.main import main
from orchestrator.contract import RUN_MARKER_FILE
from orchestrator.errors import SpecError
from orchestrator.planning.packaging import package

pytestmark = pytest.mark.hardening

SECRET = "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI"


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _shipped(source: Path) -> set[str]:
    return set(package(source).files)


def test_packaging_leaves_out_run_directories(tmp_path):
    """`smtrain local` writes runs/<job>/ into the spec's folder, often source_dir: with the marker, or written
    by an older smtrain (algo-1's resourceconfig.json), a run directory is never packed."""
    _write(tmp_path, {
        "train.py": "x\n",
        f"runs/job-1/{RUN_MARKER_FILE}": "",
        "runs/job-1/algo-1/.smtrain-environment": f"export {SECRET}\n",
        "runs/job-1/result.json": "{}",
        "runs/old-job/algo-1/input/config/resourceconfig.json": "{}",
        "runs/old-job/algo-1/.smtrain-environment": f"export {SECRET}\n",
        "runs/old-job/logs/algo-1.log": "log\n",
        "results/notes.txt": "kept\n",
    })
    assert _shipped(tmp_path) == {"train.py", "results/notes.txt"}


@pytest.mark.slow
def test_a_real_local_run_inside_source_dir_is_not_packed(tmp_path):
    """`smtrain local` with the default layout: the spec's folder is source_dir and the run lands in it."""
    from orchestrator.emulator.local_run import Options, run_local
    from orchestrator.specs.loader import load

    _write(tmp_path, {"train.py": "print('trained')\n",
                      "spec.yaml": "name: packed\nentry_point: train.py\nframework_version: '2.3.0'\n"
                                   "instance: {type: ml.c5.2xlarge, count: 2}\nmetrics: []\n"
                                   "environment: {DB_PASSWORD: hunter22}\n"})
    result = run_local(load(tmp_path / "spec.yaml"), Options(run_dir=tmp_path / "runs" / "packed-1"))
    assert result.status == "Completed", result.failure_reason
    assert _shipped(tmp_path) == {"train.py", "spec.yaml"}


def test_ignore_file_cannot_reinclude_what_is_never_shipped(tmp_path):
    _write(tmp_path, {
        "train.py": "x\n", ".env": SECRET, ".aws/credentials": SECRET, "id_rsa": SECRET, ".git/config": "[core]",
        ".smtrainignore": "!.env\n!.aws/\n!id_rsa\n!.git/\n!.git/config\n",
    })
    assert _shipped(tmp_path) == {"train.py"}


def test_allow_list_idiom_does_not_ship_nested_secrets_or_environments(tmp_path):
    _write(tmp_path, {
        "train.py": "x\n", "other.py": "x\n", "pkg/model.py": "x\n",
        "pkg/.aws/credentials": SECRET, "pkg/.git/config": "[remote]", "pkg/.ssh/id_ed25519": SECRET,
        "pkg/.venv/lib/site.py": "x", "pkg/node_modules/left-pad/index.js": "x",
        ".venv/lib/site.py": "x", "node_modules/x/index.js": "x",
        ".smtrainignore": "/*\n!/train.py\n!/pkg/\n!/.venv/\n!/node_modules/\n",
    })
    assert _shipped(tmp_path) == {"train.py", "pkg/model.py"}


@pytest.mark.parametrize("name", [
    "credentials", "pkg/credentials", ".git-credentials", ".netrc", ".npmrc", ".docker/config.json",
    ".kube/config", "kubeconfig", "deploy/kubeconfig-prod.yaml", "ID_RSA", "keys/SERVER.PEM", ".ENV",
    "conf/.Env.Production", ".ssh/known_hosts", ".SSH/config", "Credentials",
])
def test_never_shipped_list_covers_credentials_in_any_case(tmp_path, name):
    _write(tmp_path, {"train.py": "x\n", name: SECRET})
    assert _shipped(tmp_path) == {"train.py"}


@pytest.mark.parametrize(("target", "expected"), [
    (".aws/credentials", "which is never shipped"),
    (".git/config", "which is never shipped"),
    ("runs/job-1/algo-1/.smtrain-environment", "which is never shipped"),
    ("../outside/credentials", "outside source_dir"),
    ("missing.txt", "leads nowhere"),
])
def test_symlink_with_a_harmless_name_is_refused(tmp_path, target, expected):
    """A link is packed as what it points at: to something never shipped, outside the tree or nowhere, it is
    refused (exit 2 with the link's name), since skipping it would silently drop a file the job may need."""
    source = _write(tmp_path / "src", {"train.py": "x\n", ".aws/credentials": SECRET, ".git/config": "[core]",
                                       f"runs/job-1/{RUN_MARKER_FILE}": "",
                                       "runs/job-1/algo-1/.smtrain-environment": SECRET})
    _write(tmp_path, {"outside/credentials": SECRET})
    (source / "notes.txt").symlink_to(target)
    with pytest.raises(SpecError, match=expected) as raised:
        package(source)
    assert "notes.txt" in str(raised.value) and "wJalr" not in str(raised.value)


def test_symlinked_directory_out_of_the_tree_is_refused(tmp_path):
    _write(tmp_path, {"home/.aws/credentials": SECRET, "src/train.py": "x\n"})
    (tmp_path / "src" / "config").symlink_to(tmp_path / "home" / ".aws")
    with pytest.raises(SpecError, match="config is a symlink to .* outside source_dir"):
        package(tmp_path / "src")


def test_a_listed_symlink_and_an_inside_one_are_fine(tmp_path):
    source = _write(tmp_path / "src", {"train.py": "x\n", ".smtrainignore": "creds\n"})
    (source / "creds").symlink_to(tmp_path / "elsewhere")
    (source / "alias.py").symlink_to("train.py")
    assert _shipped(source) == {"alias.py", "train.py"}


def test_symlink_loop_is_one_message(tmp_path):
    source = _write(tmp_path, {"train.py": "x\n"})
    (source / "a").symlink_to("b")
    (source / "b").symlink_to("a")
    with pytest.raises(SpecError, match="a is a symlink that leads nowhere"):
        package(source)


def test_backslash_line_in_ignore_file_is_one_message(tmp_path):
    source = _write(tmp_path, {"train.py": "x\n", ".smtrainignore": "data/\n\\\n"})
    with pytest.raises(SpecError, match=r"\.smtrainignore:2: not a gitignore pattern"):
        package(source)


def test_unreadable_file_is_one_message(tmp_path):
    """Packs as a process that permissions apply to: root without its capabilities (setpriv), else this user."""
    source = _write(tmp_path / "src", {"train.py": "x\n", "secret.bin": "x"})
    (source / "secret.bin").chmod(0)
    script = ("from orchestrator.errors import SpecError\nfrom orchestrator.planning.packaging import package\n"
              f"try:\n    package({str(source)!r})\nexcept SpecError as exc:\n    print(exc)\n")
    command = [sys.executable, "-c", script]
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            pytest.skip("root reads every file, and setpriv is not here to drop that capability")
        command = ["setpriv", "--bounding-set=-all", "--inh-caps=-all", *command]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=Path(__file__).parents[2],
                            check=False)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert "cannot read secret.bin: Permission denied" in result.stdout


def test_cli_reports_a_bad_tree_with_exit_2_and_no_traceback(tmp_path):
    source = _write(tmp_path / "src", {"train.py": "print(1)\n"})
    (source / "a").symlink_to("a")
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: loop\nentry_point: train.py\nsource_dir: src\nframework_version: '2.3.0'\n"
                    "instance: {type: ml.c5.2xlarge}\nrole: arn:aws:iam::123456789012:role/R\n"
                    "region: us-east-1\noutput_path: s3://bucket/out/\n")
    result = CliRunner().invoke(main, ["plan", str(spec)])
    assert result.exit_code == 2, result.output
    assert "a is a symlink that leads nowhere" in result.output and "Traceback" not in result.output


def test_entry_point_symlink_out_of_source_dir_is_refused_at_validate(tmp_path):
    _write(tmp_path, {"elsewhere/train.py": "print(1)\n", "src/util.py": "x\n"})
    (tmp_path / "src" / "train.py").symlink_to(tmp_path / "elsewhere" / "train.py")
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: link\nentry_point: train.py\nsource_dir: src\nframework_version: '2.3.0'\n"
                    "instance: {type: ml.c5.2xlarge}\n")
    result = CliRunner().invoke(main, ["validate", str(spec)])
    assert result.exit_code == 2, result.output
    assert "entry_point: train.py leads outside source_dir" in result.output


def test_a_git_file_of_a_worktree_or_submodule_is_never_shipped_nor_linked_to(tmp_path):
    """A worktree's or a submodule's `.git` is a file naming the repository's folder on this machine."""
    source = _write(tmp_path, {"train.py": "x\n", ".git": "gitdir: /home/me/project/.git/worktrees/wt\n",
                               "sub/.git": "gitdir: ../.git/modules/sub\n", "sub/mod.py": "x\n"})
    assert _shipped(source) == {"train.py", "sub/mod.py"}
    (source / "notes.txt").symlink_to(".git")
    with pytest.raises(SpecError, match="notes.txt is a symlink to .git, which is never shipped"):
        package(source)


def test_a_tree_nested_past_the_depth_limit_is_one_message_not_a_recursion_error(tmp_path):
    source = _write(tmp_path, {"train.py": "x\n"})
    with nested_folders(source):
        with pytest.raises(SpecError, match=r"a/ nests folders more than 100 deep"):
            package(source)
        (source / ".smtrainignore").write_text("a/\n")
        assert _shipped(source) == {"train.py"}


@pytest.mark.parametrize(("source_dir", "expected"), [
    ("/proc", "source_dir /proc is on the kernel's proc file system"),
    ("/", "source_dir /: dev/ is the kernel's devtmpfs file system"),
])
def test_a_source_dir_of_the_kernels_file_systems_is_refused_before_any_file_is_read(tmp_path, source_dir, expected):
    """`source_dir: /proc` packed /proc/kmsg, whose read waits for the kernel's next message: plan never ended (the
    forked call's time limit ends it here). `/` holds /dev, /proc and /sys."""
    from forked import smtrain

    if not Path("/proc/self").exists() or not Path("/dev/null").is_char_device():
        pytest.skip("no /proc or /dev on this machine")
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"name: kernel\nentry_point: {'self/status' if source_dir == '/proc' else 'etc/hostname'}\n"
                    f"source_dir: {source_dir}\nframework_version: '2.3.0'\ninstance: {{type: ml.c5.2xlarge}}\n"
                    "role: arn:aws:iam::123456789012:role/R\nregion: us-east-1\noutput_path: s3://bucket/out/\n")
    result = smtrain("plan", str(spec), cwd=tmp_path, memory_limit_bytes=2 << 30, timeout=120)
    assert result.returncode == 2, result.stdout + result.stderr
    assert expected in result.stderr and "Traceback" not in result.stderr, result.stderr


def _bytes_read() -> int:
    """What this process has read through read() so far (Linux's /proc/self/io), caches and all."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


def test_a_tree_over_the_limit_is_read_only_as_far_as_the_limit(tmp_path):
    """A forgotten 20 MB of incompressible data against a 1 MB limit: every file was searched for a private key
    before the first was packed, so the whole tree was read before the limit refused it (a 5 GB dataset, 5 GB)."""
    if not Path("/proc/self/io").is_file():
        pytest.skip("no /proc/self/io to count the bytes read")
    source = _write(tmp_path / "src", {"train.py": "print('hi')\n"})
    (source / "data").mkdir()
    for index in range(20):
        (source / "data" / f"part-{index:02}.bin").write_bytes(os.urandom(1 << 20))
    before = _bytes_read()
    with pytest.raises(SpecError, match="packs to more than the 1.0 MB limit"):
        package(source, max_bytes=1 << 20)
    assert _bytes_read() - before < 6 << 20


def test_a_file_holding_a_private_key_is_still_left_out_and_named(tmp_path):
    key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
    source = _write(tmp_path / "src", {"train.py": "print('hi')\n", "deploy_key": key, "z.py": "x = 1\n"})
    packed = package(source)
    assert packed.files == ("train.py", "z.py") and packed.withheld == ("deploy_key",)
