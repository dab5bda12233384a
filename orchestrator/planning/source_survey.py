"""Which script of a folder is the training job's entry point, and what the folder holds beside it (`smtrain init`).

Bounded whatever the folder holds: it looks only at what packing would ship (`left_out_of_package`: no `.git`,
virtualenv, cache, secret, run directory or `.smtrainignore`d path), lists at most MAX_FILES_LISTED files and
folders, reads at most MAX_SCRIPTS_READ of them, each through specs/source_files.py (no FIFO, no link out, nothing
over 1 MiB), and never runs or imports one."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from orchestrator.errors import SpecError
from orchestrator.planning.framework_reading import canonical_name
from orchestrator.planning.packaging import left_out_of_package
from orchestrator.planning.script_reading import ScriptReading, read_script
from orchestrator.specs.source_files import source_file_text

MAX_FILES_LISTED = 5000
MAX_SCRIPTS_READ = 100
ENTRY_POINT_NAMES = ("train.py", "main.py")
"""Taken as the entry point, in this order, where the folder holds one at its top."""
REQUIREMENTS = "requirements.txt"
_MAIN_GUARD = re.compile(r"""__name__\s*==\s*["']__main__["']|["']__main__["']\s*==\s*__name__""")
_NOT_ENTRY_POINTS = re.compile(r"(?:^|/)(?:setup\.py|conftest\.py|test_[^/]*\.py|[^/]*_test\.py)$")
_NAMED = 5
_REQUIREMENT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*")
_INCLUDE = re.compile(r"^(?:-r|--requirement)(?:\s*=\s*|\s+)(\S+)$")
_EGG = re.compile(r"#egg=([A-Za-z0-9._-]+)")
_EDITABLE = re.compile(r"^(?:-e|--editable)(?:\s*=\s*|\s+)")
_LOCATED = re.compile(r"://|^[./~]")
"""A requirement given by its location (`git+https://.../transformers.git`, `./wheels/x.whl`), not its name."""
_ARCHIVE = re.compile(r"(?:\.git|-\d[^/]*\.(?:whl|zip|tar\.gz|tgz))$")


@dataclass(frozen=True)
class SourceSurvey:
    """A source folder as `init` found it."""

    directory: Path
    entry_point: str
    """Relative to `directory`, with `/`."""
    reading: ScriptReading
    readable: bool
    """The entry point's text was read; False for a binary file, one over 1 MiB or no regular file."""
    requirements: bool
    """A requirements.txt at the top, which the toolkit installs before the script starts."""
    required: frozenset[str]
    """The canonical names of the distributions requirements.txt installs (a `-r` include followed one level)."""
    listed_all: bool
    """False where the folder holds more than MAX_FILES_LISTED files to ship: the entry point was looked for among
    the first ones."""


def survey_source(directory: Path, entry_point: str | None = None) -> SourceSurvey:
    """The folder's entry point (`entry_point` where given) and what it reads.

    Raises:
        SpecError: `directory` is no folder; `entry_point` is no file in it; no script or several could be it.
    """
    if not directory.is_dir():
        raise SpecError(f"{directory} is not a folder", fix="give the folder that holds your training script")
    scripts, listed_all = _python_files(directory)
    if entry_point is not None and not _is_file_inside(directory, entry_point):
        raise SpecError(f"--entry-point {entry_point} is not a file in {directory}",
                        fix="give the script's path relative to the folder" + _among(scripts))
    chosen = entry_point if entry_point is not None else _entry_point(directory, scripts)
    text = source_file_text(directory, chosen)
    readable = text is not None and "\x00" not in text
    return SourceSurvey(directory=directory, entry_point=chosen,
                        reading=read_script(text) if readable and text is not None else ScriptReading(parsed=False),
                        readable=readable, requirements=(directory / REQUIREMENTS).is_file(),
                        required=_required(directory, REQUIREMENTS, follow=True), listed_all=listed_all)


