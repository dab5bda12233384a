"""A job's text as smtrain holds and shows it: plain text, every terminal control removed, every invisible character
shown.

A job's output is not smtrain's to trust: a dependency, a dataset string or a hostile script can print escape
sequences that set the terminal's title, write its clipboard (OSC 52), hide text, move the cursor to overwrite an
earlier line (a failed job made to read as completed), ring the bell, or reach a terminal's own bugs. So a job's
text loses every control where it enters smtrain (a local run's pipes and log files, CloudWatch's events,
SageMaker's FailureReason), before its secrets are masked and before the failure reader matches it: a sequence
written inside a secret cannot hide the secret from masking, and the terminal, a pipe, a file and `--output json`
all get the same text.

Colour (SGR, `ESC[31m`) goes too: a job's text reaches a file or `grep` as often as a terminal, masking and the
failure reader see the text without it, and one rule for every destination keeps `smtrain logs | grep` and the
terminal alike. Sequences are removed, never shown escaped: they carry no words for the reader, and tqdm or rich
progress bars print many. What a control would have hidden stays: a carriage return between two texts becomes a
line break, so the line it would have overwritten stays above what overwrote it (each state of a tqdm bar a line
of its own, as CloudWatch's console shows them), and a string sequence (OSC, DCS, SOS, PM, APC) whose terminator
never comes loses only its opening, its payload stays visible. Tab and newline stay.

Invisible and bidirectional characters are shown instead, as `<U+202E>`: one reverses or hides part of a line
(`Failed` made to read as other text, a path in a failure location shown as another, the "trojan source" of
compilers), or splits a word or a secret with nothing to see, so, as compilers and GitHub do, the text says where
each one is; removing them silently would change what the job wrote without a trace. Which ones is Unicode's to
say, not a list of known tricks: every format character (category Cf: direction marks, embeddings, overrides and
isolates, zero-width spaces and joiners, the word joiner and invisible operators, the soft hyphen, the BOM, tag
characters, interlinear annotation), every other default-ignorable code point (the combining grapheme joiner,
Hangul fillers, reserved ones), and the line and paragraph separators. A terminal draws none of them as a glyph of
its own. The separators are shown rather than made line breaks: most terminals draw nothing for them while
Python's `splitlines` breaks there, so passed on a line would read as one line here and two there, and made a break
a secret split by one would be two lines, which masking cannot join; a job ends its lines with `\n`.

A variation selector (U+FE0F, U+E0100...) picks the glyph of the character before it: after an emoji or a CJK
ideograph (`⭐️` as wandb prints it) it is part of what the job means to print and stays; anywhere else (after
ASCII, at the start, after another selector or an invisible character) it varies nothing, hides where it is, and is
shown. The zero-width joiner is shown everywhere, inside an emoji sequence too (`👨<U+200D>👩`): the stdlib cannot
tell a sequence a font draws as one emoji from a joiner glued between any two characters, and the emoji stay
readable beside the mark. Every other character (accents, CJK, emoji,
right-to-left letters themselves) stays as it is. Masking reads a line both with and without these marks
(`redact.SHOWN_CHARACTER`), so one written inside a secret cannot split it out of masking's sight.

Linear in the text's length: the only scans are a search for the next control or invisible character and, from a
control, a match that stops at the next one; a scan never goes back (what it found and, for a variation selector,
the one character before are looked at once), and an unterminated string's payload is read twice at most.
"""

from __future__ import annotations

import re

_CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f"
"""Every C0 control but tab and newline, DEL, and every C1 control (U+0080-U+009F)."""
_LAST_CONTROL = "\x9f"
_CONTROL = re.compile(f"[{_CONTROLS}]")
_INVISIBLE_IN_THE_BMP = ("\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160\u17b4\u17b5"
                         "\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164\ufeff\uffa0\ufff0-\ufffb")
_INVISIBLE_BEYOND_THE_BMP = ("\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
                             "\U000e0000-\U000e00ff\U000e01f0-\U000e0fff")
