"""`smtrain local` writes the PyTorch toolkit's values over the spec's environment as the container does, so a
value that SageMaker replaces is replaced here too (and validate's warning, printed before the run, says so)."""

from __future__ import annotations

import yaml

from orchestrator.emulator.local_plan import local_plan
from orchestrator.emulator.preparing.layout import release_directory
from orchestrator.emulator.preparing.prepared_run import prepare_run
from orchestrator.emulator.run_options import Options
from orchestrator.specs.loader import load


def test_the_spec_s_nccl_values_are_replaced_by_the_toolkit_s_on_every_host(tmp_path):
    (tmp_path / "train.py").write_text("print('hi')\n")
    document = {"name": "over", "entry_point": "train.py", "framework_version": "2.3.0",
                "instance": {"type": "ml.c5.2xlarge", "count": 2}, "metrics": [],
                "environment": {"NCCL_DEBUG": "INFO", "NCCL_IB_DISABLE": "0", "KEPT": "yes"}}
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(document))
    loaded = load(spec)
    assert {finding.field for finding in loaded.findings if finding.rule == "environment-overwritten-by-container"} \
        == {"environment.NCCL_DEBUG", "environment.NCCL_IB_DISABLE"}
    settings = Options(run_dir=tmp_path / "run")
    prepared = prepare_run(local_plan(loaded, settings), settings)
    release_directory(prepared.layout.root)
    for process in prepared.host_processes("id", 1234):
        assert (process.env["NCCL_DEBUG"], process.env["NCCL_IB_DISABLE"], process.env["KEPT"]) == ("WARN", "1", "yes")
