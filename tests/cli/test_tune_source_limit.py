"""`smtrain tune plan | submit --max-source-mb`: the tuning commands pack the job spec's source under the limit
`plan` and `submit` take, from the one declaration of the option."""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

from orchestrator.cli.main import main
from tuning_specs import TINY_SEARCH


@pytest.fixture
def search_with_large_source(write_spec, tmp_path, monkeypatch):
    """A tuning spec whose job spec's source_dir packs to about 300 kB (random bytes: no compression)."""
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    write_spec()
    (tmp_path / "src" / "weights.bin").write_bytes(os.urandom(300_000))
    path = tmp_path / "search.yaml"
    path.write_text(TINY_SEARCH)
    return str(path)


@pytest.mark.parametrize("verb", ["plan", "submit"])
def test_tune_refuses_a_source_over_the_limit_naming_the_option(search_with_large_source, verb):
    """Before, `tune plan` and `tune submit` had no --max-source-mb (exit 2, no such option): a source over the
    default 100 MB could not be tuned at all. The refusal names the option, as `smtrain plan`'s does; nothing is
    sent, so `tune submit` needs no AWS here."""
    result = CliRunner().invoke(main, ["tune", verb, search_with_large_source, "--max-source-mb", "0.1"])

    assert result.exit_code == 2, result.output
    assert "packs to more than the 100.0 kB limit (--max-source-mb)" in result.stderr
    assert "raise the limit with --max-source-mb" in result.stderr
    assert "Traceback" not in result.output


def test_tune_plan_takes_a_source_under_a_raised_limit(search_with_large_source):
    result = CliRunner().invoke(main, ["tune", "plan", search_with_large_source, "--max-source-mb", "1",
                                       "-o", "json"])

    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("verb", ["plan", "submit"])
def test_a_tune_source_limit_of_zero_or_less_is_bad_usage(search_with_large_source, verb):
    """As for `smtrain plan`: the one declaration's range check, before anything is packed."""
    result = CliRunner().invoke(main, ["tune", verb, search_with_large_source, "--max-source-mb", "-5"])

    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "Invalid value for '--max-source-mb': -5.0 is not in the range x>0." in result.stderr
