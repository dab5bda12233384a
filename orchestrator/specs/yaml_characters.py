"""Characters that stop the YAML parser where its own words do not name them: a space that only looks like one (a
no-break space pasted from a web page or a document after `name:`), and an escape in double quotes that is no
character (`"\\ud800"`). PyYAML says "mapping values are not allowed here" a line later, or "found invalid Unicode
character escape code": the user is told the character, where it is and what to write instead."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

_WHERE_YAML_WANTS_A_SPACE = re.compile(r"^ *-?(?P<indenting>[^\S \t\r\n])|:(?P<separating>[^\S \t\r\n])")
"""A whitespace character other than a space or a tab after a key's `:`, or in a line's indentation or after its
`-`: where YAML separates with plain spaces only (it reads `name:<U+00A0>x` as the text `name:<U+00A0>x`, no key)."""
_UNICODE_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8}))")
_SURROGATES = range(0xD800, 0xE000)
_HIGH_SURROGATES = range(0xD800, 0xDC00)
_LOW_SURROGATES = range(0xDC00, 0xE000)


@dataclass(frozen=True)
class CharacterRefusal:
    """What to tell the user about a character that stopped the parser, and where it is (1-based)."""

    line: int
    column: int
    message: str
    fix: str


def unusual_space(text: str, through_line: int) -> CharacterRefusal | None:
    """The last space that only looks like one where YAML wants a plain space, on lines 1 to `through_line`
    (0-based, the line the parser stopped at): the parser stops at a later `:`, not at the character."""
    lines = text.splitlines()[:through_line + 1]
    for number in range(len(lines) - 1, -1, -1):
        found = list(_WHERE_YAML_WANTS_A_SPACE.finditer(lines[number]))
        if found:
            group = "separating" if found[-1]["separating"] else "indenting"
            char, column = found[-1][group], found[-1].start(group)
            return CharacterRefusal(
                number + 1, column + 1,
                f"YAML: a {_named(char)} at line {number + 1}, column {column + 1}, where YAML takes only a plain "
                f"space, so `{lines[number][:column].strip()}` is not read as meant",
                f"replace the {unicodedata.name(char, 'character').lower()} with a plain space (copying from a web "
                "page or a document can bring it in)")
    return None


def bad_unicode_escape(line: str) -> str | None:
    """The fix for a `\\uXXXX` or `\\UXXXXXXXX` escape on `line` that is no character: a UTF-16 surrogate (half of
    a pair JSON writes, which YAML does not join) or a code point past U+10FFFF."""
    codes = [(match[0], int(match[1] or match[2], 16), match.end()) for match in _UNICODE_ESCAPE.finditer(line)]
    for index, (written, code, end) in enumerate(codes):
        if code in _HIGH_SURROGATES and index + 1 < len(codes) and codes[index + 1][1] in _LOW_SURROGATES \
                and line.startswith(codes[index + 1][0], end):
            low = codes[index + 1][1]
            joined = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
            return (f"{written}{codes[index + 1][0]} is a UTF-16 surrogate pair, which YAML does not join into one "
                    f"character: write \\U{joined:08X} ({_named(chr(joined))}), or the character itself")
        if code in _SURROGATES:
            return (f"{written} is half of a UTF-16 surrogate pair, no character of its own: write the character "
                    "itself, or its \\U escape with 8 hex digits (\\U0001F600)")
        if code > 0x10FFFF:
            return f"{written} is past U+10FFFF, the last Unicode code point: check the hex digits"
    return None


def _named(char: str) -> str:
    return f"{unicodedata.name(char, 'unnamed character').lower()} (U+{ord(char):04X})"
