"""`smtrain tune plan`'s cost row: its factors multiply to the bound it shows."""

from __future__ import annotations

import re

from click.testing import CliRunner
from tuning_specs import EXAMPLE

from orchestrator.cli.main import main


def test_tune_plan_cost_shows_factors_whose_product_is_the_bound(monkeypatch):
    """It showed "USD 1.22 = 12 trials x USD 0.10": the per-trial price (0.102) rounded to the cent."""
    monkeypatch.setenv("AWS_REGION", "us-east-1")

    result = CliRunner().invoke(main, ["tune", "plan", str(EXAMPLE)])

    assert result.exit_code == 0, result.output
    row = next(line for line in result.stdout.splitlines() if line.strip().startswith("cost"))
    found = re.search(r"at most USD ([\d.]+) = (\d+) trials x USD ([\d.]+)/h x (\d+) x ([\d.]+) h \(on-demand", row)
    assert found, row
    total, trials, price, count, hours = (float(value) for value in found.groups())
    assert round(trials * price * count * hours, 2) == total
