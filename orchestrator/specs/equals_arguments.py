"""Whether a job's script reads its overrides only as `--key=value`, one argument each, as nanoGPT's configurator.py
(and the many scripts copied from it) does: SageMaker's toolkit passes each hyperparameter as two arguments
(`--key value`), which such a script refuses at the first, with a bare AssertionError that names neither."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from orchestrator.specs.source_files import source_file_text

_EXECUTED_FILE = re.compile(r"exec\(\s*open\((?P<path>[^()]*(?:\([^()]*\))?[^()]*)\)\s*\.read\(\)\s*\)")
"""`exec(open('configurator.py').read())`, also with `os.path.join('nanochat', 'configurator.py')` inside."""
_LITERAL = re.compile(r"""['"]([^'"\n]+)['"]""")
_NO_EQUALS_REFUSED = re.compile(r"""['"]=['"]\s+not\s+in\s+\w+""")
_SPLIT_AT_EQUALS = re.compile(r"""\.split\(\s*['"]=['"]""")


@dataclass(frozen=True)
class EqualsReader:
    """The file that reads the `--key=value` arguments, relative to the source dir, and the line of the entry point
    that runs it (or, where the entry point reads them itself, that refuses an argument without `=`)."""

    reader: str
    line: int

    def where(self, entry_point: str) -> str:
        if self.reader == entry_point:
            return f"at {entry_point}:{self.line}"
        return f"in {self.reader}, run at {entry_point}:{self.line}"


def equals_reader(source_dir: str | Path, entry_point: str) -> EqualsReader | None:
    """The entry point's reader of `--key=value` arguments: the entry point itself, or a file of the source dir it
    runs with `exec(open(...).read())` (its working directory on SageMaker is the source dir's copy), that refuses
    an argument without `=` and splits the others at it. None for any other script, or one that cannot be read."""
    directory = Path(source_dir)
    script = source_file_text(directory, entry_point)
    if script is None:
        return None
    if _reads_equals(script):
        return EqualsReader(entry_point, _line(script, _NO_EQUALS_REFUSED.search(script).start()))
    for match in _EXECUTED_FILE.finditer(script):
        executed = "/".join(_LITERAL.findall(match["path"]))
        text = source_file_text(directory, executed) if executed else None
        if text is not None and _reads_equals(text):
            return EqualsReader(executed, _line(script, match.start()))
    return None


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _reads_equals(text: str) -> bool:
    return "sys.argv" in text and bool(_NO_EQUALS_REFUSED.search(text)) and bool(_SPLIT_AT_EQUALS.search(text))
