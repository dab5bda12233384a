"""The one rule by which both of smtrain's ``sitecustomize`` hooks (the CPU stand-in's, the overlay's) run the
``sitecustomize`` they shadow: whatever their order on PYTHONPATH, and with a hook's folder on it twice (under
a symlink: ``site`` removes only literal duplicates), a user's own runs exactly once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.emulator.launching.launch import OVERLAY_SITE_HOOK
from orchestrator.emulator.instances.standin import STANDIN_DIR
from orchestrator.emulator.shadowed_site import entries_after

USER_HOOK = "print('user sitecustomize ran')\n"


def test_a_hook_searches_after_its_first_occurrence_skipping_its_own_folder(tmp_path):
    hook, user, other = str(tmp_path / "hook"), str(tmp_path / "user"), str(tmp_path / "other")
    assert entries_after(hook, [other, hook, user]) == [user]
    assert entries_after(hook, [hook, user, hook + "/", other]) == [user, other]
    assert entries_after(hook, [user, other]) == [user, other]


@pytest.mark.parametrize("order", [("standin", "overlay", "user"), ("overlay", "standin", "user"),
                                   ("overlay", "user", "overlay alias"), ("standin", "user", "standin alias")])
def test_the_users_sitecustomize_runs_once_whatever_the_order_of_the_hooks(tmp_path, order):
    user = tmp_path / "user"
    user.mkdir()
    (user / "sitecustomize.py").write_text(USER_HOOK)
    folders = {"standin": STANDIN_DIR, "overlay": OVERLAY_SITE_HOOK, "user": user}
    for name in ("standin", "overlay"):
        folders[f"{name} alias"] = tmp_path / f"{name}-alias"
        folders[f"{name} alias"].symlink_to(folders[name])
    environment = {"PATH": os.environ["PATH"], "PYTHONPATH": os.pathsep.join(str(folders[name]) for name in order)}

    result = subprocess.run([sys.executable, "-c", "pass"], env=environment, capture_output=True, text=True,
                            timeout=120, check=False)

    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.splitlines() == ["user sitecustomize ran"]


def test_both_hooks_load_the_one_rule_by_its_path():
    shared = Path(entries_after.__code__.co_filename)
    for hook in (STANDIN_DIR / "sitecustomize.py", OVERLAY_SITE_HOOK / "sitecustomize.py"):
        text = hook.read_text()
        assert f'"{shared.name}"' in text and "PathFinder" not in text
