"""How long each test module took in a recorded run of the whole suite (tests/durations.json: module path under
tests/ -> seconds, its tests' setup, call and teardown summed as the workers ran them), and the recorder that
refreshes the file: `bash scripts/test.sh --record-durations`. tests/conftest.py orders the slow modules by it,
longest first; a module the file does not name yet counts as taking no time."""

from __future__ import annotations

import json
import resource
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


CPU_PROPERTY = "cpu_seconds"


class CpuClock:
    """A pytest plugin for each process that runs tests: puts the CPU seconds this process and the children it
    waited for (a test's runs: smtrain, launchers, ranks) spent since the last report into each report, so that a
    module's cost is known apart from how loaded the machine was."""

    def __init__(self) -> None:
        self._last = self._now()

    @staticmethod
    def _now() -> float:
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        now = self._now()
        outcome.get_result().user_properties.append((CPU_PROPERTY, now - self._last))
        self._last = now


class DurationRecorder:
    """A pytest plugin: sums each module's test durations (and CPU seconds, from CpuClock) as reports arrive (from
    every xdist worker, in the controller), writes the durations into the durations file when the session ends
    and prints the modules that cost the most CPU."""

    def __init__(self, path: Path = DURATIONS_FILE) -> None:
        self.path = path
        self.seconds: dict[str, float] = defaultdict(float)
        self.cpu_seconds: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[module_path(report.nodeid)] += report.duration
        self.cpu_seconds[module_path(report.nodeid)] += sum(
            value for name, value in report.user_properties if name == CPU_PROPERTY)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not self.seconds:
            return
        self.path.write_text(json.dumps(merged(recorded(self.path), self.seconds), indent=1) + "\n")

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if self.seconds:
            terminalreporter.write_line(f"test durations of {len(self.seconds)} modules recorded in {self.path}")
            costliest = sorted(self.cpu_seconds.items(), key=lambda pair: -pair[1])[:15]
            terminalreporter.write_line(f"CPU seconds, {sum(self.cpu_seconds.values()):.0f} in all; the costliest "
                                        "modules: " + ", ".join(f"{module} {cpu:.0f}" for module, cpu in costliest))
