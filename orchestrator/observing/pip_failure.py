"""What pip's output says about a failed install of requirements.txt: the decisive line to quote (never an
informational one, never the output of a build's own pip), a dependency said from the requirement requirements.txt
names, and the fix. The same reader for a local run's install and a SageMaker job's: the toolkit runs the same pip,
whose lines are the same text in both. Which line of requirements.txt it points at is requirement_lines.py's; the
cause that quotes it is root_cause.py's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from orchestrator.contract import REQUIREMENTS_FILE
from orchestrator.observing.log_lines import EXCEPTION_LINE
from orchestrator.observing.requirement_lines import dependency_path, failed_requirement, project_name, required_by

_NO_INDEX_HAS = ", which no index has"
"""How a dependency pip found no distribution for is said: `toppkg needs missing-dep>=2, which no index has`."""
PIP_FAILURE = re.compile(r"^ERROR: (Could not find a version that satisfies the requirement .*|No matching "
                         r"distribution found for .*|Could not install packages .*|Failed building wheel for .*|"
                         r"Invalid requirement.*|Cannot install .*|ResolutionImpossible.*)$|InstallRequirementsError|"
                         rf"InstallModuleError|^error: [a-z]+(?:-[a-z]+)+\b|^\S+ needs .+{_NO_INDEX_HAS}\b")
"""pip's failures: its `ERROR:` lines, and the diagnostic codes of pip >= 22 (`error: subprocess-exited-with-error`,
`error: metadata-generation-failed`), which a failed build of a package prints instead; and a dependency no index
has, as `_missing_dependency` says pip's line about it."""
_TOOLKIT_INSTALL = re.compile(rf"-m pip install -r {re.escape(REQUIREMENTS_FILE)}"
                              r"|\b(InstallRequirementsError|InstallModuleError)\b")
_INSTALLS_REQUIREMENTS = re.compile(rf"-m pip install\b.* -r {re.escape(REQUIREMENTS_FILE)}")
"""The toolkit's pip command where it installs requirements.txt (alone, or after the source dir's package)."""
_SCRIPT_INVOKED = "Invoking script with the following command"
_PIP_FAILED_STEP = re.compile(r"^× (.+?)\.?$")
_PIP_OUTPUT = re.compile(r"^╰─> \[\d+ lines? of output\]$")
_PIP_OUTPUT_END = "[end of output]"
_PIP_DECISIVE = ("No matching distribution found for", "Could not find a version that satisfies")
_NO_DISTRIBUTION = re.compile(r"^ERROR: No matching distribution found for (\S+)")
_BUILD_DEPENDENCIES = "build dependencies"
"""pip's words for the step of a build that installs its build dependencies: pip 24's `pip subprocess to install build
dependencies`, pip 26's `installing build dependencies for mypkg`."""
_FROM_VERSIONS = re.compile(r"\(from versions: ([^)]*)\)")
_VERSIONS_KEPT = 3


def pip_failure_line(lines: Sequence[str]) -> str | None:
    """pip's decisive `ERROR:` line, never an informational one (`Ignored the following yanked versions`):
    `No matching distribution found for x` (said from the requirement requirements.txt names where x is its
    dependency: `_missing_dependency`), else `Could not find a version that satisfies ...`, else a build that
    failed (`_failed_build`), else the first other failure pip names (`Cannot install ...`, `Failed building wheel
    ...`), else its last `ERROR:` line. Only pip's own lines are read, never the indented ones: those are a
    build's output, whose own pip (the build's isolated environment, installing its build dependencies) says `No
    matching distribution found for setuptools>=40.8.0` of a requirement the user never wrote. A `(from versions:
    ...)` list of hundreds is cut to its first and last few."""
    errors = [text.rstrip() for text in lines if text.startswith("ERROR:")]
    decisive = next((line for phrase in _PIP_DECISIVE for line in errors if phrase in line), None)
    chosen = ((decisive and (_missing_dependency(lines) or decisive))
              or _failed_build(lines)
              or next((line for line in errors if PIP_FAILURE.match(line)), None)
              or (errors[-1] if errors else None))
    return _FROM_VERSIONS.sub(_shorter_versions, chosen) if chosen else None


def pip_fix(lines: Sequence[str]) -> str:
    """What to change where pip failed, by what its output says failed: a build whose build dependency no index
    has, a build, a dependency no index has, else the requirements themselves."""
    failed = pip_failure_line(lines)
    if build_tool := _missing_build_dependency(lines):
        package = project_name(named) if (named := failed_requirement(lines)) else "a package"
        return (f"the build of {package} needs {build_tool}, which the index pip reads lacks (a private index, as "
                "`--index-url` in requirements.txt names one): add `--extra-index-url https://pypi.org/simple` to "
                "requirements.txt (a line of its own), or mirror setuptools and wheel on that index, or require a "
                f"version of {package} that has a wheel")
    if failed and failed.startswith("error: "):
        return ("pip had to build a package of requirements.txt from source, and the build failed: require a version "
                "with a wheel for the image's Python and CUDA (or the wheel's URL); a build that imports torch does "
                "not see the image's torch in pip's isolated build environment: install such a package from the "
                "script with `pip install --no-build-isolation`")
    missing = failed_requirement(lines)
    needed_by = required_by(lines, missing) if missing else ()
    if needed_by and failed == _missing_dependency(lines):
        return (f"require a version of {project_name(needed_by[0])} whose dependencies an index has, or add the "
                f"index that has {project_name(missing)} to requirements.txt (`--extra-index-url URL`, a line of its "
                "own)")
    said = f" ({failed.removeprefix('ERROR: ')})" if failed else ""
    return (f"pip could not install the source dir's requirements.txt{said}: pin versions that exist for the "
            "image's Python, or drop packages the image already ships")


