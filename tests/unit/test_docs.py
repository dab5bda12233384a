"""The README stays true: its field reference is the models', and its two commands are what CI runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_readme_field_reference_matches_the_models():
    generated = subprocess.run([sys.executable, "scripts/spec_reference.py"], cwd=REPO, capture_output=True,
                               text=True, check=True).stdout
    readme = (REPO / "README.md").read_text()
    start = readme.index("<!-- spec-reference:start -->\n") + len("<!-- spec-reference:start -->\n")
    assert readme[start:readme.index("<!-- spec-reference:end -->")] == generated, \
        "README field reference is stale: paste the output of `python scripts/spec_reference.py`"


def test_readme_opens_with_the_two_commands_and_ci_runs_the_test_one():
    head = (REPO / "README.md").read_text()[:1200]
    assert "bash scripts/demo.sh" in head and "bash scripts/test.sh" in head
    assert "bash scripts/test.sh" in (REPO / ".ci" / "run").read_text()
