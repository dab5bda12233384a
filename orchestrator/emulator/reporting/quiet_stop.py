"""The stops smtrain carries out itself end the console's view of the job's lines, with one note saying which stop it
is and where those lines went.

Such a stop (a smoke that passed, `smtrain stop`, Ctrl-C, SIGTERM or SIGHUP to smtrain, `max_run_seconds`) ends
each rank by SIGTERM, and launchers report that as a failure: torchrun prints `ChildFailedError` with a traceback,
`exitcode: -15 (SIGTERM)`, on every host. That is the stop, not a failure, yet in a CI log it is what people grep.
So from the stop on the job's lines go to the hosts' logs only, which keep every line. A stop for a failure, a hang
(its SIGKILL leaves no launcher to report; the stacks are its report), a simulated spot interruption (the job
restarts) and a smoke that failed (its lines say why) show everything.
"""

from __future__ import annotations

from pathlib import Path

SMOKE_PASSED = "the smoke passed"
STOPPED_BY_REQUEST = "stopped by smtrain stop"


def interrupted(signal_name: str | None) -> str:
    """Why, for a user's interruption: Ctrl-C is SIGINT's name at a terminal."""
    return "interrupted (Ctrl-C)" if signal_name in (None, "SIGINT") else f"interrupted ({signal_name})"


def max_run_seconds_reached(max_run_seconds: float) -> str:
    return f"max_run_seconds ({max_run_seconds:g} s) reached"


def quiet_stop_notice(why: str, logs_dir: Path) -> str:
    """Said once, before any process gets the stop's signal: the job's lines after it are in the logs only."""
    return (f"stopping the job: {why}; what its launchers print while stopping is in {logs_dir / 'algo-N.log'}, "
            "not shown here")
