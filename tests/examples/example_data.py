"""What both modules of published examples share: a published script's job spec, what its model.tar.gz holds, and
MNIST's IDX files of synthetic digits."""

from __future__ import annotations

import struct
import tarfile
from pathlib import Path

import numpy as np
import yaml

EXAMPLES = Path(__file__).parent


def write_spec(tmp_path: Path, example: str, entry_point: str, **fields) -> Path:
    """The job spec of the script in `example/src`, with `fields` over the defaults."""
    spec = {"name": example.replace("_", "-"), "entry_point": entry_point, "source_dir": str(EXAMPLES / example / "src"),
            "framework_version": "2.10.0", "metrics": [], "max_run_seconds": 600, **fields}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def model_files(result) -> list[str]:
    with tarfile.open(result.model_artifact) as tar:
        return sorted(tar.getnames())


def mnist_idx(count: int, rng: np.random.Generator) -> tuple[bytes, bytes]:
    """MNIST's images and labels IDX files (unzipped) of `count` digits: each a bright 7x7 square in its own place
    of a noisy 28x28 image."""
    labels = rng.integers(0, 10, count).astype(np.uint8)
    images = rng.integers(0, 40, (count, 28, 28)).astype(np.uint8)
    for index, label in enumerate(labels):
        row, column = divmod(int(label), 4)
        images[index, 2 + row * 8:9 + row * 8, 2 + column * 6:9 + column * 6] = 255
    return (struct.pack(">IIII", 2051, count, 28, 28) + images.tobytes(),
            struct.pack(">II", 2049, count) + labels.tobytes())
