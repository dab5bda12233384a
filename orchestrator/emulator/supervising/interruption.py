"""Which signal interrupted smtrain, for the reason a run gives: the CLI's handlers raise a KeyboardInterrupt
that carries the signal's name, so a run ended before its processes started says which came, as one ended while
they ran does; a KeyboardInterrupt of Python's own (Ctrl-C under the API, a notebook's interrupt) is SIGINT's."""

from __future__ import annotations

import signal

from orchestrator.observing.signal_names import signal_name


def interruption(signum: int) -> KeyboardInterrupt:
    """What a signal handler raises to end smtrain as Ctrl-C does, naming the signal that came."""
    return KeyboardInterrupt(signal_name(signum))


def interrupted_by(error: KeyboardInterrupt) -> str:
    """The name of the signal behind `error`: the one it carries, else SIGINT (Python's own Ctrl-C)."""
    named = getattr(error, "signal_name", None) or (error.args[0] if error.args else None)
    return named if named in signal.Signals.__members__ else "SIGINT"
