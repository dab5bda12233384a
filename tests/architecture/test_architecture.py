"""The layers stay in order and the fast commands stay fast: checked on every run, not by review."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_import_layers_have_no_upward_imports_or_circles():
    linter = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(linter), "--no-cache"], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]


def test_cli_commands_that_do_not_train_never_import_the_sdk_or_torch(tmp_path):
    """validate, plan and submit --dry-run build the request themselves: no sagemaker, no torch."""
    probe = (
        "import sys, runpy\n"
        "from click.testing import CliRunner\n"
        "from orchestrator.cli.main import main\n"
        "spec = sys.argv[1]\n"
        "for args in (['validate', spec], ['plan', spec, '-o', 'json'], ['submit', spec, '--dry-run', '-o', 'json']):\n"
        "    result = CliRunner().invoke(main, args)\n"
        "    assert result.exit_code == 0, (args, result.output)\n"
        "heavy = sorted(name for name in sys.modules if name.split('.')[0] in ('sagemaker', 'torch'))\n"
        "print(heavy)\n"
    )
    spec = REPO / "job_specs" / "mlp-ddp-torch_distributed-2x-g5.12xlarge.yaml"
    env = {"PATH": "/usr/bin:/bin", "AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x",
           "AWS_EC2_METADATA_DISABLED": "true", "HOME": str(tmp_path)}
    result = subprocess.run([sys.executable, "-c", probe, str(spec)], capture_output=True, text=True, env=env,
                            cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "[]"
