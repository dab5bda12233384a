"""The pins of a source dir's requirements.txt that would replace a package the image ships.

The training toolkit runs `pip install -r requirements.txt` into the image's own Python before the script starts
(docs/sagemaker-contract.md §8). A requirement the image already satisfies changes nothing; `torch==2.3.0` in the
PyTorch 2.10.0 image makes pip replace the image's torch with the package index's build, on every host at every
start, and the job trains on that one. Only exact pins (`==`) are read: a range can be satisfied by the image.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from orchestrator.contract import REQUIREMENTS_FILE
from orchestrator.specs.image_packages import image_packages
from orchestrator.specs.source_files import source_file_text

_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*===?\s*([0-9][^\s,;]*)$")
_COMMENT = re.compile(r"(^|\s)#.*")


@dataclass(frozen=True)
class ReplacedPackage:
    line: int
    requirement: str
    """As written: `torch==2.3.0`."""
    distribution: str
    shipped: str
    """The image's version."""


def replaced_packages(source_dir: str | Path, framework_version: str) -> Iterator[ReplacedPackage]:
    """Each line of requirements.txt pinning a package of the image to another version than the image's: torch
    (the image's torch is its framework version) and the packages image_packages.yaml records it pinning. None
    where the file is absent or not one source_files reads (the install then says why)."""
    text = source_file_text(source_dir, REQUIREMENTS_FILE)
    if text is None:
        return
    shipped = _shipped_versions(framework_version)
    for number, raw in enumerate(text.splitlines(), start=1):
        requirement = _COMMENT.sub("", raw).split(";")[0].strip()
        pin = _PIN.match(requirement)
        if pin is None:
            continue
        name, version = canonical_name(pin[1]), pin[2]
        if name in shipped and not _same_version(version, shipped[name]):
            yield ReplacedPackage(number, requirement, name, shipped[name])


def _shipped_versions(framework_version: str) -> dict[str, str]:
    packages = image_packages(framework_version)
    pinned = {} if packages is None else {canonical_name(package.distribution): package.version
                                          for package in packages.packages if package.version}
    return {**pinned, "torch": framework_version}


def canonical_name(name: str) -> str:
    """A distribution's name as pip compares them (PEP 503: `Torch_Vision` and `torch-vision` name one)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _same_version(pinned: str, shipped: str) -> bool:
    """`2.10` and `2.10.0+cu130` are 2.10.0 to pip's `==`; `2.10.*` is any 2.10."""
    if pinned.endswith(".*"):
        return _release(shipped)[:len(_release(pinned[:-2]))] == _release(pinned[:-2])
    return _release(pinned) == _release(shipped)


def _release(version: str) -> list[str]:
    parts = version.split("+")[0].split(".")
    while len(parts) > 1 and parts[-1] == "0":
        parts.pop()
    return parts
