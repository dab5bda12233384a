"""Local runs by name: which run directory a user means, and the runs under runs/.

Light on purpose (no emulator import): `smtrain status JOB_NAME` asks it first, before reading SageMaker.
"""

from __future__ import annotations

from pathlib import Path

from orchestrator.contract import RUN_MARKER_FILE

RUNS_ROOT = Path("runs")
"""Where `smtrain local` puts run directories by default, and where a run is found by its job name."""


def find_run(name_or_dir: str | Path, runs_root: Path = RUNS_ROOT) -> Path | None:
    """The run directory a user means: a directory `smtrain local` made, or runs/<name>/; None for neither."""
    for candidate in (Path(name_or_dir), runs_root / str(name_or_dir)):
        if (candidate / RUN_MARKER_FILE).is_file():
            return candidate.resolve()
    return None


def local_runs(runs_root: Path = RUNS_ROOT) -> list[Path]:
    """The run directories under `runs_root`, newest first."""
    if not runs_root.is_dir():
        return []
    runs = [path.resolve() for path in runs_root.iterdir() if (path / RUN_MARKER_FILE).is_file()]
    return sorted(runs, key=lambda path: (path / RUN_MARKER_FILE).stat().st_mtime, reverse=True)
