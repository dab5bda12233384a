"""A training job's CloudWatch events as the job printed them: the control characters that SageMaker's log delivery
writes as text turned back, so that plain_text reads a job's progress bar from CloudWatch as it reads it from a
local run's pipe.

Public SageMaker training logs show a control character as `#` and three octal digits, rsyslog's escape: a tqdm
bar's carriage returns as `#015`, an escape as `#033` (docs/sagemaker-contract.md §11 names the threads). `#` itself
is not escaped, so a job's own `#015` (an issue number) reads the same as an escaped carriage return; only the forms
seen are turned back:

* `#033[`: an escape opening a control sequence (colour; tqdm's cursor-up `#033[A`), which plain_text then removes.
* `#015` in an event that starts with it, holds it more than once, or holds an escaped control sequence: a progress
  bar's line, on which tqdm writes a carriage return before every state and rich (FORCE_COLOR) one beside its
  cursor moves. A line of plain text that mentions `#015` once, after other text, keeps it.
"""

from __future__ import annotations

_CARRIAGE_RETURN = "#015"
_CONTROL_SEQUENCE = "#033["


def as_printed(message: str) -> str:
    """`message` with its escaped carriage returns and control sequences back as the characters they stand for."""
    text = message.replace(_CONTROL_SEQUENCE, "\x1b[")
    drawn = text != message or text.startswith(_CARRIAGE_RETURN) or text.count(_CARRIAGE_RETURN) > 1
    return text.replace(_CARRIAGE_RETURN, "\r") if drawn else text
