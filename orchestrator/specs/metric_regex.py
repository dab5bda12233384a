"""Metric regexes compiled for a linear-time engine (RE2, the `google-re2` package), so matching a log line takes
time in proportion to the line, whatever the regex: `loss=(\\d+\\d+)+x` against a line of digits, which makes
Python's backtracking `re` run for hours, costs microseconds. SageMaker's own matcher is not Python's `re` either.

RE2 lacks backreferences and lookaround; a regex that needs them is refused when the spec is validated, with the
reason, rather than risking a run that freezes on one line. Each kind of RE2 error gets its own fix: a repetition
over RE2's limit of 1000 is no lookaround.
"""

from __future__ import annotations

from typing import Any


_LOOKAROUNDS = ("(?=", "(?!", "(?<=", "(?<!")
_FIXES = {
    "invalid repetition size": "RE2 repeats at most 1000 times, the smaller count first (`{2,5}`): use a smaller "
                               "count, or `+` / `*`",
    "bad repetition operator": "write one repetition operator, optionally followed by `?` (`a+`, `a*?`); RE2 has no "
                               "possessive `++` or `*+`",
    "no argument for repetition operator": "put the character to repeat before `*`, `+` or `?`, or escape a literal "
                                           "one (`\\*`, `\\+`, `\\?`)",
    "missing )": "close each `(` with `)`, or escape a literal one as `\\(`",
    "unexpected )": "remove the `)`, or escape a literal one as `\\)`",
    "missing ]": "close the character class with `]`, or escape a literal bracket as `\\[`",
    "invalid character class range": "write a range low to high (`[a-z]`), a POSIX class as `[[:digit:]]`, a "
                                     "Unicode class as `\\p{L}`",
    "trailing \\": "end with `\\\\` for a literal backslash",
}
"""RE2's error kind (its message before `: `) -> the change to make."""
_BACKREFERENCE_FIX = "backreferences are not supported: write the group's pattern again in place of the reference"
_LOOKAROUND_FIX = ("lookarounds are not supported: match the text around the number outside the group instead "
                   "(`loss=([0-9.]+)`, not `(?<=loss=)[0-9.]+`)")
_PERL_OPERATOR_FIX = "RE2 takes `(?:...)`, `(?P<name>...)` and the flags `(?i)`, `(?m)`, `(?s)`, `(?U)` only"
_ESCAPE_FIX = ("RE2 knows no such escape: use `\\d`, `\\w`, `\\s`, `\\b`, `\\z` (end of text), or escape "
               "punctuation only")


class MetricRegexError(ValueError):
    """A regex the linear-time engine cannot run: RE2's message says why, `fix` what to change."""

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(message)
        self.fix = fix


def _regex_fix(message: str, pattern: str) -> str:
    """The change to make for RE2's error `message` on `pattern` (`invalid perl operator: (?<=`): each kind its
    own. RE2 names `(?P=name)` as `(?P` only, so the pattern tells a named backreference."""
    kind, _, written = message.partition(": ")
    if kind == "invalid perl operator":
        if written.startswith(_LOOKAROUNDS):
            return _LOOKAROUND_FIX
        return _BACKREFERENCE_FIX if "(?P=" in pattern else _PERL_OPERATOR_FIX
    if kind == "invalid escape sequence":
        return _BACKREFERENCE_FIX if written[1:2].isdigit() else _ESCAPE_FIX
    return _FIXES.get(kind, "check the regex against RE2's syntax (github.com/google/re2/wiki/Syntax)")


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
        raise MetricRegexError(message, _regex_fix(message, pattern)) from None
