"""Local runs by name: which run directory a user means, the runs under runs/, and the near names of a mistyped one.

Light on purpose (no emulator import): `smtrain status JOB_NAME` asks it first, before reading SageMaker.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from orchestrator.contract import RUN_MARKER_FILE

RUNS_ROOT = Path("runs")
"""Where `smtrain local` puts run directories by default, and where a run is found by its job name."""


def find_run(name_or_dir: str | Path, runs_root: Path = RUNS_ROOT, marker: str = RUN_MARKER_FILE) -> Path | None:
    """The run directory a user means: a directory `smtrain local` made, or runs/<name>/; None for neither, also
    for a name no file system could hold (too long, a NUL): that is for the caller's name check to say. `marker`:
    the file that makes a folder one (a search's folder is found by its tuning.json)."""
    for candidate in (Path(name_or_dir), runs_root / str(name_or_dir)):
        if _holds(candidate, marker):
            return candidate.resolve()
    return None


def local_runs(runs_root: Path = RUNS_ROOT, marker: str = RUN_MARKER_FILE) -> list[Path]:
    """The run directories under `runs_root` (the folders holding `marker`), newest first."""
    if not is_directory(runs_root):
        return []
    runs = [path.resolve() for path in runs_root.iterdir() if _holds(path, marker)]
    return sorted(runs, key=lambda path: (path / marker).stat().st_mtime, reverse=True)


def listed_runs(folder: Path = RUNS_ROOT, marker: str = RUN_MARKER_FILE) -> list[Path]:
    """The runs `list --runs FOLDER` shows: FOLDER alone where it is itself one (the `--run-dir` a CI job gave
    `smtrain local`), else the runs under it, newest first."""
    return [folder.resolve()] if _holds(folder, marker) else local_runs(folder, marker)


def looked_in(runs_root: Path, noun: str) -> str:
    """The line under a listing of local runs (or searches): the folder read, so that an empty list explains itself;
    under the default runs/, how to list the runs a `--run-dir` put elsewhere."""
    text = f"local {noun}: read from {runs_root}" + ("" if runs_root.is_absolute() else f" ({runs_root.resolve()})")
    if not is_directory(runs_root):
        text += ", no such folder"
    if runs_root == RUNS_ROOT:
        text += f"; {noun} started elsewhere (--run-dir): --runs DIR"
    return text


def near_runs(name: str, runs_root: Path = RUNS_ROOT, limit: int = 3, marker: str = RUN_MARKER_FILE) -> list[Path]:
    """The local runs whose name is close to `name` (a mistyped run name or run directory): those under runs/,
    and those beside the directory `name` points into. Runs named `name` plus a suffix come first, newest first
    (`my-job` for `my-job-2026-11-26-...`, the name `smtrain local` gives a run), then those whose name starts
    with a near spelling of it (`my-jbo`), then the closest by difflib. `marker`: as `find_run`'s (a search's
    folders are near ones by their tuning.json)."""
    places = {runs_root}
    if "/" in name:
        places.add(Path(name).parent)
    runs = {path.name: path for place in places if is_directory(place) for path in local_runs(place, marker)}
    wanted = Path(name).name if "/" in name else name
    extended = [run for run in runs if wanted and run.startswith(wanted)]
    misspelt = [run for run in runs if wanted and len(run) > len(wanted)
                and difflib.SequenceMatcher(None, wanted, run[:len(wanted)]).ratio() >= 0.8]
    close = difflib.get_close_matches(wanted, list(runs), n=limit, cutoff=0.6)
    return [runs[match] for match in dict.fromkeys([*extended, *misspelt, *close])][:limit]


def relative_to_cwd(path: Path) -> Path:
    """`runs/NAME` for a run under the working directory, else the path as it is: how an error names a run."""
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


def _holds(path: Path, marker: str) -> bool:
    try:
        return (path / marker).is_file()
    except (OSError, ValueError):  # a name too long for the file system, a NUL in it
        return False


def is_directory(path: Path) -> bool:
    """Path.is_dir, False also for a name no file system could hold."""
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False
