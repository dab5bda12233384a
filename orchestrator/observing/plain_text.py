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

Invisible and bidirectional characters (zero-width spaces and joiners, direction marks, embeddings, overrides and
isolates, the BOM) are shown instead, as `<U+202E>`: one reverses or hides part of a line (`Failed` made to read
as other text, a path in a failure location shown as another, the "trojan source" of compilers), so, as compilers
and GitHub do, the text says where each one is; removing them silently would change what the job wrote without a
trace. Every other character (accents, CJK, emoji, right-to-left letters themselves) stays as it is. Masking reads
a line both with and without these marks (`redact.SHOWN_CHARACTER`), so one written inside a secret cannot split
it out of masking's sight.

Linear in the text's length: the only scans are a search for the next control or invisible character and, from a
control, a match that stops at the next one; a scan never goes back, and an unterminated string's payload is read
twice at most.
"""

from __future__ import annotations

import re

_CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f"
"""Every C0 control but tab and newline, DEL, and every C1 control (U+0080-U+009F)."""
_LAST_CONTROL = "\x9f"
_CONTROL = re.compile(f"[{_CONTROLS}]")
_INVISIBLE = "\u061c\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff"
"""The Arabic letter mark; zero-width space, non-joiner, joiner, left-to-right and right-to-left marks; the
embeddings and overrides (LRE, RLE, PDF, LRO, RLO) and isolates (LRI, RLI, FSI, PDI); the BOM (zero-width
no-break space)."""
_CONTROL_OR_INVISIBLE = re.compile(f"[{_CONTROLS}{_INVISIBLE}]")
"""Where plain text differs from what the job wrote: a control, or an invisible character shown."""
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
    `<U+XXXX>`."""
    found = _CONTROL_OR_INVISIBLE.search(text)
    if found is None:
        return text
    kept: list[str] = []
    start = 0
    while found is not None:
        at = found.start()
        kept.append(text[start:at])
        if text[at] > _LAST_CONTROL:  # an invisible character: shown where it was
            kept.append(f"<U+{ord(text[at]):04X}>")
            start = at + 1
        else:
            if text[at] == "\r" and text[at - 1:at] not in _LINE_EDGES and text[at + 1:at + 2] not in _LINE_EDGES:
                kept.append("\n")  # between two texts: what it would overwrite stays, on the line above
            start = _sequence_end(text, at)
        found = _CONTROL_OR_INVISIBLE.search(text, start)
    kept.append(text[start:])
    return "".join(kept)


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
