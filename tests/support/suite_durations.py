"""How long each test module took in a recorded run of the whole suite (tests/durations.json: module path under
tests/ -> seconds, its tests' setup, call and teardown summed as the workers ran them), and the recorder that
refreshes the file: `bash scripts/test.sh --record-durations`. tests/conftest.py orders the slow modules by it,
longest first; a module the file does not name yet counts as taking no time."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
DURATIONS_FILE = TESTS / "durations.json"


def recorded(path: Path = DURATIONS_FILE) -> dict[str, float]:
    """The seconds of each module in the last recorded run, by its path under tests/ (none when no file)."""
    return json.loads(path.read_text()) if path.is_file() else {}


def module_path(nodeid: str) -> str:
    """`tests/cli/test_cli.py::test_help[x]` -> `cli/test_cli.py`: a test's module, as the file names it."""
    return Path(nodeid.split("::", 1)[0]).relative_to("tests").as_posix()


def merged(previous: dict[str, float], measured: dict[str, float], tests: Path = TESTS) -> dict[str, float]:
    """The measured modules' new figures over the previous ones; modules that no longer exist dropped."""
    seconds = {module: value for module, value in previous.items() if (tests / module).is_file()}
    seconds.update({module: round(value, 1) for module, value in measured.items()})
    return dict(sorted(seconds.items()))


class DurationRecorder:
    """A pytest plugin: sums each module's test durations as reports arrive (from every xdist worker, in the
    controller) and writes them into the durations file when the session ends."""

    def __init__(self, path: Path = DURATIONS_FILE) -> None:
        self.path = path
        self.seconds: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[module_path(report.nodeid)] += report.duration

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not self.seconds:
            return
        self.path.write_text(json.dumps(merged(recorded(self.path), self.seconds), indent=1) + "\n")

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if self.seconds:
            terminalreporter.write_line(f"test durations of {len(self.seconds)} modules recorded in {self.path}")