_INVISIBLE = _INVISIBLE_IN_THE_BMP + _INVISIBLE_BEYOND_THE_BMP
"""Unicode's format characters (Cf, as of Unicode 15.1) and its other default-ignorable code points
(DerivedCoreProperties.txt) but the variation selectors, and the line and paragraph separators (Zl, Zp). By
code point, not by `unicodedata` at each import: reading all 1,114,112 takes a noticeable part of a second; the
tests hold the list against the running Python's `unicodedata`."""
_VARIATION_SELECTORS = "\u180b-\u180d\u180f\ufe00-\ufe0f\U000e0100-\U000e01ef"
_VARIATION_SELECTOR = re.compile(f"[{_VARIATION_SELECTORS}]")
_VARIED = re.compile(f"[^\x00-\x7f{_CONTROLS}{_INVISIBLE}{_VARIATION_SELECTORS}]")
"""A character a variation selector after it picks the glyph of: one shown as itself, not ASCII."""
_SHOWN = re.compile(f"[{_INVISIBLE}]")
_BEYOND_THE_BMP = "\U000110bd-\U0001d17a\U000e0000-\U000e0fff"
"""The two spans that hold every invisible character beyond U+FFFF (emoji lie between them)."""
_CONTROL_OR_MAYBE_INVISIBLE = re.compile(f"[{_CONTROLS}{_INVISIBLE_IN_THE_BMP}{_VARIATION_SELECTORS}{_BEYOND_THE_BMP}]")
"""Where plain text may differ from what the job wrote: a control, an invisible character, a variation selector,
or a character of `_BEYOND_THE_BMP` (`_stays` tells which stay). Every line of a job goes through this search, and
Python's regex engine runs it about as fast as the controls' alone, several times slower with the many small
ranges of `_INVISIBLE_BEYOND_THE_BMP` in the class."""
_CSI_REST = re.compile("[0-?]*[ -/]*[@-~]?")
"""A CSI's parameters, intermediates and final byte: none of them a control, so the match ends at the next one."""
_ESCAPE_REST = re.compile("[ -/]*[0-~]?")
"""The rest of a two-character escape (`ESC 7`, `ESC c`) or one with intermediates (`ESC ( B`)."""
_CSI_OPENERS = frozenset({"\x1b[", "\x9b"})
_STRING_OPENERS = frozenset({"\x1b]", "\x1bP", "\x1bX", "\x1b^", "\x1b_", "\x9d", "\x90", "\x98", "\x9e", "\x9f"})
"""OSC, DCS, SOS, PM and APC, in their ESC and C1 forms: a payload up to a terminator."""
_ONE_CHARACTER_TERMINATORS = frozenset({"\x07", "\x9c"})
_ESCAPE_TERMINATOR = "\x1b\\"
_LINE_EDGES = ("", "\r", "\n")
"""Beside a carriage return, what makes it no break between two texts: the text's end, or another line end."""


def plain(text: str) -> str:
    """`text` without any terminal control: escape sequences, C0 controls but tab and newline, DEL, C1 controls;
    a carriage return between two texts is a line break; each invisible or bidirectional character shown as
    `<U+XXXX>` (`<U+E0041>` beyond U+FFFF)."""
    kept: list[str] = []
    start = 0
    found = _CONTROL_OR_MAYBE_INVISIBLE.search(text)
    while found is not None:
        at = found.start()
        if _stays(text, at):
            found = _CONTROL_OR_MAYBE_INVISIBLE.search(text, at + 1)
            continue
        kept.append(text[start:at])
        if text[at] > _LAST_CONTROL:  # an invisible character: shown where it was
            kept.append(f"<U+{ord(text[at]):04X}>")
            start = at + 1
        else:
            if text[at] == "\r" and text[at - 1:at] not in _LINE_EDGES and text[at + 1:at + 2] not in _LINE_EDGES:
                kept.append("\n")  # between two texts: what it would overwrite stays, on the line above
            start = _sequence_end(text, at)
        found = _CONTROL_OR_MAYBE_INVISIBLE.search(text, start)
    if not kept:
        return text
    kept.append(text[start:])
    return "".join(kept)


def _stays(text: str, at: int) -> bool:
    """Whether the character the search found at `at` stays as the job wrote it: a variation selector that picks
    the glyph of the character before it (`⭐️`), or a character beyond U+FFFF that is no invisible one (a musical
symbol, a hieroglyph)."""
    if _VARIATION_SELECTOR.match(text, at):
        return at > 0 and _VARIED.match(text, at - 1) is not None
    return text[at] > "\uffff" and _SHOWN.match(text, at) is None


def _sequence_end(text: str, at: int) -> int:
    """Where the control sequence that starts at `at` ends (exclusive)."""
    opener = text[at:at + 2] if text[at] == "\x1b" else text[at]
    if opener in _CSI_OPENERS:
        return _CSI_REST.match(text, at + len(opener)).end()  # type: ignore[union-attr]  # matches '' at least
    if opener in _STRING_OPENERS:
        payload = at + len(opener)
        end = _CONTROL.search(text, payload)
        if end is not None and text[end.start()] in _ONE_CHARACTER_TERMINATORS:
            return end.start() + 1
        if end is not None and text.startswith(_ESCAPE_TERMINATOR, end.start()):
            return end.start() + len(_ESCAPE_TERMINATOR)
        return payload  # never terminated: only the opening goes, the payload stays visible
    if text[at] == "\x1b":
        return _ESCAPE_REST.match(text, at + 1).end()  # type: ignore[union-attr]  # matches '' at least
    return at + 1
