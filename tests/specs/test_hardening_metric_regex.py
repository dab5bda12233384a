"""Metric matching is bounded: regexes are matched by RE2 (google-re2), a linear-time engine, so a
regex with catastrophic backtracking costs microseconds per line instead of freezing the run; validate refuses
what RE2 cannot run (backreferences, lookaround) with the reason."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from click.testing import CliRunner

from orchestrator.cli.main import main

pytestmark = pytest.mark.hardening

CATASTROPHIC = r"loss=(\d+\d+)+x"
LINE = "loss=" + "1" * 34


def test_a_catastrophic_regex_against_a_long_line_is_matched_at_once():
    """Python's re needs hours for this line; the subprocess gets 60 s (the check takes milliseconds)."""
    script = textwrap.dedent(f"""
        import time
        from orchestrator.observing.metric_series import compile_definitions, extract
        definitions = compile_definitions([{{"Name": "loss", "Regex": {CATASTROPHIC!r}}},
                                           {{"Name": "ok", "Regex": r"loss=([0-9]+)"}}])
        started = time.monotonic()
        print(extract(definitions, {LINE!r}), round(time.monotonic() - started, 3))
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    values, seconds = result.stdout.rsplit(" ", 1)
    assert values == str({'ok': float('1' * 34)})
    assert float(seconds) < 1.0


def _spec(tmp_path, regex: str):
    (tmp_path / "train.py").write_text("print(1)\n")
    path = tmp_path / "spec.yaml"
    path.write_text(f'name: m\nentry_point: train.py\nframework_version: "2.3.0"\n'
                    f"instance: {{type: ml.c5.2xlarge}}\nmetrics: [{{name: loss, regex: '{regex}'}}]\n")
    return path


def test_validate_accepts_the_catastrophic_regex_since_matching_it_is_bounded(tmp_path):
    result = CliRunner().invoke(main, ["validate", str(_spec(tmp_path, CATASTROPHIC))])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("regex", [r"(loss)=(\d+)\1", r"loss=(?=\d)(\d+)", r"loss=(\d+"])
def test_validate_refuses_a_regex_the_linear_time_engine_cannot_run(tmp_path, regex):
    result = CliRunner().invoke(main, ["validate", str(_spec(tmp_path, regex))])
    assert result.exit_code == 2, result.output
    assert "linear time (RE2)" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize(("regex", "fix"), [
    (r"loss=([0-9]{1001})", "RE2 repeats at most 1000 times"),
    (r"(loss)=([0-9.]+)\1", "backreferences are not supported"),
    (r"(?P<k>loss)=([0-9.]+)(?P=k)", "backreferences are not supported"),
    (r"(?<=loss=)([0-9.]+)", "lookarounds are not supported"),
    (r"loss=([0-9.]++)", "write one repetition operator"),
    (r"loss=([0-9.]+", "close each `(` with `)`"),
    (r"loss=([0-9.+)", "close the character class with `]`"),
    (r"loss=([9-0.]+)", "write a range low to high"),
    (r"loss=([0-9.]+)\Z", "RE2 knows no such escape"),
], ids=["repetition-size", "backreference", "named-backreference", "lookbehind", "possessive", "unclosed-group",
        "unclosed-class", "reversed-range", "unknown-escape"])
def test_each_kind_of_regex_re2_refuses_gets_its_own_fix(tmp_path, regex, fix):
    """RE2's "invalid repetition size" was told that backreferences and lookarounds are not supported."""
    result = CliRunner().invoke(main, ["validate", str(_spec(tmp_path, regex)), "-o", "json"])
    [problem] = json.loads(result.stdout)[0]["problems"]
    assert (result.exit_code, problem["field"]) == (2, "metrics.0.regex")
    assert problem["fix"].startswith(fix), problem["fix"]
    assert ("not supported" in problem["fix"]) == ("not supported" in fix)