def _required(directory: Path, relative: str, follow: bool) -> frozenset[str]:
    """The distributions a requirements file names, by name, `#egg=` or the last part of their location."""
    names: set[str] = set()
    for raw in (source_file_text(directory, relative) or "").splitlines():
        line = re.sub(r"(^|\s)#(?!egg=).*", "", raw).split(";")[0].strip()
        included = _INCLUDE.match(line)
        if included and follow:
            names |= _required(directory, (Path(relative).parent / included[1]).as_posix(), follow=False)
        named = _requirement_name(line)
        if named:
            names.add(canonical_name(named))
    return frozenset(names)


def _requirement_name(line: str) -> str | None:
    """`transformers` of `transformers[torch]>=4.40`, `deepspeed @ https://...`, `...#egg=transformers` and
    `git+https://github.com/huggingface/transformers.git`, also installed editable (`-e`); None for an option
    line (`-r`, `--index-url`)."""
    line = _EDITABLE.sub("", line)
    if line.startswith("-"):
        return None
    egg = _EGG.search(line)
    if egg:
        return egg[1]
    if _LOCATED.search(line) and "@" not in line.split("://")[0]:
        line = _ARCHIVE.sub("", line.rstrip("/").rsplit("/", 1)[-1])
    found = _REQUIREMENT_NAME.match(line)
    return found[0] if found else None


def _python_files(directory: Path) -> tuple[list[str], bool]:
    """The `.py` files packing would ship, top folder first, and whether every file and folder to ship was
    listed."""
    left_out = left_out_of_package(directory)
    found: list[str] = []
    listed = 0
    for root, folders, names in os.walk(directory, onerror=lambda error: None):
        here = Path(root)
        for name in sorted(names, key=lambda name: (not name.endswith(".py"), name)):  # scripts first
            path = here / name
            if listed >= MAX_FILES_LISTED:
                return found, False
            if left_out(path):
                continue
            listed += 1
            if name.endswith(".py") and path.is_file():  # not a FIFO, whose reading never ends
                found.append(path.relative_to(directory).as_posix())
        folders[:] = sorted(name for name in folders if not left_out(here / name))
        listed += len(folders)  # a tree of empty folders is bounded too
        if listed > MAX_FILES_LISTED:
            return found, False
    return found, True


def _entry_point(directory: Path, scripts: list[str]) -> str:
    """train.py or main.py at the top; else the shallowest of the scripts so named or with a main guard, a named
    one first (`smtrain init .` over a project's src/train.py)."""
    named = next((name for name in ENTRY_POINT_NAMES if name in scripts), None)
    if named is not None:
        return named
    candidates = [script for script in scripts if Path(script).name in ENTRY_POINT_NAMES]
    candidates += [script for script in scripts[:MAX_SCRIPTS_READ] if script not in candidates
                   and not _NOT_ENTRY_POINTS.search(script)
                   and _MAIN_GUARD.search(source_file_text(directory, script) or "")]
    shallowest = [script for script in candidates if script.count("/") == min(s.count("/") for s in candidates)]
    for name in ENTRY_POINT_NAMES:
        named_here = [script for script in shallowest if Path(script).name == name]
        if named_here:
            shallowest = named_here
            break
    if len(shallowest) == 1:
        return shallowest[0]
    if shallowest:
        raise SpecError(f"{directory}: several scripts could be the entry point: {', '.join(shallowest[:_NAMED])}",
                        fix=f"name it: smtrain init {directory} --entry-point {shallowest[0]}")
    raise SpecError(f"{directory} holds no training script: no {' or '.join(ENTRY_POINT_NAMES)}, and no .py file "
                    "with `if __name__ == \"__main__\":`", fix="give it: --entry-point PATH (relative to the folder)"
                    + _among(scripts))


def _is_file_inside(directory: Path, relative: str) -> bool:
    path = directory / relative
    return path.is_file() and path.resolve().is_relative_to(directory.resolve())


def _among(scripts: list[str]) -> str:
    return f"; its scripts: {', '.join(scripts[:_NAMED])}" if scripts else ""
