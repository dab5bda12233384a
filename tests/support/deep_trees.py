"""A folder tree nested deeper than Python's recursion reaches (os.walk, rglob and shutil.rmtree recurse per level
before Python 3.12), made for one test and removed without recursion: left in pytest's temp folder, the next
session's cleanup of old temp folders would die with a RecursionError before any test ran."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

DEPTH = 1200


@contextmanager
def nested_folders(top: Path, depth: int = DEPTH) -> Iterator[Path]:
    """`top`/a/a/... `depth` folders deep (`top` itself is made too); yields `top`."""
    folders = [top / "a"]
    top.mkdir(parents=True, exist_ok=True)
    for _ in range(depth):
        folders[-1].mkdir()
        folders.append(folders[-1] / "a")
    try:
        yield top
    finally:
        for folder in reversed(folders[:-1]):
            folder.rmdir()
