"""The order the workers take modules in comes from recorded durations (tests/durations.json): the file names real
modules, the slow ones run first, longest first, then the fast ones, and `--record-durations` refreshes it. The
modules of a group (tests/support/worker_groups.py) are one work unit, so one worker runs them all."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from suite_durations import (CPU_PROPERTY, DURATIONS_FILE, TESTS, CpuClock, DurationRecorder, merged, module_path,
                             recorded)
from worker_groups import GROUPS, ModuleOrGroupScheduling, pytest_xdist_make_scheduler


def _suite_conftest():
    spec = importlib.util.spec_from_file_location("suite_conftest", TESTS / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_durations_file_names_only_modules_that_exist():
    stale = [module for module in recorded() if not (TESTS / module).is_file()]
    assert not stale, (f"{DURATIONS_FILE} names {stale}, which do not exist: rename the entries, or refresh the "
                       "file with `bash scripts/test.sh --record-durations`")


def test_slow_modules_first_longest_first_and_unknown_ones_last_then_fast_ones():
    place = _suite_conftest()._place
    seconds = {"a/test_short.py": 5.0, "a/test_long.py": 90.0, "a/test_smoke.py": 300.0, "a/test_fast.py": 2.0}
    modules = [("a/test_new_slow.py", {"slow"}), ("a/test_short.py", {"slow"}), ("a/test_fast.py", set()),
               ("a/test_long.py", {"slow"}), ("a/test_smoke.py", {"slow"}), ("a/test_new_fast.py", set())]
    order = sorted(modules, key=lambda entry: place(SimpleNamespace(nodeid=f"tests/{entry[0]}::t"), entry[1],
                                                    seconds))
    assert [module for module, _ in order] == ["a/test_smoke.py", "a/test_long.py", "a/test_short.py",
                                               "a/test_new_slow.py", "a/test_fast.py", "a/test_new_fast.py"]


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
        recorder.pytest_runtest_logreport(SimpleNamespace(nodeid=nodeid, duration=duration, user_properties=[]))
    recorder.pytest_sessionfinish(session=None)
    assert json.loads(path.read_text()) == {"cli/test_cli.py": 7.0, "specs/test_topology.py": 4.0,
                                            "suite/test_suite_order.py": 3.2}


def test_merging_drops_modules_that_no_longer_exist(tmp_path: Path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "test_kept.py").write_text("")
    assert merged({"a/test_kept.py": 1.0, "a/test_gone.py": 2.0}, {"a/test_new.py": 0.04}, tmp_path) == \
        {"a/test_kept.py": 1.0, "a/test_new.py": 0.0}


def test_the_cpu_clock_puts_the_cpu_a_test_and_its_children_spent_into_its_report(tmp_path):
    clock = CpuClock()
    subprocess.run([sys.executable, "-c", "sum(range(3 * 10**7))"], check=True)
    report = SimpleNamespace(user_properties=[])
    hook = clock.pytest_runtest_makereport(item=None, call=None)
    next(hook)
    with pytest.raises(StopIteration):
        hook.send(SimpleNamespace(get_result=lambda: report))
    (name, cpu), = report.user_properties
    assert name == CPU_PROPERTY and cpu > 0.1  # the child's loop, summed once its parent waited for it
    recorder = DurationRecorder(tmp_path / "durations.json")
    recorder.pytest_runtest_logreport(SimpleNamespace(nodeid="tests/a/test_x.py::t", duration=1.0,
                                                      user_properties=report.user_properties))
    assert recorder.cpu_seconds == {"a/test_x.py": cpu}



def test_the_modules_of_a_group_are_one_work_unit_and_every_other_module_one_of_its_own():
    config = SimpleNamespace(getvalue={"tx": ["2*popen"], "dist": "loadscope"}.get)
    scheduling = pytest_xdist_make_scheduler(config, log=None)
    assert isinstance(scheduling, ModuleOrGroupScheduling)
    units = [scheduling._split_scope(nodeid) for nodeid in (
        "tests/cloud/test_sdk.py::test_a", "tests/referees/sdk/test_sdk_referee.py::test_b[x::y]",
        "tests/cli/test_cli.py::test_c[d]", "tests/cli/test_cli.py::TestE::test_f")]
    assert units == ["sagemaker-sdk-v2", "sagemaker-sdk-v2", "tests/cli/test_cli.py", "tests/cli/test_cli.py::TestE"]
    assert pytest_xdist_make_scheduler(SimpleNamespace(getvalue={"dist": "load"}.get), log=None) is None


SDK_V2_IMPORT = re.compile(
    r"\bimport_sagemaker\(|importorskip\(\"sagemaker[\".]|^\s*(from sagemaker[ .]|import sagemaker\b)", re.MULTILINE)


def test_every_module_that_imports_sdk_v2_in_process_is_in_its_group():
    importing = sorted(f"tests/{path.relative_to(TESTS).as_posix()}" for path in TESTS.rglob("test_*.py")
                       if SDK_V2_IMPORT.search(path.read_text()))
    assert importing == sorted(GROUPS["sagemaker-sdk-v2"]), (
        "tests/support/worker_groups.py's sagemaker-sdk-v2 group must name exactly the modules that import the SDK "
        "in the pytest process, so that one worker pays that import")
