"""The source package: hard links to secrets, other tools' credentials, shell histories, cloud SDK folders
and the spec file holding secret values are never packed; packing a large file does not take its size in
memory."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

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


def test_a_hard_link_to_env_under_a_harmless_name_is_refused(tmp_path):
    _write(tmp_path, {"train.py": "x\n", ".env": SECRET})
    os.link(tmp_path / ".env", tmp_path / "settings.cfg")
    with pytest.raises(SpecError, match=r"settings.cfg is a hard link with 2 names, 1 of them packed"):
        package(tmp_path)


def test_a_hard_link_to_a_credentials_file_outside_source_dir_is_refused(tmp_path):
    home = _write(tmp_path / "home", {".aws/credentials": SECRET})
    source = _write(tmp_path / "src", {"train.py": "x\n"})
    os.link(home / ".aws" / "credentials", source / "notes.txt")
    with pytest.raises(SpecError, match="notes.txt is a hard link"):
        package(source)


def test_hard_links_whose_every_name_is_packed_are_packed(tmp_path):
    _write(tmp_path, {"train.py": "x\n", "a.txt": "same\n"})
    os.link(tmp_path / "a.txt", tmp_path / "b.txt")
    assert set(package(tmp_path).files) == {"train.py", "a.txt", "b.txt"}


@pytest.mark.parametrize("name", [".s3cfg", ".boto", ".passwd-s3fs", "sub/.passwd-s3fs", ".bash_history",
                                  ".zsh_history", "sub/.python_history", ".config/gcloud/credentials.db",
                                  "pkg/.config/gcloud/application_default_credentials.json",
                                  ".azure/accessTokens.json", "sub/.azure/msal_token_cache.json",
                                  ".cache/huggingface/token", "hf/.cache/huggingface/stored_tokens",
                                  ".huggingface/token", ".config/gh/hosts.yml", ".kaggle/kaggle.json",
                                  ".vault-token", ".databrickscfg", "_netrc", ".env~", ".netrc.bak",
                                  "credentials.bak", "sub/key.pem.orig", ".pypirc.old", "kaggle.json.save"])
def test_other_tools_credentials_histories_and_cloud_sdk_folders_are_never_packed(tmp_path, name):
    """Backup copies too (`.env~`, `.netrc.bak`): they were packed."""
    _write(tmp_path, {"train.py": "x\n", name: SECRET})
    packed = package(tmp_path)
    assert packed.files == ("train.py",)
    assert packed.withheld, "the plan names what it left out"


def test_the_spec_file_holding_secret_values_is_not_packed_with_the_default_source_dir(tmp_path):
    from orchestrator.planning.plan import build_plan
    from orchestrator.planning.target import Target
    from orchestrator.specs.loader import load

    _write(tmp_path, {"train.py": "x\n", "spec.yaml": textwrap.dedent("""\
        name: packed
        entry_point: train.py
        framework_version: "2.3.0"
        instance: {type: ml.c5.2xlarge}
        environment: {DB_PASSWORD: hunter22-in-the-spec}
        """), "plain.yaml": textwrap.dedent("""\
        name: packed
        entry_point: train.py
        framework_version: "2.3.0"
        instance: {type: ml.c5.2xlarge}
        """)})
    target = Target(region="us-east-1", role="arn:aws:iam::123456789012:role/R", output_path="s3://b/out/",
                    code_location="s3://b/code/")
    with_secret = build_plan(load(tmp_path / "spec.yaml"), target)
    assert "spec.yaml" not in with_secret.source.files and "spec.yaml" in with_secret.source.withheld
    assert any("spec.yaml" in finding.message for finding in with_secret.findings)
    plain = build_plan(load(tmp_path / "plain.yaml"), target)
    assert {"spec.yaml", "plain.yaml"} <= set(plain.source.files)  # without secrets it stays as before


@pytest.mark.slow
def test_packing_a_large_file_does_not_take_its_size_in_memory(tmp_path):
    """A 256 MiB sparse file: the peak memory of packing it stays far below its size (it was 223 MB more)."""
    _write(tmp_path, {"train.py": "x\n"})
    with (tmp_path / "big.bin").open("wb") as handle:
        handle.truncate(256 * 1024 * 1024)
    script = textwrap.dedent(f"""
        import resource, sys
        from orchestrator.planning.packaging import package
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        packed = package({str(tmp_path)!r}, max_bytes=100 * 1024 * 1024)
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(after - before, packed.size_bytes)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    grown_kib, size = (int(value) for value in result.stdout.split())
    assert size < 1024 * 1024  # zeros compress
    assert grown_kib < 64 * 1024, f"packing grew the peak RSS by {grown_kib} KiB"


def test_a_file_holding_a_private_key_is_left_out_whatever_its_name_and_code_naming_the_marker_is_packed(tmp_path):
    """`*.pem` and `id_rsa*` are left out by name; a key saved as `deploy_key` or inside a config file is found by
    its content, even with a header or cut across the scan's blocks. A parser that only names the BEGIN line
    is code, not a key."""
    body = "MIIEowIBAAKCAQEA0Zf3xq7Hc2mVt9Jk3YQ8T0bqnWm+uv1bZ7oX\n"
    _write(tmp_path, {"train.py": "x\n", "deploy_key": f"-----BEGIN OPENSSH PRIVATE KEY-----\n{body}",
                      "conf/app.yaml": f"tls:\n  key: |\n    -----BEGIN EC PRIVATE KEY-----\n    {body}",
                      "legacy.txt": ("-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,"
                                     f"00FF\n\n{body}"),
                      "big.log": "x" * ((1 << 20) - 10) + f"-----BEGIN PRIVATE KEY-----\n{body}",
                      "pem_check.py": 'MARK = "-----BEGIN RSA PRIVATE KEY-----"\nassert MARK in text\n'})

    source = package(tmp_path)

    assert source.files == ("pem_check.py", "train.py")
    assert source.withheld == ("big.log", "conf/app.yaml", "deploy_key", "legacy.txt")
