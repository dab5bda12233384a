"""Function jobs write their staging folders to smtrain's cache: each test gets its own, and its own cwd (runs/)."""

import pytest


@pytest.fixture(autouse=True)
def own_cache_and_cwd(tmp_path, monkeypatch):
    monkeypatch.setenv("SMTRAIN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
