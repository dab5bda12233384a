"""`smtrain tune ... --set` overrides the job spec, as docs/tuning.md says; its help says the same."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from orchestrator.cli.main import main


@pytest.mark.parametrize("verb", ["validate", "plan", "submit", "local"])
def test_tune_set_help_names_the_job_spec(verb):
    """`tune ... --set` changes the job spec the tuning spec names (`--set max_jobs=4` is refused as a job
    spec key): its help says so, rather than "the spec file", which reads as the tuning spec given."""
    help_text = " ".join(CliRunner().invoke(main, ["tune", verb, "--help"]).output.split())
    assert "overrides that value of the job spec the tuning spec names" in help_text
