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
