"""orchestrator/'s modules parsed once per test process: the architecture checks each walk the whole package,
and parsing it is most of their time."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "orchestrator"


@functools.cache
def package_trees() -> dict[Path, ast.Module]:
    """Each module's path below orchestrator/ and its syntax tree, in path order; callers only read them."""
    return {path.relative_to(PACKAGE): ast.parse(path.read_text(), str(path))
            for path in sorted(PACKAGE.rglob("*.py"))}
