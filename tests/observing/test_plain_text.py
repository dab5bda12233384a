"""A job's text without terminal control (observing/plain_text.py): each class of control goes, colour included,
what it would have hidden stays; each invisible or bidirectional character is shown where it was, every other
character stays; the set is Unicode's (format characters, line and paragraph separators, default-ignorables),
held against the running Python's unicodedata; masking after it still hides a secret such a character was written
into; and the work is linear in the text's length, counted in characters scanned."""

from __future__ import annotations

import unicodedata

import pytest
from terminal_controls import CONTROLS, DEFAULT_IGNORABLE_BEYOND_FORMAT, INVISIBLES, ORDINARY, SPLITTERS

from orchestrator.observing import plain_text
from orchestrator.observing.plain_text import plain
from orchestrator.redact import MASK, SHOWN_CHARACTER, mask_text

SECRET = "hunter2-not-for-logs"
HF_TOKEN_VALUE = "hf_" + "a1B2c3D4e5" * 4


@pytest.mark.parametrize("printed, shown", CONTROLS.values(), ids=CONTROLS.keys())
def test_each_class_of_control_is_removed_and_the_text_stays(printed, shown):
    assert plain(printed) == shown


def test_text_without_a_control_is_returned_as_it_is():
    text = "epoch=1 step=10/90 ünïcode ✓ [rank0]: Traceback"
    assert plain(text) is text


@pytest.mark.parametrize("printed, shown", INVISIBLES.values(), ids=INVISIBLES.keys())
def test_each_invisible_or_bidirectional_character_is_shown_where_it_was(printed, shown):
    assert plain(printed) == shown


def test_accents_cjk_emoji_and_right_to_left_letters_stay_as_they_are():
    text = f"step 1 {ORDINARY}"
    assert plain(text) is text


def test_every_format_character_and_separator_unicode_knows_is_shown_where_it_was():
    """Unicode's category, not a list of known tricks: each format character (Cf) and the line and paragraph
    separators (Zl, Zp) that the running Python's unicodedata knows, beyond U+FFFF too (tag characters)."""
    characters = [chr(code) for code in range(0x110000) if unicodedata.category(chr(code)) in ("Cf", "Zl", "Zp")]

    shown = plain("".join(f"a{character}" for character in characters))

    assert shown == "".join(f"a<U+{ord(character):04X}>" for character in characters)


def test_every_other_default_ignorable_code_point_is_shown_where_it_was():
    """Unicode's Default_Ignorable_Code_Point, which unicodedata does not give: variation selectors (here after
    ASCII, where they vary nothing), the combining grapheme joiner, Hangul fillers, reserved ones."""
    characters = [chr(code) for code in DEFAULT_IGNORABLE_BEYOND_FORMAT]

    shown = plain("".join(f"a{character}" for character in characters))

    assert shown == "".join(f"a<U+{ord(character):04X}>" for character in characters)


def test_every_other_character_stays_as_it_is():
    """Letters, marks, digits, symbols, punctuation and spaces of every script (each code point but controls,
    format characters, separators of lines, surrogates, private use, unassigned and default-ignorables) pass."""
    ignorable = frozenset(DEFAULT_IGNORABLE_BEYOND_FORMAT)
    text = "".join(chr(code) for code in range(0x110000)
                   if unicodedata.category(chr(code))[0] != "C" and unicodedata.category(chr(code)) not in ("Zl", "Zp")
                   and code not in ignorable)

    assert plain(text) is text


def test_a_variation_selector_stays_only_after_a_character_it_can_vary():
    """After an emoji or an ideograph a selector picks its glyph (wandb's `⭐️`); after ASCII, at the start or after
    another selector or mark it varies nothing and would hide where it is."""
    assert plain("wandb: ⭐\ufe0f View project 葛\U000e0100") == "wandb: ⭐\ufe0f View project 葛\U000e0100"
    assert plain("⭐\ufe0f\ufe0f") == "⭐\ufe0f<U+FE0F>"
    assert plain("⭐\u200b\ufe0f") == "⭐<U+200B><U+FE0F>"
    assert plain("⭐\x1b[0m\ufe0f") == "⭐<U+FE0F>"
    assert plain("\ufe0fok") == "<U+FE0F>ok"


def test_a_joiner_inside_an_emoji_sequence_is_shown_as_everywhere_else():
    assert plain("👨\u200d👩\u200d👧 family") == "👨<U+200D>👩<U+200D>👧 family"


