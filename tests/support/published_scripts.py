"""`published(name, digests, source)`: the folder of published scripts this repository cannot keep, provided by
whoever runs the tests.

This workplace keeps code taken from other repositories out of its commits, so a test that runs such a script as
published is opt-in: `SMTRAIN_PUBLISHED_SCRIPTS` names a folder with one subfolder per source (`nanoGPT/`,
`hf-examples/`), and the test runs where every file is there with the digest its SOURCE records, and is skipped,
saying where the files come from and how to provide them, where one is missing.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VARIABLE = "SMTRAIN_PUBLISHED_SCRIPTS"
PROVIDED = os.environ.get(VARIABLE)
"""Read when the suite is collected: tests/conftest.py removes every SMTRAIN_ variable from each test's environment."""


def records(source: Path) -> dict[str, str]:
    """A SOURCE file's `key: value` lines: `repository: karpathy/nanoGPT`, `sha256 train.py: <digest>`."""
    return {key: value for key, sep, value in (line.partition(": ") for line in source.read_text().splitlines())
            if sep}


def published(name: str, digests: Mapping[str, str], source: Path) -> Path:
    """`<SMTRAIN_PUBLISHED_SCRIPTS>/<name>` where it holds every file of `digests` (paths inside it), each with its
    sha256; the test is skipped where one is missing, and fails where one differs: a run of other code would
    pass for the published one."""
    folder = Path(PROVIDED) / name if PROVIDED else None
    missing = [file for file in digests if folder is None or not (folder / file).is_file()]
    if missing:
        pytest.skip(_how_to_provide(name, missing, source))
    for file, digest in digests.items():
        if hashlib.sha256((folder / file).read_bytes()).hexdigest() != digest:
            pytest.fail(f"{folder / file} is not the published file {_relative(source)} records (sha256 {digest})")
    return folder


def _how_to_provide(name: str, missing: list[str], source: Path) -> str:
    """Where the files come from and the command that provides them, or the SOURCE that says where each is."""
    where = f"<folder>/{name}"
    record = records(source)
    if "repository" in record and "commit" in record:
        origin = f"{record['repository']} at {record['commit']} ({_relative(source)})"
        command = (f"git clone https://github.com/{record['repository']} {where} && "
                   f"git -C {where} checkout {record['commit']}")
    else:
        origin = f"the repositories and commits {_relative(source)} names"
        command = f"copy each from its commit as {where}/<path>"
    state = f"{VARIABLE}={PROVIDED}" if PROVIDED else f"{VARIABLE} is not set"
    return (f"needs the published {', '.join(missing)} ({state}; not kept in this repository): from {origin}; "
            f"{command}, then set {VARIABLE}=<folder>")


def _relative(source: Path) -> str:
    """SOURCE as the repository names it: tests/examples/nanogpt/SOURCE."""
    return source.resolve().relative_to(REPO).as_posix()
