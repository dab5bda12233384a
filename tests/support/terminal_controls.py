"""What a job may print to take over a terminal, one line per class of control, and what smtrain shows of it
(observing/plain_text.py): for the tests of plain_text itself and of the commands that show a job's text."""

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
}
"""Invisible and bidirectional characters a job may print to make a line read as other text, and what smtrain
shows of them (observing/plain_text.py): each one, where it was."""
ORDINARY = "épreuve ñ 日本語 ✓ 🚀 עברית العربية"
"""Characters that only look unusual: accents, CJK, emoji, right-to-left letters themselves. They stay as they are."""