def test_a_line_separator_is_shown_so_that_every_reader_splits_the_same_lines():
    """Python's splitlines breaks at U+2028, U+2029 and some controls where a terminal does not: in plain text
    none is left, so a reader splitting at `\\n` and one using splitlines see the same lines."""
    shown = plain("a\u2028b\u2029c\x0bd\x0ce\x1cf\x1dg\x1eh\x85i\r\nj")

    assert shown.splitlines() == shown.split("\n") == ["a<U+2028>b<U+2029>cdefghi", "j"]


def test_a_control_beside_an_invisible_character_goes_and_the_character_is_shown():
    assert plain("\x1b[31m\u202eFailed\x1b[0m\u202c\rCompleted") == "<U+202E>Failed<U+202C>\nCompleted"


@pytest.mark.parametrize("character", [*(chr(code) for code in (0x061C, *range(0x200B, 0x2010), *range(0x202A, 0x202F),
                                                                 *range(0x2066, 0x206A), 0xFEFF)),
                                       *SPLITTERS.values()])
def test_each_mark_is_one_masking_reads_through(character):
    """redact.SHOWN_CHARACTER is how masking knows a mark: it must know every one plain_text writes."""
    assert SHOWN_CHARACTER.fullmatch(plain(character))


@pytest.mark.parametrize("printed, shown", [
    (f"token {SECRET[:7]}\u200b{SECRET[7:]} end", f"token {MASK} end"),
    (f"token {SECRET[:3]}\u202e{SECRET[3:9]}\u202c{SECRET[9:]} end", f"token {MASK} end"),
    (f"token {SECRET[:7]}\u200b\u200c\u2066{SECRET[7:]} end", f"token {MASK} end"),
    (f"bad token {HF_TOKEN_VALUE[:10]}\ufeff{HF_TOKEN_VALUE[10:]}", f"bad token {MASK}"),
    ("cmd: run\u200b--api-key XYZ-1234 --lr 0.1", f"cmd: run<U+200B>--api-key {MASK} --lr 0.1"),
    (f"\u202e{SECRET}\u202c is it", f"<U+202E>{MASK}<U+202C> is it"),
    (f"{SECRET[:5]}<U+200B>{SECRET[5:]}", MASK),  # the job wrote the mark itself: still the secret it reads as
], ids=["zero-width space", "override and its end", "three in a row", "BOM in a token", "a mark glued to a flag",
        "marks around a secret", "a mark written as text"])
def test_a_character_written_inside_a_secret_does_not_hide_it_from_masking(printed, shown):
    """Plain first, masked after (as every reader of a job's text does): masking reads the line with the marks and
    without them, so a secret split by one is still hidden whole, the marks outside it still shown."""
    masked = mask_text(plain(printed), {SECRET})

    assert masked == shown
    assert SECRET not in masked and "XYZ-1234" not in masked and HF_TOKEN_VALUE[10:] not in masked


@pytest.mark.parametrize("splitter", SPLITTERS.values(), ids=SPLITTERS.keys())
def test_a_secret_split_by_any_character_shown_is_masked_whole(splitter):
    """Each class of character plain_text shows, written inside a known secret and inside a token masked by its
    form: masking reads through its mark, which goes with the secret."""
    printed = f"token {SECRET[:7]}{splitter}{SECRET[7:]} bad token {HF_TOKEN_VALUE[:10]}{splitter}{HF_TOKEN_VALUE[10:]}"

    masked = mask_text(plain(printed), {SECRET})

    assert masked == f"token {MASK} bad token {MASK}"


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
    "overrides only": "\u202e" * 200_000,
    "unterminated strings of zero-width spaces": ("\x1b]" + "\u200b" * 8) * 20_000,
    "line separators only": "\u2028" * 200_000,
    "tag characters only": "\U000e0041" * 200_000,
    "variation selectors only": "\ufe0f" * 200_000,
    "emoji each with its variation selector": "⭐\ufe0f" * 100_000,
    "selectors after ASCII": "a\U000e0100" * 100_000,
    "emoji only": "🚀" * 200_000,
}


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
def test_the_work_is_linear_in_a_200000_character_line(monkeypatch, text):
    """Counted, not timed: a scan that went on past the next control (to the text's end, for each of 100,000
    introducers) would read billions of characters; plain_text reads each about twice."""
    tally = [0]
    for name in ("_CONTROL", "_CONTROL_OR_MAYBE_INVISIBLE", "_CSI_REST", "_ESCAPE_REST"):
        monkeypatch.setattr(plain_text, name, _Counted(getattr(plain_text, name), tally))

    shown = plain(text)

    assert tally[0] <= 4 * len(text) + 10, tally[0]
    assert "\x1b" not in shown and "\x9d" not in shown and "\r" not in shown
    assert "\u202e" not in shown and "\u200b" not in shown
