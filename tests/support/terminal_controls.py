"""What a job may print to take over a terminal, one line per class of control, and what smtrain shows of it
(observing/plain_text.py): for the tests of plain_text itself and of the commands that show a job's text."""

import unicodedata

CONTROLS = {
    "colour (SGR)": ("loss \x1b[1;31m0.5\x1b[0m ok", "loss 0.5 ok"),
    "cursor up and erase line (CSI)": ("Failed\x1b[1A\x1b[2K\x1b[GCompleted", "FailedCompleted"),
    "CSI in its C1 form": ("a\x9b2Jb", "ab"),
    "terminal title (OSC, BEL)": ("\x1b]0;pwned\x07step 1", "step 1"),
    "clipboard write (OSC 52, ST)": ("x\x1b]52;c;cm0gLXJmIH4=\x1b\\y", "xy"),
    "OSC in its C1 form": ("a\x9d0;t\x9cb", "ab"),
    "DCS": ("a\x1bP1$qm\x1b\\b", "ab"),
    "APC, PM, SOS": ("a\x1b_apc\x1b\\b\x1b^pm\x1b\\c\x1bXsos\x1b\\d", "abcd"),
    "single ESC controls (reset, save cursor, charset)": ("\x1bc\x1b7\x1b(Bok\x1b8", "ok"),
    "C0 controls (bell, backspace, NUL, form feed)": ("bell\x07 back\x08\x08 nul\x00 ff\x0c!", "bell back nul ff!"),
    "DEL and C1 controls": ("a\x7fb\x85c\x8dd", "abcd"),
    "a carriage return that would overwrite the line": ("Failed: bad shape\rCompleted", "Failed: bad shape\nCompleted"),
    "a carriage return at a line's end": ("done\r\nnext\r", "done\nnext"),
    "an OSC never terminated: its payload stays": ("a\x1b]0;Error: real error", "a0;Error: real error"),
    "an escape cut at the text's end": ("a\x1b[", "a"),
    "tab and newline": ("a\tb\nc", "a\tb\nc"),
}

INVISIBLES = {
    "right-to-left override reversing a word": ("status: \u202edeliaF\u202c ok", "status: <U+202E>deliaF<U+202C> ok"),
    "embeddings (LRE, RLE, LRO) and their end (PDF)": ("a\u202ab\u202bc\u202dd\u202c", "a<U+202A>b<U+202B>c<U+202D>d<U+202C>"),
    "isolates (LRI, RLI, FSI, PDI)": ("\u2066a\u2067b\u2068c\u2069", "<U+2066>a<U+2067>b<U+2068>c<U+2069>"),
    "zero-width space, joiners and direction marks": ("x\u200by\u200cz\u200dw\u200ev\u200fu",
                                                     "x<U+200B>y<U+200C>z<U+200D>w<U+200E>v<U+200F>u"),
    "Arabic letter mark": ("a\u061cb", "a<U+061C>b"),
    "a BOM inside a line": ("train\ufeff.py", "train<U+FEFF>.py"),
    "a path hidden in a failure location": ('File "/opt/ml/code/\u202etxt.niart\u202c.py"',
                                            'File "/opt/ml/code/<U+202E>txt.niart<U+202C>.py"'),
    "line and paragraph separators": ("Failed\u2028Completed\u2029ok", "Failed<U+2028>Completed<U+2029>ok"),
    "word joiner and invisible operators": ("a\u2060b\u2061c\u2062d\u2063e\u2064f",
                                            "a<U+2060>b<U+2061>c<U+2062>d<U+2063>e<U+2064>f"),
    "soft hyphen": ("pass\u00adword", "pass<U+00AD>word"),
    "other format characters (Mongolian vowel separator, interlinear annotation, deprecated ones)": (
        "a\u180eb\ufff9c\ufffad\ufffbe\u206af\u206f", "a<U+180E>b<U+FFF9>c<U+FFFA>d<U+FFFB>e<U+206A>f<U+206F>"),
    "format characters beyond U+FFFF (musical beams, shorthand)": ("a\U0001d173b\U0001bca0c",
                                                                   "a<U+1D173>b<U+1BCA0>c"),
    "tag characters spelling hidden ASCII": ("ok\U000e0001\U000e0072\U000e006d\U000e007f",
                                             "ok<U+E0001><U+E0072><U+E006D><U+E007F>"),
    "combining grapheme joiner and Hangul fillers": ("a\u034fb\u3164c\uffa0d\u115fe",
                                                     "a<U+034F>b<U+3164>c<U+FFA0>d<U+115F>e"),
    "variation selectors that vary nothing": ("\ufe0fa\ufe0eb\U000e0100c\u180b",
                                              "<U+FE0F>a<U+FE0E>b<U+E0100>c<U+180B>"),
}
"""Invisible and bidirectional characters a job may print to make a line read as other text, and what smtrain
shows of them (observing/plain_text.py): each one, where it was."""
ORDINARY = "épreuve ñ 日本語 ✓ 🚀 עברית العربية wandb: ⭐\ufe0f 葛\U000e0100城 ᠠ\u180bᠡ"
"""Characters that only look unusual: accents, CJK, emoji, right-to-left letters themselves, and a variation
selector after an emoji, an ideograph or a Mongolian letter, which picks its glyph. They stay as they are."""
SPLITTERS = {
    "line separator": "\u2028", "paragraph separator": "\u2029", "word joiner": "\u2060",
    "function application": "\u2061", "invisible times": "\u2062", "invisible plus": "\u2064",
    "soft hyphen": "\u00ad", "Mongolian vowel separator": "\u180e", "interlinear annotation anchor": "\ufff9",
    "combining grapheme joiner": "\u034f", "Hangul filler": "\u3164", "musical beam": "\U0001d173",
    "tag letter": "\U000e0041", "variation selector": "\ufe0f", "supplementary variation selector": "\U000e0100",
}
"""One character of each class that plain_text shows, as a job may write it inside a secret: drawn as nothing, it
splits the secret with nothing to see."""
DEFAULT_IGNORABLE_BEYOND_FORMAT = [0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180B, 0x180C, 0x180D, 0x180F, 0x2065,
                                   0x3164, *range(0xFE00, 0xFE10), 0xFFA0, *range(0xFFF0, 0xFFF9), 0xE0000,
                                   *range(0xE0002, 0xE0020), *range(0xE0080, 0xE1000)]
"""Unicode's default-ignorable code points that are not format characters (DerivedCoreProperties.txt,
Default_Ignorable_Code_Point, less those of category Cf): variation selectors, the combining grapheme joiner,
Hangul fillers, Khmer inherent vowels, reserved ones. `unicodedata` has no such property, so they are written here."""

_IGNORABLE = frozenset(DEFAULT_IGNORABLE_BEYOND_FORMAT)


def unseen(text: str) -> list[str]:
    """The characters of `text` a terminal draws nothing for: format characters, line and paragraph separators,
    and the other default-ignorable code points (a variation selector included, wherever it is)."""
    return [character for character in text
            if unicodedata.category(character) in ("Cf", "Zl", "Zp") or ord(character) in _IGNORABLE]

