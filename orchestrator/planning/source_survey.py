"""Which script of a folder is the training job's entry point, and what the folder holds beside it (`smtrain init`):
its requirements, and the folder's own modules the script imports, whose reading is the job's too (a Trainer built
in `mytrain.py` launches the job as one built in the script does, a channel opened in `data.py` is the job's, and
the parser `args.py` builds, where the script calls into it, gives its options).

Bounded whatever the folder holds: it looks only at what packing would ship (`left_out_of_package`: no `.git`,
virtualenv, cache, secret, run directory or `.smtrainignore`d path), lists at most MAX_FILES_LISTED files and
folders, reads at most MAX_SCRIPTS_READ of them, each through specs/source_files.py (no FIFO, no link out, nothing
over 1 MiB), and never runs or imports one."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

from orchestrator.contract import REQUIREMENTS_FILE
from orchestrator.errors import SpecError
from orchestrator.planning.framework_reading import combined, read_frameworks
from orchestrator.planning.packaging import left_out_of_package
from orchestrator.planning.script_reading import ScriptReading, read_script
from orchestrator.specs.image_pins import canonical_name
from orchestrator.specs.source_files import source_file_text

MAX_FILES_LISTED = 5000
MAX_SCRIPTS_READ = 100
ENTRY_POINT_NAMES = ("train.py", "main.py")
"""Taken as the entry point, in this order, where the folder holds one at its top."""
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
_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+(?P<dots>\.*)(?P<origin>[\w.]*)[ \t]+import[ \t]+\(?(?P<names>[\w, \t*]+)"
                     r"|import[ \t]+(?P<modules>[\w., \t]+))", re.MULTILINE)
"""`from mytrain import build_trainer`, `from .model import Net` (in a package), `import helpers.data as data`:
read by pattern, so a script that does not parse is followed too."""


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
    imported_modules: tuple[str, ...] = ()
    """The folder's own modules the entry point imports (and they import), read with it."""


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
    modules = _imported_modules(directory, chosen, text if readable else None, frozenset(scripts))
    called = _called_modules(text or "", Path(chosen).parent, modules)
    reading = (read_script(text, tuple(modules.values()), tuple(modules[module] for module in called))
               if readable and text is not None else ScriptReading(parsed=False))
    frameworks = combined({chosen: reading.frameworks, **{module: read_frameworks(module_text)
                                                          for module, module_text in modules.items()}})
    return SourceSurvey(directory=directory, entry_point=chosen, reading=replace(reading, frameworks=frameworks),
                        readable=readable, requirements=(directory / REQUIREMENTS_FILE).is_file(),
                        required=_required(directory, REQUIREMENTS_FILE, follow=True), listed_all=listed_all,
                        imported_modules=tuple(modules))


def _imported_modules(directory: Path, entry_point: str, text: str | None, scripts: frozenset[str]) -> dict[str, str]:
    """The text of each of the folder's own modules that `entry_point` imports, and those import in turn, found
    as Python finds them: beside the entry point (its folder is the first on sys.path), a relative import in its
    package. At most MAX_SCRIPTS_READ, text files only."""
    top = Path(entry_point).parent
    read: dict[str, str] = {}
    pending = [(entry_point, text)]
    while pending:
        importer, importer_text = pending.pop(0)
        for module in _local_imports(importer_text or "", top, Path(importer).parent):
            if module in scripts and module != entry_point and module not in read and len(read) < MAX_SCRIPTS_READ:
                module_text = source_file_text(directory, module)
                if module_text is not None and "\x00" not in module_text:
                    read[module] = module_text
                    pending.append((module, module_text))
    return read


def _called_modules(text: str, top: Path, modules: dict[str, str]) -> list[str]:
    """The modules read that the entry point imports itself and calls into (`from args import parse_args` then
    `parse_args(`, `import args` then `args.parse_args(`): where it builds its parser, which a module it only
    imports, or one imported in turn, need not be."""
    called: list[str] = []
    for bound, files in _imports(text, top, top):
        if bound and re.search(rf"(?<![\w.]){re.escape(bound)}(?:\.\w+)*\s*\(", text):
            called += [file for file in files if file in modules and file not in called]
    return called


def _local_imports(text: str, top: Path, package: Path) -> list[str]:
    """The files (relative to the source folder) that `text`'s imports could name."""
    return [file for _, files in _imports(text, top, package) for file in files]


def _imports(text: str, top: Path, package: Path) -> list[tuple[str, list[str]]]:
    """Each name `text`'s imports bind, with the files (relative to the source folder) it could come from: `a.b`
    is `a.py`, `a/__init__.py`, `a/b.py` or `a/b/__init__.py`; a name imported from a package may be its
    module."""
    found: list[tuple[str, list[str]]] = []
    for match in _IMPORT.finditer(text):
        if match["modules"]:
            named = [name.split() for name in match["modules"].split(",") if name.split()]
            bound = [(words[-1] if len(words) > 1 else words[0].split(".")[0], [words[0]]) for words in named]
            base: Path | None = top
        else:
            base = _relative_base(package, len(match["dots"])) if match["dots"] else top
            if base is None:
                continue
            origin = [match["origin"]] if match["origin"] else []
            named = [name.split() for name in match["names"].split(",") if name.split() and name.strip() != "*"]
            bound = [(words[-1], [*origin, f"{match['origin']}.{words[0]}".strip(".")]) for words in named]
            bound = bound or [("", origin)]  # `from a import *`: the module is read, nothing callable named
        for name, dotted in bound:
            found.append((name, [file for module in dotted for file in _files(module, base)]))
    return found


def _files(dotted: str, base: Path) -> list[str]:
    """The files module `dotted` and the packages above it are, from `base`."""
    parts = dotted.split(".")
    files: list[str] = []
    for depth in range(1, len(parts) + 1):
        folder = base.joinpath(*parts[:depth])
        files += [folder.with_suffix(".py").as_posix(), (folder / "__init__.py").as_posix()]
    return files


def _relative_base(package: Path, dots: int) -> Path | None:
    """The folder `from .x import y` (one dot: the importer's package) or `from ..x import y` (its parent) starts
    in; None above the source folder."""
    if dots == 1:
        return package
    return package.parents[dots - 2] if dots - 2 < len(package.parents) else None


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
