"""Names that become one path component on this machine: a channel's folder (`input/data/<name>`), a run's folder.

The one check for all of them, made before anything is written: a name is one plain folder name, never an
absolute path, `.` or `..`, a separator, a NUL, or longer than a file system takes. Callers name the field, so
the refusal says where the name came from (`inputs.NAME`, `--input NAME=PATH`, a run name).
"""

from __future__ import annotations

from orchestrator.errors import SpecError

MAX_PATH_NAME_LENGTH = 255
"""NAME_MAX of Linux and macOS file systems: one component longer than this cannot be created."""


def path_name_problem(name: str) -> str | None:
    """Why `name` cannot be one folder name inside a run directory, or None when it can."""
    if not name:
        return "is empty"
    if name in (".", ".."):
        return "names a folder itself or the one above it, not a folder of its own"
    if "/" in name or "\\" in name:
        return "holds a path separator (an absolute or nested path), so its files would land elsewhere"
    if "\0" in name:
        return "holds a NUL character"
    if len(name.encode("utf-8", errors="surrogatepass")) > MAX_PATH_NAME_LENGTH:
        return f"is {len(name)} characters; a folder name takes at most {MAX_PATH_NAME_LENGTH} bytes"
    return None


def require_path_name(field: str, name: str) -> str:
    """`name`, when it can be one folder name; else a SpecError naming `field` (exit 2, nothing written).

    Raises:
        SpecError: the name is empty, `.`/`..`, holds a separator or a NUL, or is too long.
    """
    problem = path_name_problem(name)
    if problem is not None:
        shown = name if len(name) <= 80 else name[:80] + "..."
        raise SpecError(f"{field}: the name {shown!r} {problem}",
                        fix="use a plain name of letters, digits, '.', '-' and '_' (not '.' or '..'), e.g. train")
    return name
