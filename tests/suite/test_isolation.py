"""Every test runs in a working directory and a home of its own: `bash scripts/demo.sh` fills the checkout's runs/
and a developer's home holds their AWS and SDK settings, and neither may change what a test sees."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_a_test_works_outside_the_checkout_and_the_users_home():
    real_home = Path(pwd.getpwuid(os.getuid()).pw_dir).resolve()

    assert not Path.cwd().resolve().is_relative_to(REPO)
    assert Path.home().resolve() != real_home and not Path.home().resolve().is_relative_to(real_home / ".cache")
    assert not Path(os.environ["SMTRAIN_CACHE_DIR"]).resolve().is_relative_to(real_home)
