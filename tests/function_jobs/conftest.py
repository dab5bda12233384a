"""Function jobs write their staging folders to smtrain's cache: each test gets its own, and its own cwd (runs/)."""

import linecache
import textwrap

import pytest


@pytest.fixture(autouse=True)
def own_cache_and_cwd(tmp_path, monkeypatch):
    monkeypatch.setenv("SMTRAIN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def cell_function(monkeypatch):
    """Makes a function as a notebook defines it: compiled from a cell whose file is nowhere, with the cell's
    lines in linecache (as IPython keeps them)."""

    def define(source: str, name: str, cell: str):
        source = textwrap.dedent(source)
        monkeypatch.setitem(linecache.cache, cell, (len(source), None, source.splitlines(True), cell))
        namespace = {"__name__": "__main__"}
        exec(compile(source, cell, "exec"), namespace)  # noqa: S102 (how a kernel runs a cell)
        return namespace[name]

    return define
