"""What each SageMaker PyTorch training image ships that scripts import, as data (`data/image_packages.yaml`,
read from the deep-learning-containers repository's Dockerfiles, each image with its source and commit)."""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.specs.datafiles import load_data_file

_FILE = "image_packages.yaml"


@dataclass(frozen=True)
class ShippedPackage:
    distribution: str
    module: str
    """The name a script imports (cv2 for opencv-python)."""
    version: str | None
    """The image's pinned version; None: installed unpinned, the newest at the image's build."""


@dataclass(frozen=True)
class ImagePackages:
    framework_version: str
    python: str
    source: str
    """deep-learning-containers path@commit the list was read from."""
    packages: tuple[ShippedPackage, ...]

    def by_module(self) -> dict[str, ShippedPackage]:
        return {package.module: package for package in self.packages}


def image_packages(framework_version: str) -> ImagePackages | None:
    """The packages of the image of `framework_version` (as the plan resolved it), or None where not recorded."""
    table = load_data_file(_FILE)
    entry = table["images"].get(framework_version)
    if entry is None:
        return None
    imports = table["imports"]
    packages = [ShippedPackage(name, imports.get(name, name.replace("-", "_")), str(version))
                for name, version in entry["pinned"].items()]
    packages += [ShippedPackage(name, imports.get(name, name.replace("-", "_")), None) for name in entry["unpinned"]]
    return ImagePackages(framework_version, str(entry["python"]), entry["source"], tuple(packages))


def covered_versions() -> tuple[str, ...]:
    return tuple(load_data_file(_FILE)["images"])
