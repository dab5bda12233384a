"""The PyTorch 2.11-2.13 Amazon Linux 2023 rows of the image table are what scripts/refresh_images.py makes of
aws/deep-learning-containers' own data files (copied into scripts/dlc_release/): a hand edit or a new copy of the
files that changes them fails here until the script is run."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

pytest.importorskip("tomllib")

REPO = Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location("refresh_images", REPO / "scripts" / "refresh_images.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_image_table_is_what_the_release_data_says():
    script = _script()
    assert script.TARGET.read_text(encoding="utf-8") == script.render(), \
        "orchestrator/specs/data/images.yaml is stale: run `python scripts/refresh_images.py`"


def test_the_al2023_images_are_verified_with_full_version_tags_dates_and_toolkit():
    from orchestrator.specs import images

    expected = {"2.11.0": ("2.11.0-cu130-amzn2023-sagemaker", "2.11.0-cpu-amzn2023-sagemaker", "2026-04-30"),
                "2.12.1": ("2.12.1-cu130-amzn2023-sagemaker", "2.12.1-cpu-amzn2023-sagemaker", "2026-07-02"),
                "2.13.0": ("2.13.0-cu133-amzn2023-sagemaker", "2.13.0-cpu-amzn2023-sagemaker", "2026-07-20")}
    for version, (gpu, cpu, ga) in expected.items():
        image = images.lookup(version)
        assert image is not None and not image.unverified, version
        assert (image.repository, image.tags, image.ga.isoformat()) == ("pytorch", {"gpu": gpu, "cpu": cpu}, ga)
        assert image.toolkit and not image.smddp  # the toolkits in the `sagemaker` extra, no SMDDP
    assert images.image_uri("2.13", "py312", "us-east-1", "gpu") == \
        "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch:2.13.0-cu133-amzn2023-sagemaker"


def test_a_build_config_the_release_data_does_not_confirm_is_unverified(tmp_path):
    script = _script()
    copy = tmp_path / "dlc"
    shutil.copytree(script.SOURCE, copy)
    config = copy / ".github/config/image/pytorch/2.12-sagemaker-cuda.yml"
    config.write_text(config.read_text().replace("pytorch:2.12-cu130-amzn2023-sagemaker",
                                                 "pytorch:2.12-cu131-amzn2023-sagemaker"))
    _, row_212 = script.row(copy, "2.12")
    assert row_212["unverified"] is True
    _, row_211 = script.row(copy, "2.11")
    assert "unverified" not in row_211
    for device in ("cpu", "cuda"):  # SMDDP in both images of a version: the row says so
        path = copy / f"docker/pytorch/2.11/{device}/pyproject.toml"
        path.write_text(path.read_text().replace('sagemaker = [\n', 'sagemaker = [\n    "smdistributed-dataparallel",\n'))
    assert script.row(copy, "2.11")[1]["smddp"] is True
    path = copy / "docker/pytorch/2.11/cuda/pyproject.toml"
    path.write_text(path.read_text().replace('    "sagemaker-training",\n', ""))
    assert script.row(copy, "2.11")[1]["toolkit"] is False
