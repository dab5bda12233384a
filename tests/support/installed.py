"""`needs_packages(...)`: skip a module's tests unless packages are installed, without importing them.

`pytest.importorskip` at a module's top imports the package while every worker collects, whether or not its tests
are selected: for transformers, accelerate and lightning that cost each worker 8 CPU-seconds of the everyday loop.
"""

from __future__ import annotations

from importlib.util import find_spec

import pytest


def needs_packages(*packages: str, extra: str = "frameworks") -> pytest.MarkDecorator:
    """Skips unless every one of `packages` is importable; the reason names the extra of pyproject.toml that
    installs them."""
    missing = [name for name in packages if find_spec(name) is None]
    return pytest.mark.skipif(bool(missing), reason=f"needs {', '.join(missing)} (pip install -e '.[{extra}]')")