def toolkit_install_failed(error: str, lines: Sequence[str]) -> bool:
    """Whether a host's pip error is the toolkit's install before the script: the toolkit logged its install (the
    pip command, its InstallRequirementsError) and never invoked the script, so no rank ran on that host."""
    return (bool(PIP_FAILURE.search(error)) and any(_TOOLKIT_INSTALL.search(line) for line in lines)
            and not any(_SCRIPT_INVOKED in line for line in lines))


def installs_requirements_txt(lines: Sequence[str]) -> bool:
    """Whether the toolkit's pip command installed requirements.txt (not only the source dir's package)."""
    return any(_INSTALLS_REQUIREMENTS.search(line) for line in lines)


def _failed_build(lines: Sequence[str]) -> str | None:
    """A package pip had to build and could not, as pip >= 22 reports it: its diagnostic code, the requirement
    that failed (`failed_requirement`, the one the location points at), the step that failed and the build's own
    error, which pip prints indented between `╰─> [N lines of output]` and `[end of output]`: `error:
    subprocess-exited-with-error: flash-attn==2.5.6: Getting requirements to build wheel did not run successfully:
    ModuleNotFoundError: No module named 'torch'`; where the build's pip could not install its build dependencies,
    that pip's decisive line: `...: mypkg==1.0: installing build dependencies for mypkg did not run successfully:
    ERROR: No matching distribution found for setuptools>=40.8.0`."""
    report = _build_report(lines)
    if report is None:
        return None
    diagnostic, step, output = report
    said = (next((line for phrase in _PIP_DECISIVE for line in output if line.startswith("ERROR:") and phrase in line),
                 None)
            or next((line for line in reversed(output) if EXCEPTION_LINE.match(line)), output[0] if output else None))
    failed = failed_requirement(lines)
    named = dependency_path(required_by(lines, failed), failed) if failed else None
    return ": ".join(part for part in (diagnostic, named, step, said) if part)


def _build_report(lines: Sequence[str]) -> tuple[str, str | None, list[str]] | None:
    """pip's report of a failed build (pip >= 22): its diagnostic code (`error: subprocess-exited-with-error`), the
    step that failed (`× ...`) and the build's own output, its lines stripped; None where no build failed."""
    stripped = [line.strip() for line in lines]
    start = next((index for index, line in enumerate(stripped) if line.startswith("error: ")
                  and PIP_FAILURE.match(line)), None)
    if start is None:
        return None
    step = next((match[1] for line in stripped[start:] if (match := _PIP_FAILED_STEP.match(line))), None)
    begin = next((index + 1 for index, line in enumerate(stripped) if index > start and _PIP_OUTPUT.match(line)),
                 len(stripped))
    end = next((index for index in range(begin, len(stripped)) if stripped[index] == _PIP_OUTPUT_END), begin)
    return stripped[start], step, [line for line in stripped[begin:end] if line]


def _missing_build_dependency(lines: Sequence[str]) -> str | None:
    """The build dependency (`setuptools>=40.8.0`) that the build's own pip, installing a package's build
    dependencies in its isolated environment, found no distribution for: the index pip reads has the package's
    sdist but not the build tools, as a private index named by `--index-url` often does."""
    report = _build_report(lines)
    if report is None or not report[1] or _BUILD_DEPENDENCIES not in report[1]:
        return None
    return next((match[1] for line in report[2] if (match := _NO_DISTRIBUTION.match(line))), None)


def _missing_dependency(lines: Sequence[str]) -> str | None:
    """A dependency pip found no distribution for, said from the requirement requirements.txt names, with the
    versions the indexes do have: `toppkg needs missing-dep>=2, which no index has (only 1.0)`; None where
    requirements.txt names the requirement itself. pip names only the dependency (`No matching distribution found
    for missing-dep>=2`), which the user never wrote."""
    missing = failed_requirement(lines)
    needed_by = required_by(lines, missing) if missing else ()
    if not missing or not needed_by:
        return None
    versions = next((match[1] for line in lines if line.startswith("ERROR: Could not find a version")
                     and (match := _FROM_VERSIONS.search(line))), "none")
    found = "" if versions.strip() in ("", "none") else f" (only {_fewer_versions(versions)})"
    return f"{dependency_path(needed_by, missing)}{_NO_INDEX_HAS}{found}"


def _shorter_versions(match: re.Match[str]) -> str:
    return f"(from versions: {_fewer_versions(match[1])})"


def _fewer_versions(listed: str) -> str:
    """pip's list of versions, hundreds cut to the first and last few."""
    versions = [item.strip() for item in listed.split(",") if item.strip()]
    if len(versions) <= 2 * _VERSIONS_KEPT + 1:
        return listed
    first, last = ", ".join(versions[:_VERSIONS_KEPT]), ", ".join(versions[-_VERSIONS_KEPT:])
    return f"{first}, ..., {last}; {len(versions)} in all"
