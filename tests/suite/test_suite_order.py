"""The suite's order names real modules: a renamed module would silently drop out of the longest-first list."""

from __future__ import annotations

import importlib.util
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def _suite_conftest():
    spec = importlib.util.spec_from_file_location("suite_conftest", TESTS / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_longest_slow_modules_exist_and_are_marked_slow():
    for module in _suite_conftest().LONGEST_SLOW_MODULES:
        path = TESTS / module
        assert path.is_file(), f"tests/conftest.py LONGEST_SLOW_MODULES names {module}, which does not exist"
        assert "pytest.mark.slow" in path.read_text(), f"{module} has no slow tests"
