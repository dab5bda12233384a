"""A job that failed because its script reads its settings only as `--key=value` (nanoGPT's configurator.py)
and SageMaker passed them as pairs, `--batch_size 4`: the cause repeats the fix validate's warning gave.

Python names an exec()'d file `<string>` and prints none of its lines, so the traceback alone (`train.py:77`, the
`exec(open('configurator.py').read())` line, then `File "<string>", line 23` and a bare `AssertionError`) cannot
tell configurator.py's refusal from any other assert it runs. The source dir can, with the check the warning made
(specs/equals_arguments.py): where it is here (a local run, a job this process submitted), and the error is an
AssertionError at the very line that check names, the cause says so; anywhere else nothing is guessed."""

from __future__ import annotations

import re
from pathlib import Path

from orchestrator.specs.capabilities import rules
from orchestrator.specs.equals_arguments import equals_reader

WARNING_RULE = "hyperparameters-as-two-arguments"
_ASSERTION = re.compile(r"^AssertionError\b")


def refused_pairs_fix(exception: str | None, script: str, line: int, source_dir: Path | None) -> str | None:
    """The warning's fix where `exception` is an AssertionError raised at `script:line` (a path inside the source
    dir) and that line runs the script's reader of `--key=value`; None otherwise, or where the source dir is not
    here to tell."""
    if source_dir is None or exception is None or not _ASSERTION.match(exception):
        return None
    found = equals_reader(source_dir, script)
    if found is None or found.line != line:
        return None
    return rules()[WARNING_RULE].fix.format(script=script)
