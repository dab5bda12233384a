"""SageMaker's PyTorch training images, as data: which exist, their Python, their end of patch, their URI.

The table (`data/images.yaml`) is smtrain's own, with its sources and dates, so current framework versions
resolve without the frozen image list of SDK v2 (which ends at 2.8.0).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from typing import Any

from orchestrator.specs.datafiles import load_data_file


@dataclass(frozen=True)
class ImageVersion:
    """One framework version's training images."""

    version: str
    python: tuple[str, ...]
    repository: str
    tags: dict[str, str] | None
    smddp: bool
    unverified: bool
    ga: date | None
    eop: date | None
    toolkit: bool = True
    """The image carries the sagemaker-training and sagemaker-pytorch-training toolkits."""

    def tag(self, written_version: str, processor: str, python: str) -> str:
        if self.tags is None:  # the SDK's short form, over the version as the spec writes it
            return _table()["short_tag"].format(version=written_version, processor=processor, python=python)
        return self.tags[processor].format(version=self.version, processor=processor, python=python)


@lru_cache(maxsize=1)
def _table() -> dict[str, Any]:
    return load_data_file("images.yaml")


def checked() -> str:
    return _table()["checked"]


def versions() -> dict[str, ImageVersion]:
    """Every framework version with an image, oldest first."""
    return _versions()


@lru_cache(maxsize=1)
def _versions() -> dict[str, ImageVersion]:
    table = _table()
    return {
        version: ImageVersion(
            version=version,
            python=tuple(row["python"]),
            repository=row.get("repository", table["repository"]),
            tags=row.get("tag"),
            smddp=row["smddp"],
            unverified=row.get("unverified", False),
            ga=_date(row.get("ga")),
            eop=_date(row.get("eop")),
            toolkit=row.get("toolkit", True),
        )
        for version, row in table["versions"].items()
    }


def _date(value: str | None) -> date | None:
    return date.fromisoformat(value) if value else None


def lookup(framework_version: str) -> ImageVersion | None:
    """The images of a version as a spec writes it (`2.3` means what the SDK's alias table says)."""
    full = _table()["aliases"].get(framework_version, framework_version)
    return _versions().get(full)


def registry_account(region: str) -> str | None:
    return _table()["registries"].get(region)


def region_fix(region: str) -> str:
    """The fix for a region with no images: the region meant (`us-east1`, `US-EAST-1`, `us-est-1` are typos of
    us-east-1, which the API would answer only with an endpoint error), else what else to do."""
    otherwise = "pick another region, or give image_uri (an image in your own ECR)"
    typed = region.strip().lower()
    close = difflib.get_close_matches(typed, sorted(_table()["registries"]), n=5, cutoff=0.85)
    if not close:
        return otherwise
    best = difflib.SequenceMatcher(None, typed, close[0]).ratio()
    tied = [name for name in close if difflib.SequenceMatcher(None, typed, name).ratio() == best]
    meant = min(tied, key=lambda name: (_first_letters(name) != _first_letters(typed),
                                        not _one_letter_dropped(typed, name)))
    return f"did you mean `{meant}`? If not: {otherwise}"


def _first_letters(region: str) -> list[str]:
    """`us-east-1` -> u, e, 1: a word's first letter is seldom the one mistyped."""
    return [word[:1] for word in region.split("-")]


def _one_letter_dropped(typed: str, name: str) -> bool:
    """`us-est-1` is `us-east-1` with a letter dropped, a likelier typo than a changed letter."""
    return len(name) == len(typed) + 1 and any(name[:index] + name[index + 1:] == typed for index in range(len(name)))


def processor(family: str) -> str:
    """cpu or gpu, as the image tag names it, from the instance family as the SDK derives it (g*, p* -> gpu)."""
    return "gpu" if family[:1] in ("g", "p") else "cpu"


def image_uri(framework_version: str, python: str, region: str, processor_name: str) -> str:
    """The training image's URI. The caller has checked that the version, Python and region exist."""
    image = lookup(framework_version)
    assert image is not None
    account = registry_account(region)
    suffix = "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"
    return (f"{account}.dkr.ecr.{region}.{suffix}/{image.repository}:"
            f"{image.tag(framework_version, processor_name, python)}")


def default_python(framework_version: str) -> str | None:
    image = lookup(framework_version)
    return image.python[-1] if image else None
