"""Which signal interrupted smtrain, for the reason a run gives, and how an interruption reaches a running job.

The CLI's handlers raise a KeyboardInterrupt that carries the signal's name, so a run ended before its processes
started says which came, as one ended while they ran does; a KeyboardInterrupt of Python's own (Ctrl-C under the
API, a notebook's interrupt) is SIGINT's. While a job's processes run, an interruption goes to their supervisor
instead (`forwarding_to`): the ranks get SIGTERM and a bounded grace to checkpoint, and a second one kills them at
once, whether it came to `smtrain local` or to a notebook's kernel (`python_interrupts_forwarded`)."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Protocol

from orchestrator.observing.signal_names import signal_name

Handler = Callable[[int, FrameType | None], None]


class Interruptible(Protocol):
    """What an interruption is forwarded to: `supervising.supervisor.Supervisor`."""

    @property
    def finished(self) -> bool: ...

    def interrupt(self, signum: int = signal.SIGINT) -> None: ...


def interruption(signum: int) -> KeyboardInterrupt:
    """What a signal handler raises to end smtrain as Ctrl-C does, naming the signal that came."""
    return KeyboardInterrupt(signal_name(signum))


def interrupted_by(error: KeyboardInterrupt) -> str:
    """The name of the signal behind `error`: the one it carries, else SIGINT (Python's own Ctrl-C)."""
    named = getattr(error, "signal_name", None) or (error.args[0] if error.args else None)
    return named if named in signal.Signals.__members__ else "SIGINT"


def forwarding_to(running: Callable[[], Interruptible | None]) -> Handler:
    """The one handler of an interrupting signal during a run: while the supervisor `running()` names has processes
    running, the signal goes to it (the first stops the job gracefully, the next kills it at once); before there is
    one, and once its processes have ended (merging artifacts, between attempts), smtrain itself is interrupted."""

    def interrupt(signum: int, frame: FrameType | None) -> None:
        supervisor = running()
        if supervisor is None or supervisor.finished:
            raise interruption(signum)
        supervisor.interrupt(signum)

    return interrupt


@contextlib.contextmanager
def python_interrupts_forwarded(running: Callable[[], Interruptible | None]) -> Iterator[None]:
    """Python's own Ctrl-C (SIGINT: a notebook's interrupt, a script's Ctrl-C) goes to the run while the block runs,
    as `smtrain local`'s does, instead of a KeyboardInterrupt that would kill the ranks mid-step; Python's handler is
    back afterwards. Not outside the main thread (which alone gets signals), nor where SIGINT has a handler of
    someone else's (an application's), which stays."""
    if threading.current_thread() is not threading.main_thread() or (
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield
        return
    signal.signal(signal.SIGINT, forwarding_to(running))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
