"""Whether a stream is a terminal that redraws a line in place, the one place a progress bar belongs.

Rich answers "a terminal" for any stream under `FORCE_COLOR` (which CI workflows set for colour in their logs),
and then draws its bar there: every redraw a carriage return and cursor codes in the CI log, the notes wrapped
at 160 columns. Colour is welcome there; a bar is not. So the bar, and the wrapping that suits one, follow the
stream itself, never rich's reading of the environment."""

from __future__ import annotations

import os
from typing import TextIO


def redraws_in_place(stream: TextIO) -> bool:
    """`stream` is a terminal that can redraw a line: not a file or pipe (a CI log, FORCE_COLOR or not), not
    TERM=dumb (an editor's shell, a CI console with a pseudo-terminal), where rich draws no bar."""
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or closed
        return False
    return terminal and os.environ.get("TERM", "").lower() not in ("dumb", "unknown")
