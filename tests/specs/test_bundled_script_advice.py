"""Issue 31, advice in the bundled script's words only for the bundled script: `trainer gloo` and `trainer dp` are
hyperparameters of smtrain's own entrypoints/train.py, so a rule's fix names them only when the job runs that
script (or a copy of it); a user's own script is told what to do in its own terms."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from orchestrator.cli.main import main
from orchestrator.specs.capabilities import check
from orchestrator.specs.model import JobSpec

REPO = Path(__file__).resolve().parents[2]
# (spec settings, rule): each rule fires for any script; its fix used to say "trainer gloo" or "trainer dp".
CASES = [
    ({"instance": {"type": "ml.c5.2xlarge", "count": 2}, "distribution": {"mode": "torch_distributed"}},
     "torch-distributed-needs-accelerator"),
    ({"instance": {"type": "ml.c5.2xlarge", "count": 2}, "distribution": {"mode": "smddp"}}, "smddp-needs-gpu"),
    ({"instance": {"type": "ml.g5.12xlarge", "count": 1}, "distribution": {"mode": "none"}}, "mode-none-idle-gpus"),
]


def _fix(source_dir: Path, settings: dict, rule: str) -> str:
    spec = JobSpec(name="advice", entry_point="train.py", source_dir=str(source_dir), framework_version="2.10.0",
                   **settings)
    [finding] = [finding for finding in check(spec) if finding.rule == rule]
    return finding.fix


@pytest.mark.parametrize(("settings", "rule"), CASES, ids=[rule for _, rule in CASES])
def test_a_users_own_script_is_not_told_to_set_the_bundled_scripts_trainer(tmp_path, settings, rule):
    (tmp_path / "train.py").write_text("import torch.distributed as dist\ndist.init_process_group('gloo')\n")
    fix = _fix(tmp_path, settings, rule)
    assert "trainer" not in fix, fix


@pytest.mark.parametrize(("settings", "rule"), CASES, ids=[rule for _, rule in CASES])
def test_the_bundled_script_and_a_copy_of_it_are_told_its_trainer(tmp_path, settings, rule):
    copy = tmp_path / "copied"
    shutil.copytree(REPO / "entrypoints", copy)
    for source_dir in (REPO / "entrypoints", copy):
        assert "trainer" in _fix(source_dir, settings, rule)


def test_validate_of_a_users_script_on_cpus_under_torchrun_says_mode_none_without_trainer_gloo(tmp_path,
                                                                                                 monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("print('loss=1.0')\n")
    (tmp_path / "job.yaml").write_text(
        "name: mine\nentry_point: train.py\nsource_dir: src\nframework_version: '2.10.0'\n"
        "instance: {type: ml.c5.2xlarge, count: 2}\ndistribution: {mode: torch_distributed}\n")
    result = CliRunner().invoke(main, ["validate", "job.yaml"])
    assert result.exit_code == 2, result.output
    assert ("use mode: none (one process per host; the script joins its hosts with the gloo backend, at rank "
            "json.loads(SM_HOSTS).index(SM_CURRENT_HOST) of len(SM_HOSTS): mode none sets no RANK or WORLD_SIZE)"
            in " ".join(result.output.split())), result.output  # a torchrun script's init_process_group needs them
    assert "trainer gloo" not in result.output
