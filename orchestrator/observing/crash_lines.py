"""What follows a rank's own last line when it dies of a signal: the shell that ran it says how it died (dash's
`Segmentation fault (core dumped)`, bash's `sh: line 1:  4312 Killed  python train.py`: mode none's and the
toolkit's /bin/sh), and Python's faulthandler (on in a local run's ranks, PYTHONFAULTHANDLER=1, or a script's
`faulthandler.enable()`) dumps the stack it died in. Neither is the rank's last word, which the headline's signal
would only repeat; the dump's frames say which line of the user's code it died in."""

from __future__ import annotations

import re
import signal
from collections.abc import Sequence

DUMP_START = "Fatal Python error: "
_DUMP_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+) in ')
_THREAD = re.compile(r"^(Current thread|Thread) 0x[0-9a-f]+ ")


def shell_notice(line: str, number: int | None) -> bool:
    """Whether `line` is a shell's notice that its child died of signal `number` (`Killed`, `Aborted (core
    dumped)`), in the C library's words, which dash and bash use."""
    if number is None:
        return False
    try:
        name = signal.strsignal(number)
    except ValueError:
        return False
    if name is None:
        return False
    died = rf"{re.escape(name)}(?: \(core dumped\))?"
    return re.fullmatch(rf"{died}|.*: line \d+:\s+\d+ {died}\s.*", line.strip()) is not None


def dump_frames(lines: Sequence[str]) -> tuple[tuple[str, int], ...]:
    """The frames of the thread faulthandler's last dump says crashed (`Current thread`), innermost last as in a
    traceback; none where no dump names one."""
    start = max((index for index, line in enumerate(lines) if line.startswith(DUMP_START)), default=None)
    if start is None:
        return ()
    frames: list[tuple[str, int]] = []
    current = False
    for line in lines[start + 1:]:
        if _THREAD.match(line):
            current = line.startswith("Current thread")
        elif current and (frame := _DUMP_FRAME.match(line)):
            frames.append((frame[1], int(frame[2])))
        elif current and frames:
            break
    return tuple(reversed(frames))
