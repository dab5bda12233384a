"""The user's own modules a function job imports, and their files, shipped in the code tarball.

A function shipped by reference needs its own top-level package; a notebook's function (by value) refers to the
modules it uses by name, and those that are files beside the notebook (`helpers.py`, a `utils/` folder, under the
working directory) are in no image and no requirements: without their files the job fails with
ModuleNotFoundError. Installed modules (a site-packages, a virtual environment kept under the working directory,
the standard library) are the image's or the requirements' business and never travel.

A local module imports others at its top (`import helper_b` in helpers.py, `from utils import io` in a package's
file) that neither the function nor its pickle names: the closure of local modules travels, each module's import
statements read from its source with `ast`, never run, each module read once.

The modules may come from several folders (`libA/steps.py` and `libB/arith.py`, each folder on the notebook's
sys.path): they travel in the code directory as they lie under the folder that holds them all, which a failure
names them from (`libB/arith.py:2`, the user's file, not smtrain's cached copy), and the job imports them from
those folders, as the notebook does.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from orchestrator import python_source


@dataclass(frozen=True)
class ShippedModules:
    """The user's modules as they travel: their files by name in the code directory, the folder of this machine
    those names are relative to (None when none travels), and the code directory's folders the job imports them
    from besides the code directory itself."""

    files: dict[str, bytes]
    known_as: Path | None
    import_folders: list[str]


def shipped_modules(tops: Iterable[str]) -> ShippedModules:
    """The files of the top-level modules `tops`, laid out as they lie under the folder that holds them all."""
    folders = {top: _module_folder(top) for top in tops}
    if not folders:
        return ShippedModules({}, None, [])
    holder = Path(os.path.commonpath(list(folders.values())))
    files: dict[str, bytes] = {}
    import_folders = set()
    for top, folder in folders.items():
        inside = folder.relative_to(holder).as_posix()
        prefix = "" if inside == "." else f"{inside}/"
        files.update({prefix + name: data for name, data in _module_files(top).items()})
        if prefix:
            import_folders.add(inside)
    return ShippedModules(files, holder, sorted(import_folders))


def local_modules(names: Iterable[str], imported: Iterable[str], folder: Path) -> list[str]:
    """The top-level modules among `names` and `imported` (dotted names too) whose files are under `folder` and
    not installed, and the local modules those import, and theirs. `imported` are names import statements give:
    a folder without __init__.py (a namespace package) counts for them, as import finds it, but not for the other
    names, which may be an attribute's (`data`, beside a data/ folder)."""
    folder = folder.resolve()
    waiting, statements = _tops(names) | _tops(imported), _tops(imported)
    seen, found = set(), []
    while waiting:
        top = waiting.pop()
        seen.add(top)
        if top != "__main__" and _is_local(top, folder, namespace=top in statements):
            found.append(top)
            more = _tops(_imported_names(_module_files(top).values()))
            statements |= more
            waiting |= more - seen
    return sorted(found)


def _imported_names(sources: Iterable[bytes]) -> set[str]:
    """The absolute module names the import statements of `sources` name (`a.b` of `import a.b`, `from a.b import
    c`); relative imports stay inside a package, which travels whole. A file Python cannot parse names none: the
    job's own import of it says what is wrong."""
    names = set()
    for source in sources:
        try:
            tree = python_source.parse(source)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module)
    return names


def _module_files(top: str) -> dict[str, bytes]:
    """The files of a top-level module or package, named as the import system finds them from the code
    directory: `helpers.py`, or `pkg/...` for every .py file of a package."""
    root = _root(top)
    if root is None:
        return {}
    if root.is_file():
        return {root.name: root.read_bytes()}
    return {f"{root.name}/{file.relative_to(root)}": file.read_bytes()
            for file in sorted(root.rglob("*.py")) if "__pycache__" not in file.parts}


def _module_folder(top: str) -> Path:
    """The folder a top-level module's files come from (their names in the code directory are relative to it)."""
    root = _root(top)
    return root.parent if root else Path.cwd()


def _tops(names: Iterable[str]) -> set[str]:
    return {name.split(".")[0] for name in names if name}


def _root(top: str, namespace: bool = True) -> Path | None:
    """`helpers.py` for a module, the package's folder for a package (a folder without __init__.py too, unless
    not `namespace`); None for a module with no file (built in, frozen) or none to be found. A module the notebook
    has not imported yet (`import helpers` only in the function's body) is looked for as import would find it,
    without running it."""
    module = sys.modules.get(top)
    if module is not None:
        locations = list(getattr(module, "__path__", None) or [])
        location = locations[0] if locations else getattr(module, "__file__", None)
    else:
        try:
            spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            return None
        if spec is None:
            return None
        if not spec.has_location:  # a namespace package (its first folder), or a module with no file
            folders = list(spec.submodule_search_locations or [])
            location = folders[0] if folders and namespace else None
        else:
            location = os.path.dirname(spec.origin) if spec.submodule_search_locations else spec.origin
    return Path(location).resolve() if location else None


def _is_local(top: str, folder: Path, namespace: bool) -> bool:
    if top in sys.stdlib_module_names or not top.isidentifier():
        return False
    root = _root(top, namespace)
    installed = {Path(prefix).resolve() for prefix in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    return (root is not None and root.exists() and root.is_relative_to(folder) and root != folder
            and not any(root.is_relative_to(prefix) for prefix in installed)
            and not {"site-packages", "dist-packages"} & set(root.parts))
