"""`smtrain local` warns before it starts ranks whose expected memory exceeds what this machine has available,
with the figure it used; a run that fits says nothing about memory."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import yaml

from orchestrator.emulator import local_run
from orchestrator.emulator.local_run import Options, run_local
from orchestrator.specs.loader import load


def _spec(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    (source / "train.py").write_text("print('done')\n")
    spec = {"name": "memory", "entry_point": "train.py", "source_dir": "src", "framework_version": "2.3.0",
            "instance": {"type": "ml.c5.2xlarge", "count": 2}, "distribution": {"mode": "none"}, "metrics": [],
            "max_run_seconds": 600}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    return load(path)


@pytest.mark.slow
@pytest.mark.parametrize(("available_gb", "warned"), [(1.0, True), (64.0, False)])
def test_ranks_that_would_not_fit_are_warned_about_with_the_figure_used(tmp_path, monkeypatch, notice_recorder,
                                                                        available_gb, warned):
    monkeypatch.setattr(local_run.psutil, "virtual_memory", lambda: SimpleNamespace(available=available_gb * 1e9))

    result = run_local(_spec(tmp_path), Options(run_dir=tmp_path / "run"), notice_recorder)

    assert result.status == "Completed", result.failure_reason
    said = [text for text in notice_recorder.notices if text.startswith("memory: ")]
    if warned:
        assert said == [f"memory: 2 ranks x about {local_run.RANK_MEMORY_GB:g} GB each (what a rank of smtrain's own "
                        f"entrypoints reaches; yours may differ) = about {2 * local_run.RANK_MEMORY_GB:.1f} GB, but "
                        f"this machine has 1.0 GB available now: the kernel's out-of-memory killer may end ranks "
                        "(OutOfMemory); fewer ranks (--processes-per-host, --set instance.count=N) or a smaller "
                        "model fit"]
    else:
        assert said == []
