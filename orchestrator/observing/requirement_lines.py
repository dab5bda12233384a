"""The line of the source dir's requirements.txt that names the requirement pip could not install, so a failed
install points at the line to fix (`src/requirements.txt:3`), as a script's failure points at its frame. The same
for a local run and a SageMaker job: pip's output is the same text in both.

Two witnesses say where: pip itself, which prints where it read each requirement it collected (`Collecting x (from
-r requirements.txt (line 3))`, pip >= 23.1), and the source dir's requirements.txt where it is on this machine. In
the source dir a requirement is matched by its canonical name (PEP 503), whatever its extras, version or markers;
one installed from a path or URL by its last path component. A simple `-r other.txt` (a relative path inside the
source dir) is followed one level; what lies deeper, or behind a URL or a variable, has no line there.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestrator.contract import REQUIREMENTS_FILE
from orchestrator.specs.image_pins import canonical_name

_NEEDED_BY = r"(?: \(from (?!versions:)([^()]+)\))?"
"""pip's word for the requirement that needed a dependency it found no distribution for: `(from toppkg)` after
the dependency, the parent's name alone (every pip recorded, 22 to 26; pip 26 on its `No matching
distribution` line too)."""
_NOT_FOUND = (re.compile(rf"^ERROR: No matching distribution found for (.+?){_NEEDED_BY}$"),
              re.compile(rf"^ERROR: Could not find a version that satisfies the requirement (.+?){_NEEDED_BY}"
                         r"(?: \(from versions:.*)?$"))
_FAILED = (*_NOT_FOUND,
           re.compile(r"^ERROR: Failed to build '([^']+)'"),
           re.compile(r"^ERROR: Failed building wheel for (\S+)"),
           re.compile(r"^ERROR: Could not build wheels for ([^,\s]+)"),
           re.compile(r"^ERROR: Failed to build installable wheels for some pyproject\.toml based projects \(([^,)]+)"))
"""pip's words for the requirement it could not install, decisive first. Only pip's own lines count: an indented
line is a build's output (its own build dependencies), not the source dir's requirement."""
_BUILT = re.compile(r"^(?:Collecting|Processing|Obtaining) (\S+)")
_PIP_READ_AT = re.compile(r" \(from (?:(.*)->)?-r (.+) \(line (\d+)\)\)$")
"""Where pip read a requirement it collected, as pip >= 23.1 says it after the requirement: `(from -r
requirements.txt (line 3))`, `(from -r /opt/ml/code/reqs/base.txt (line 1))` for an include (pip 26 names it by
its absolute path, pip 23-25 as it was written), `(from toppkg->-r requirements.txt (line 2))` for a dependency
of the requirement on that line, `(from midpkg->chainpkg==1.0->-r requirements.txt (line 2))` for a dependency of
a dependency (what needed it first, the line's requirement last)."""
_ARCHIVE_NAME = re.compile(r"^(.+?)-\d.*\.(?:whl|zip|tgz|tar\.gz|tar\.bz2)$")
"""A distribution's name in its archive's file name: `mypkg` of `mypkg-1.0.tar.gz` or `flash_attn-2.5.6-...whl`."""
_BUILD_FAILED = re.compile(r"^error: [a-z]+(?:-[a-z]+)+$")
"""pip's diagnostic code for a build that failed (`error: subprocess-exited-with-error`, `error:
metadata-generation-failed`), after the `Collecting` or `Processing` line of the requirement it built."""
_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
_NAMED_URL = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*@")
_EDITABLE = re.compile(r"^(?:-e|--editable)(?:\s*=\s*|\s+)(\S+)")
_PATH_LIKE = re.compile(r"^(\.|/|~|file:)|://|[/\\]|\.(whl|zip|tgz|tar\.gz|tar\.bz2)$")
_EGG = re.compile(r"#egg=([A-Za-z0-9._-]+)")
_INCLUDE = re.compile(r"^(?:-r|--requirement)(?:\s*=\s*|\s+)(\S+)$")
_COMMENT = re.compile(r"(^|\s)#.*")


@dataclass(frozen=True)
class RequirementLine:
    """Where a requirement is written: a file of the source dir, relative to it, and its line where found."""

    file: str
    line: int | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


def project_name(requirement: str) -> str:
    """The project a requirement names, as written: `toppkg` of `toppkg[x]==1.0`; the requirement where it names
    none (a path)."""
    name = _NAME.match(requirement.strip())
    return name[0] if name else requirement


def failed_requirement(pip_lines: Sequence[str]) -> str | None:
    """The requirement pip says it could not install (`torchmetricz==99.0`, `flash-attn==2.5.6`, a path), or
    None where its output names none."""
    own = [line.rstrip() for line in pip_lines if line[:1] not in (" ", "\t")]
    for pattern in _FAILED:
        found = next((match[1].strip() for line in own if (match := pattern.match(line))), None)
        if found:
            return found
    failed = next((index for index, line in enumerate(own) if _BUILD_FAILED.match(line)), None)
    if failed is None:
        return None
    return next((match[1] for line in reversed(own[:failed]) if (match := _BUILT.match(line))), None)


def pip_read_at(pip_lines: Sequence[str], requirement: str | None) -> RequirementLine | None:
    """Where pip says it read `requirement` (the one it could not install): the file as pip names it, relative
    to the directory pip ran in or absolute, and its line; None where pip did not say (pip < 23.1; a requirement
    pip found no distribution for, which it never collected; a local folder, which pip names without it)."""
    said = _collected_from(pip_lines, requirement)
    return RequirementLine(said[2], int(said[3])) if said else None


def required_by(pip_lines: Sequence[str], requirement: str | None) -> tuple[str, ...]:
    """What pulled in `requirement` (the one pip could not install), the requirement written in requirements.txt
    first: `()` for a requirement written there; `("toppkg",)` for a dependency of toppkg pip found no
    distribution for (`... missing-dep>=2 (from toppkg)`); `("chainpkg==1.0", "midpkg")` for one pip collected
    (`Collecting mypkg==1.0 (from midpkg->chainpkg==1.0->-r requirements.txt (line 2))`, pip >= 23.1); for one it
    never collected, what pulled in its parent, then the parent: `("deeppkg", "toppkg")`."""
    parent = next((match[2] for line in pip_lines for pattern in _NOT_FOUND
                   if (match := pattern.match(line.rstrip())) and match[2]), None)
    said = _collected_from(pip_lines, parent or requirement)
    chain = tuple(reversed(said[1].split("->"))) if said and said[1] else ()
    return (*chain, parent) if parent else chain


def dependency_path(chain: Sequence[str], requirement: str) -> str:
    """`requirement` said from what requirements.txt names (`required_by`): `deeppkg needs toppkg, which needs
    missing-dep>=2`; `requirement` itself where requirements.txt names it."""
    if not chain:
        return requirement
    return f"{chain[0]} needs " + ", which needs ".join([*chain[1:], requirement])


def _collected_from(pip_lines: Sequence[str], requirement: str | None) -> re.Match[str] | None:
    """pip's `(from ...)` on the line where it collected `requirement` (`_PIP_READ_AT`'s groups: the chain of
    requirements that needed it, the file, the line); the last such line: pip collected it again where it
    failed."""
    wanted = _identities(requirement) if requirement else set()
    found = None
    for line in pip_lines:
        collected, said = _BUILT.match(line), _PIP_READ_AT.search(line)
        if collected and said and wanted & _identities(collected[1]):
            found = said
    return found


def requirement_line(source_dir: Path, requirement: str | None) -> RequirementLine:
    """Where the source dir's requirements.txt (or a simple `-r` file it includes) names `requirement`: the file
    and line; requirements.txt without a line where none does, or where `requirement` is None."""
    wanted = _identities(requirement) if requirement else set()
    written = _logical_lines(source_dir / REQUIREMENTS_FILE)
    if wanted:
        for file, lines in [(REQUIREMENTS_FILE, written), *_included(source_dir, written)]:
            number = next((number for number, text in lines if wanted & _identities(text)), None)
            if number is not None:
                return RequirementLine(file, number)
    return RequirementLine(REQUIREMENTS_FILE)


def _identities(requirement: str) -> set[tuple[str, str]]:
    """What names a requirement (`_identity`), and for an archive's path also the distribution it holds: pip
    names `mypkg==1.0` as `Processing /links/mypkg-1.0.tar.gz` where a find-links folder or a file: index has it."""
    identity = _identity(requirement)
    if identity is None:
        return set()
    archive = _ARCHIVE_NAME.match(identity[1]) if identity[0] == "path" else None
    return {identity, ("name", canonical_name(archive[1]))} if archive else {identity}


def _identity(requirement: str) -> tuple[str, str] | None:
    """What names a requirement: `("name", canonical)` for `Torch_Metrics[x]>=1; python_version>"3"`, `name @ URL`
    or a `#egg=name` fragment, `("path", last component)` for `./pkg`, a wheel or `file:///opt/ml/code/pkg`; None
    for an option (`--index-url`, `-c`)."""
    text = requirement.strip()
    editable = _EDITABLE.match(text)
    if editable:
        text = editable[1]
    elif not text or text.startswith("-"):
        return None
    named = _NAMED_URL.match(text) or _EGG.search(text)
    if named:
        return "name", canonical_name(named[1])
    first = text.split()[0]
    if _PATH_LIKE.search(first):
        return "path", re.split(r"[/\\]", first.rstrip("/\\"))[-1]
    name = _NAME.match(text)
    return ("name", canonical_name(name[0])) if name else None


def _logical_lines(path: Path) -> list[tuple[int, str]]:
    """A requirements file's requirements and options, each with the line it starts on: comments removed, a
    line ending in a backslash joined to the next, as pip reads it; none where the file cannot be read."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return []
    found: list[tuple[int, str]] = []
    start, parts = 0, []
    for number, line in enumerate(text.splitlines(), 1):
        start = start or number
        line = _COMMENT.sub("", line)
        if line.endswith("\\"):
            parts.append(line[:-1])
            continue
        joined = " ".join([*parts, line]).strip()
        if joined:
            found.append((start, joined))
        start, parts = 0, []
    return found


def _included(source_dir: Path, lines: list[tuple[int, str]]) -> Iterator[tuple[str, list[tuple[int, str]]]]:
    """Each file a `-r other.txt` line includes, relative to the source dir, with its lines, where it is a plain
    relative path of a file inside the source dir (no URL, no variable)."""
    root = source_dir.resolve()
    for _, text in lines:
        included = _INCLUDE.match(text)
        if included is None or "$" in included[1] or "://" in included[1] or included[1].startswith(("/", "~")):
            continue
        path = (source_dir / included[1]).resolve()
        if path.is_file() and path.is_relative_to(root):
            yield path.relative_to(root).as_posix(), _logical_lines(path)
