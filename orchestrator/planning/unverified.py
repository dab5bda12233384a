"""Letting an unverified combination through (an instance, image or mode smtrain has not verified), declared
once: the `--allow-unverified` of `smtrain validate`, `submit`, `tune validate` and `tune submit` is generated from
`UnverifiedOptions`, and its field is the keyword `allow_unverified=` of the API's `submit`, `run` and
`submit_tuning`, the functions that send a job (tests/api/test_option_keywords.py keeps the command line and the API
in step). Either does what `allow_unverified: true` in the spec does; neither turns the spec's own setting off.

Standard library only: every `--help` reads it.
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.declaration import declared


@dataclass(frozen=True)
class UnverifiedOptions:
    """Whether submit lets an unverified combination through (rules that would certainly fail still block)."""

    allow_unverified: bool = declared(
        False, takes="flag",
        help="Let a combination that a capability rule says is unverified through, as `allow_unverified: true` "
             "in the spec does (a rule that would certainly fail still blocks).")
