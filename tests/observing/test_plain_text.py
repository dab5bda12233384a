"""A job's text without terminal control (observing/plain_text.py): each class of control goes, colour included,
what it would have hidden stays, and the work is linear in the text's length, counted in characters scanned."""

from __future__ import annotations

import pytest
from terminal_controls import CONTROLS

from orchestrator.observing import plain_text
from orchestrator.observing.plain_text import plain



@pytest.mark.parametrize("printed, shown", CONTROLS.values(), ids=CONTROLS.keys())
def test_each_class_of_control_is_removed_and_the_text_stays(printed, shown):
    assert plain(printed) == shown


def test_text_without_a_control_is_returned_as_it_is():
    text = "epoch=1 step=10/90 ünïcode ✓ [rank0]: Traceback"
    assert plain(text) is text


class _Counted:
    """One of plain_text's patterns, counting the characters each of its scans reads: from where it starts to
    where it stops (its match's end, or the text's end where a search finds nothing), plus one."""

    def __init__(self, pattern, tally: list[int]) -> None:
        self._pattern, self._tally = pattern, tally

    def search(self, text: str, start: int = 0):
        found = self._pattern.search(text, start)
        self._tally[0] += (found.start() if found else len(text)) - start + 1
        return found

    def match(self, text: str, start: int = 0):
        found = self._pattern.match(text, start)
        self._tally[0] += found.end() - start + 1
        return found


HOSTILE = {
    "one CSI that never ends": "\x1b[" + "1" * 199_998,
    "introducers only": "\x1b]" * 100_000,
    "C1 OSC introducers only": "\x9d" * 200_000,
    "unterminated strings one after another": ("\x1b]" + "x" * 8) * 20_000,
    "one unterminated string": "\x1bP" + "a" * 199_998,
    "escapes with intermediates": "\x1b(" * 100_000,
    "carriage returns": "a\r" * 100_000,
    "colour on every character": "\x1b[31ma" * 40_000,
}


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
def test_the_work_is_linear_in_a_200000_character_line(monkeypatch, text):
    """Counted, not timed: a scan that went on past the next control (to the text's end, for each of 100,000
    introducers) would read billions of characters; plain_text reads each about twice."""
    tally = [0]
    for name in ("_CONTROL", "_CSI_REST", "_ESCAPE_REST"):
        monkeypatch.setattr(plain_text, name, _Counted(getattr(plain_text, name), tally))

    shown = plain(text)

    assert tally[0] <= 4 * len(text) + 10, tally[0]
    assert "\x1b" not in shown and "\x9d" not in shown and "\r" not in shown
