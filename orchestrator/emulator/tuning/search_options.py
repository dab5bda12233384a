"""The options of a search run here (`smtrain tune local`, `orchestrator.tune_local`), declared once as a local
run's are (`emulator/run_options.py`): each field is the API's keyword of `SearchOptions(...)`, and its `Declared`
metadata gives `tune local`'s flag, so a message names the option as its user gave it (`FieldWords.option`).

Standard library only: `smtrain tune local --help` reads it without loading the search.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from orchestrator.declaration import declared
from orchestrator.emulator.run_options import Options


@dataclass(frozen=True)
class SearchOptions:
    """How a search runs here: how many trials, at once and in all, for how long, into which folder; and how
    every trial runs."""

    parallel: int | None = declared(
        None, takes="int", minimum=1, metavar="N",
        help="Trials at once here [default: the spec's max_parallel_jobs, at most this machine's cores]; they share "
             "the cores: each trial's --cpus is this machine's cores / N unless --cpus says.")
    max_jobs: int | None = declared(
        None, takes="int", minimum=1, metavar="N",
        help="Run at most N trials, a smaller search [default: the tuning spec's max_jobs].")
    budget_seconds: float | None = declared(
        None, takes="number", minimum=1, flag="--budget", metavar="SECONDS",
        help="A bounded search for CI: start no trial after SECONDS, and stop the running ones then (as "
             "StopHyperParameterTuningJob stops them).")
    run_dir: Path | None = declared(
        None, takes="directory", normalize=Path,
        help="Where the trials' run directories go (default runs/<tuning-name>/).")
    trial: Options = Options()
    """How every trial runs (`smtrain local`'s options; its run directory is the search's to choose)."""
