"""The order the workers take modules in comes from recorded durations (tests/durations.json): the file names real
modules, the slow ones run longest first after the fast ones, and `--record-durations` refreshes it."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace

from suite_durations import DURATIONS_FILE, TESTS, DurationRecorder, merged, module_path, recorded


def _suite_conftest():
    spec = importlib.util.spec_from_file_location("suite_conftest", TESTS / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_durations_file_names_only_modules_that_exist():
    stale = [module for module in recorded() if not (TESTS / module).is_file()]
    assert not stale, (f"{DURATIONS_FILE} names {stale}, which do not exist: rename the entries, or refresh the "
                       "file with `bash scripts/test.sh --record-durations`")


def test_alone_modules_first_then_fast_ones_then_slow_ones_longest_first_and_unknown_ones_last():
    place = _suite_conftest()._place
    seconds = {"a/test_short.py": 5.0, "a/test_long.py": 90.0, "a/test_smoke.py": 300.0, "a/test_fast.py": 2.0}
    modules = [("a/test_new_slow.py", {"slow"}), ("a/test_short.py", {"slow"}), ("a/test_fast.py", set()),
               ("a/test_long.py", {"slow"}), ("a/test_smoke.py", {"alone", "slow"}), ("a/test_new_fast.py", set())]
    order = sorted(modules, key=lambda entry: place(SimpleNamespace(nodeid=f"tests/{entry[0]}::t"), entry[1],
                                                    seconds))
    assert [module for module, _ in order] == ["a/test_smoke.py", "a/test_fast.py", "a/test_new_fast.py",
                                               "a/test_long.py", "a/test_short.py", "a/test_new_slow.py"]


def test_a_module_is_named_by_its_path_under_tests():
    assert module_path("tests/emulator/gpu_standin/test_exit.py::test_x[a::b]") == "emulator/gpu_standin/test_exit.py"


def test_the_recorder_sums_each_modules_reports_and_keeps_the_figures_it_did_not_measure(tmp_path):
    path = tmp_path / "durations.json"
    path.write_text(json.dumps({"suite/test_suite_order.py": 1.0, "cli/test_cli.py": 7.0, "gone/test_old.py": 3.0}))
    recorder = DurationRecorder(path)
    for nodeid, duration in [("tests/suite/test_suite_order.py::test_a", 0.25),
                             ("tests/suite/test_suite_order.py::test_a", 2.0),  # the setup, call and teardown
                             ("tests/suite/test_suite_order.py::test_b", 1.0),
                             ("tests/specs/test_topology.py::test_c", 4.04)]:
        recorder.pytest_runtest_logreport(SimpleNamespace(nodeid=nodeid, duration=duration))
    recorder.pytest_sessionfinish(session=None)
    assert json.loads(path.read_text()) == {"cli/test_cli.py": 7.0, "specs/test_topology.py": 4.0,
                                            "suite/test_suite_order.py": 3.2}


def test_merging_drops_modules_that_no_longer_exist(tmp_path: Path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "test_kept.py").write_text("")
    assert merged({"a/test_kept.py": 1.0, "a/test_gone.py": 2.0}, {"a/test_new.py": 0.04}, tmp_path) == \
        {"a/test_kept.py": 1.0, "a/test_new.py": 0.0}
