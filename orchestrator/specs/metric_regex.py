"""Metric regexes compiled for a linear-time engine (RE2, the `google-re2` package), so matching a log line takes
time in proportion to the line, whatever the regex: `loss=(\\d+\\d+)+x` against a line of digits, which makes
Python's backtracking `re` run for hours, costs microseconds. SageMaker's own matcher is not Python's `re` either.

RE2 lacks backreferences and lookaround; a regex that needs them is refused when the spec is validated, with the
reason, rather than risking a run that freezes on one line.
"""

from __future__ import annotations

from typing import Any


class MetricRegexError(ValueError):
    """A regex the linear-time engine cannot run (RE2's message says why)."""


def compile_metric_regex(pattern: str) -> Any:
    """The pattern compiled by RE2 (a `re`-like object: `search`, `groups`).

    Raises:
        MetricRegexError: RE2 cannot compile it (a syntax error, a backreference, a lookaround).
    """
    import re2

    options = re2.Options()
    options.log_errors = False  # RE2 logs to stderr by default; the error is raised and reported instead
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        message = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise MetricRegexError(message) from None
