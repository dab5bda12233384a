"""Before a local run: the script's imports and this environment, compared with what the job's image ships.

A script written for the training image imports what the image has (torchvision, pandas, cv2, ...) without a
requirements.txt. Here the first missing one would end the run with a bare ModuleNotFoundError, so the run says
first, for each import the image provides: whether this environment lacks it or has another version than the
image pins (torch included), with the command that fixes it here. `smtrain local` does not install them itself:
they belong to the environment that runs the job (as they belong to the image), which the user controls, and a
run must not reach PyTorch's package index on its own.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

from orchestrator import python_source
from orchestrator.specs.image_packages import ImagePackages, ShippedPackage, image_packages

PYTORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
_TORCH_FAMILY = ("torch", "torchvision", "torchaudio")
_PROBE_TIMEOUT_SECONDS = 60


def script_imports(source_dir: Path, files: tuple[str, ...], among: Iterable[str] | None = None) -> dict[str, str]:
    """Top-level module -> `file:line` of its first import, over the Python files of the source package.

    With `among` (module names), a file whose text never names one of them is not parsed: it cannot import one,
    and parsing is most of the cost (a source package of 16 files: 70 ms parsed, a few read).
    """
    mentions = re.compile(r"\b(?:" + "|".join(map(re.escape, among)) + r")\b") if among else None
    found: dict[str, str] = {}
    for name in sorted(files):
        if not name.endswith(".py"):
            continue
        try:
            text = (source_dir / name).read_text(encoding="utf-8")
            if mentions is not None and not mentions.search(text):
                continue
            tree = python_source.parse(text)
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for node in sorted(_import_statements(tree.body), key=lambda statement: statement.lineno):
            modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else \
                [node.module] if node.module and not node.level else []
            for module in modules:
                found.setdefault(module.split(".")[0], f"{source_dir / name}:{node.lineno}")
    return found


def _import_statements(statements: Iterable[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement, however deep in blocks (def, class, if, try, with, match): an import is a
    statement, so only the statement lists are walked, not the expressions (most of a tree's nodes)."""
    pending = list(statements)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
            continue
        for block in ("body", "orelse", "finalbody", "handlers", "cases"):
            pending.extend(getattr(node, block, ()))


def installed_versions(python: str, distributions: list[str]) -> dict[str, str | None]:
    """Each distribution's version in the environment of `python` (None: not installed); of smtrain's own
    interpreter (the default) read in this process, as `interpreter_versions` does, rather than in a new one."""
    if python == sys.executable:
        return {name: _version(name) for name in distributions}
    probe = ("import json, sys\nfrom importlib import metadata\nfound = {}\nfor name in sys.argv[1:]:\n"
             "    try:\n        found[name] = metadata.version(name)\n"
             "    except metadata.PackageNotFoundError:\n        found[name] = None\nprint(json.dumps(found))")
    result = subprocess.run([python, "-c", probe, *distributions], capture_output=True, text=True,
                            timeout=_PROBE_TIMEOUT_SECONDS, check=True)
    return json.loads(result.stdout)


def compare(image: ImagePackages, imports: dict[str, str], local: dict[str, str | None]) -> list[str]:
    """One line per difference that matters to this script: torch's version, and every import the image ships
    that this environment lacks or has in another version than the image pins."""
    shipped = image.by_module()
    local_torch = _release(local.get("torch"))
    lines = []
    torch = shipped.get("torch")
    if torch and local_torch and torch.version and local_torch != torch.version:
        lines.append(f"torch is {local_torch} here and {torch.version} in the PyTorch {image.framework_version} "
                     f"image: results and errors may differ; to match it: pip install torch=={torch.version} "
                     f"--index-url {PYTORCH_CPU_INDEX}")
    for module, where in sorted(imports.items(), key=lambda item: item[1]):
        package = shipped.get(module)
        if package is None or module == "torch":
            continue
        have = local.get(package.distribution)
        in_image = f"{package.version}" if package.version else "unpinned (the newest at its build)"
        if have is None:
            lines.append(f"{where}: imports {module}, which the PyTorch {image.framework_version} image ships "
                         f"({package.distribution} {in_image}) and this environment lacks: "
                         f"{_install_command(package, local_torch)}")
        elif package.version and _release(have) != package.version and package.distribution not in _TORCH_FAMILY:
            lines.append(f"{where}: imports {module}: {package.distribution} {have} here, {package.version} in the "
                         f"image: pip install {package.distribution}=={package.version}")
    return lines


def image_notices(framework_version: str, source_dir: Path, files: tuple[str, ...], python: str) -> list[str]:
    """What the run says before it starts about the image's packages (nothing when all is in order)."""
    image = image_packages(framework_version)
    if image is None:
        return []
    imports = script_imports(source_dir, files, among=[package.module for package in image.packages
                                                       if package.distribution != "torch"])
    wanted = sorted({package.distribution for package in image.packages
                     if package.module in imports or package.distribution == "torch"})
    try:
        local = installed_versions(python, wanted)
    except (OSError, subprocess.SubprocessError, ValueError):
        return []
    return compare(image, imports, local)


def _version(distribution: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def _install_command(package: ShippedPackage, local_torch: str | None) -> str:
    """The command that gets a working build here: for torchvision and torchaudio the CPU build that matches
    this environment's torch (the image's own matches the image's torch)."""
    if package.distribution in ("torchvision", "torchaudio") and local_torch:
        major, minor, patch = (local_torch.split(".") + ["0", "0"])[:3]
        version = f"0.{int(minor) + 15}.{patch}" if package.distribution == "torchvision" else local_torch
        return (f"pip install {package.distribution}=={version} --index-url {PYTORCH_CPU_INDEX} (the build for "
                f"torch {local_torch} here; the image has {package.version})")
    return f"pip install {package.distribution}" + (f"=={package.version}" if package.version else "")


def _release(version: str | None) -> str | None:
    """2.13.0+cpu -> 2.13.0."""
    return version.split("+")[0] if version else None
