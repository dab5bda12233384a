"""The image's packages as data, and what a local run says before it starts when the script imports one of them
that this environment lacks, or has in another version than the image."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import yaml

from orchestrator.emulator.local_run import Options, run_local
from orchestrator.emulator.preparing import image_match
from orchestrator.emulator.preparing.image_match import (
    PYTORCH_CPU_INDEX,
    compare,
    image_notices,
    script_imports,
)
from orchestrator.specs import images
from orchestrator.specs.image_packages import covered_versions, image_packages
from orchestrator.specs.loader import load


def test_every_recorded_image_is_in_the_image_table_and_names_its_source():
    for version in covered_versions():
        assert images.lookup(version) is not None, version
        packages = image_packages(version)
        assert packages.source.startswith("pytorch/training/docker/") and "@" in packages.source
        assert {"torch", "torchvision", "torchaudio"} <= {package.distribution for package in packages.packages}
    assert image_packages("2.10.0").by_module()["torchvision"].version == "0.25.0"
    assert image_packages("2.10.0").by_module()["cv2"].distribution == "opencv-python"


def test_a_missing_torchvision_gets_the_images_version_and_the_build_for_the_local_torch(tmp_path):
    (tmp_path / "train.py").write_text("import os\nfrom torchvision import models\nimport torch\n")
    imports = script_imports(tmp_path, ("train.py",))
    assert imports["torchvision"] == f"{tmp_path / 'train.py'}:2"
    lines = compare(image_packages("2.10.0"), imports, {"torch": "2.13.0+cpu", "torchvision": None})
    assert lines[0] == (f"torch is 2.13.0 here and 2.10.0 in the PyTorch 2.10.0 image: results and errors may "
                        f"differ; to match it: pip install torch==2.10.0 --index-url {PYTORCH_CPU_INDEX}")
    assert lines[1] == (f"{tmp_path / 'train.py'}:2: imports torchvision, which the PyTorch 2.10.0 image ships "
                        f"(torchvision 0.25.0) and this environment lacks: pip install torchvision==0.28.0 "
                        f"--index-url {PYTORCH_CPU_INDEX} (the build for torch 2.13.0 here; the image has 0.25.0)")
    assert compare(image_packages("2.10.0"), imports, {"torch": "2.10.0", "torchvision": "0.25.0"}) == []


def test_only_the_files_that_name_a_module_asked_about_are_parsed(tmp_path, monkeypatch):
    (tmp_path / "train.py").write_text("import os\nfrom torchvision import models  # the image's\n")
    (tmp_path / "data.py").write_text("import pandas\n")
    (tmp_path / "notes.py").write_text("def broken(:\n")  # never parsed: it names none of them
    parsed = []
    monkeypatch.setattr(image_match.python_source, "parse",
                        lambda text, parse=image_match.python_source.parse: parsed.append(text) or parse(text))
    imports = script_imports(tmp_path, ("data.py", "notes.py", "train.py"), among=["torchvision", "cv2"])
    assert imports == {"os": f"{tmp_path / 'train.py'}:1", "torchvision": f"{tmp_path / 'train.py'}:2"}
    assert len(parsed) == 1
    assert script_imports(tmp_path, ("data.py", "notes.py", "train.py"))["pandas"] == f"{tmp_path / 'data.py'}:1"


def test_a_pinned_package_in_another_version_is_named(tmp_path):
    (tmp_path / "train.py").write_text("import cv2\n")
    lines = compare(image_packages("2.9.0"), script_imports(tmp_path, ("train.py",)), {"opencv-python": "4.9.0.80"})
    assert lines == [f"{tmp_path / 'train.py'}:1: imports cv2: opencv-python 4.9.0.80 here, 4.11.0.86 in the image: "
                     "pip install opencv-python==4.11.0.86"]


def test_a_local_run_says_it_before_anything_runs(tmp_path):
    missing = next(name for name in ("torchvision", "torchaudio") if importlib.util.find_spec(name) is None)
    source = tmp_path / "src"
    source.mkdir()
    (source / "train.py").write_text(f"import {missing}\n")
    spec = {"name": "image-packages", "entry_point": "train.py", "source_dir": "src", "framework_version": "2.10.0",
            "instance": {"type": "ml.c5.2xlarge", "count": 1}, "metrics": []}
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    events: list[tuple[str, str]] = []

    class Observer:
        def notice(self, text):
            events.append(("notice", text))

        def started(self, *args):
            events.append(("started", ""))

        def __getattr__(self, name):
            return lambda *args, **kwargs: events.append((name, ""))

    result = run_local(load(tmp_path / "spec.yaml"), Options(run_dir=tmp_path / "run"), Observer())
    assert result.status == "Failed" and f"No module named '{missing}'" in result.failure_reason
    said = [index for index, (kind, text) in enumerate(events)
            if kind == "notice" and text.startswith(f"{source / 'train.py'}:1: imports {missing}, which the PyTorch "
                                                    "2.10.0 image ships")]
    assert said and said[0] < events.index(("started", ""))
    assert f"--index-url {PYTORCH_CPU_INDEX}" in events[said[0]][1]
    assert not list(Path(result.run_dir).glob("algo-1/model/*"))
    assert image_notices("1.13.1", source, ("train.py",), "python") == []  # a version the table does not cover
