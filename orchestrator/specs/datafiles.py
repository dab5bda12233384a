"""Reads smtrain's own data files (spec files go through `loader.py`, which keeps line numbers).

PyYAML's libyaml loader parses the catalog and the capability matrix in a few milliseconds; a pure-Python
loader took 200 ms, most of `smtrain validate`'s time.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).parent / "data"


@cache
def load_data_file(name: str) -> Any:
    """Parses `orchestrator/data/<name>` once per process."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load((DATA_DIR / name).read_text(encoding="utf-8"), Loader=loader)
