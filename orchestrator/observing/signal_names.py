"""The one name a signal has wherever smtrain says it (a run's reason, its status message, the console, a
failure's headline): the standard library's, so a rank killed by 9 or 137, and smtrain stopped by 15, read the
same everywhere and no table of numbers goes stale."""

from __future__ import annotations

import signal


def signal_name(number: int) -> str:
    """`SIGTERM` for 15; a number without a name (a real-time signal: `Real-time signal 1`) as the C library
    describes it, else `signal N`: an exit status may report any number."""
    try:
        return signal.Signals(number).name
    except ValueError:
        pass
    try:
        return signal.strsignal(number) or f"signal {number}"
    except ValueError:  # out of the platform's range
        return f"signal {number}"
