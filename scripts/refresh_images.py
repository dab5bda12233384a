"""Regenerates the Amazon Linux 2023 rows (PyTorch 2.11-2.13) of orchestrator/specs/data/images.yaml from
aws/deep-learning-containers' own data files, kept in scripts/dlc_release/ (COMMIT names the commit they are from).

For each version and processor three files of that repository are read:
  docs/src/data/pytorch/<v>-<cpu|cuda>-sagemaker.yml     the release data: Python, GA and end-of-patch dates, tags
  .github/config/image/pytorch/<v>-sagemaker-<cpu|cuda>.yml   the build config: full version, `prod_image`
  docker/pytorch/<v>/<cpu|cuda>/pyproject.toml           what the image installs (its `sagemaker` extra)
A version is `verified` when its release data and build config agree for both processors: the same full version
and Python, the config's production tag among the released tags, and the release published. The table then
names the full-version tag (2.11.0-cu130-amzn2023-sagemaker). `toolkit` says the sagemaker-training and
sagemaker-pytorch-training toolkits are installed, `smddp` that SMDDP (smdistributed-dataparallel) is.
tests/specs/test_images_table.py regenerates the rows in memory and fails when the file differs.

    python scripts/refresh_images.py                    # rewrite the rows from scripts/dlc_release/
    python scripts/refresh_images.py --from GIT_DIR     # first copy the files from a checkout (its HEAD)
    python scripts/refresh_images.py --check            # exit 1 if the rows are stale
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
TARGET = REPO / "orchestrator" / "specs" / "data" / "images.yaml"
SOURCE = REPO / "scripts" / "dlc_release"
VERSIONS = ("2.11", "2.12", "2.13")
PROCESSORS = {"cpu": "cpu", "gpu": "cuda"}  # the table's processor -> the repository's device folder
START, END = "  # dlc-al2023:start (scripts/refresh_images.py)\n", "  # dlc-al2023:end\n"


def source_paths(version: str, device: str) -> dict[str, str]:
    return {"release": f"docs/src/data/pytorch/{version}-{device}-sagemaker.yml",
            "config": f".github/config/image/pytorch/{version}-sagemaker-{device}.yml",
            "packages": f"docker/pytorch/{version}/{device}/pyproject.toml"}


def _read(root: Path, version: str, device: str) -> dict[str, Any]:
    paths = source_paths(version, device)
    return {"release": yaml.safe_load((root / paths["release"]).read_text()),
            "config": yaml.safe_load((root / paths["config"]).read_text()),
            "packages": tomllib.loads((root / paths["packages"]).read_text())}


def _installs(packages: dict[str, Any]) -> set[str]:
    """The distribution names the SageMaker image installs: the dependencies and the `sagemaker` extra."""
    project = packages["project"]
    requirements = [*project.get("dependencies", []), *project.get("optional-dependencies", {}).get("sagemaker", [])]
    return {requirement.split(";")[0].split("[")[0].split("=")[0].split(">")[0].split("<")[0].strip().lower()
            for requirement in requirements}


def row(root: Path, version: str) -> tuple[str, dict[str, Any]]:
    """The table's row for one major.minor version, keyed by its full version."""
    per_processor = {processor: _read(root, version, device) for processor, device in PROCESSORS.items()}
    full = {files["config"]["metadata"]["framework_version"] for files in per_processor.values()}
    pythons = {files["release"]["python"] for files in per_processor.values()}
    dates = {(files["release"]["ga"], files["release"]["eop"]) for files in per_processor.values()}
    repositories = {files["config"]["metadata"]["prod_image"].split(":")[0] for files in per_processor.values()}
    installs = [_installs(files["packages"]) for files in per_processor.values()]
    tags, verified = {}, len(full) == len(pythons) == len(dates) == len(repositories) == 1
    for processor, files in per_processor.items():
        released, config = files["release"], files["config"]
        production = config["metadata"]["prod_image"].split(":", 1)[1]
        version_tag = next((tag for tag in released["tags"] if tag.startswith(f"{next(iter(full))}-")), None)
        verified &= (production in released["tags"] and version_tag is not None and released.get("public_registry")
                     is True and f"py{config['build']['python_version'].replace('.', '')}" == released["python"])
        tags[processor] = version_tag or production
    ga, eop = sorted(dates)[0]
    entry: dict[str, Any] = {
        "python": sorted(pythons), "smddp": all("smdistributed-dataparallel" in names for names in installs),
        "toolkit": all({"sagemaker-training", "sagemaker-pytorch-training"} <= names for names in installs),
        "repository": repositories.pop(), "ga": ga, "eop": eop, "tag": {"gpu": tags["gpu"], "cpu": tags["cpu"]},
    }
    if not verified:
        entry["unverified"] = True
    return min(full), entry


def block(root: Path) -> str:
    """The rows' text, between the markers."""
    lines = []
    for version in VERSIONS:
        full, entry = row(root, version)
        flow = yaml.safe_dump(entry, default_flow_style=True, sort_keys=False, width=1000).strip()
        lines.append(f'  "{full}": {flow}\n')
    return START + "".join(lines) + END


def render(root: Path = SOURCE, current: str | None = None) -> str:
    """images.yaml with the rows regenerated."""
    text = TARGET.read_text(encoding="utf-8") if current is None else current
    start, end = text.index(START), text.index(END) + len(END)
    return text[:start] + block(root) + text[end:]


def copy_from(git_dir: str) -> None:
    """Copies the source files from a checkout's HEAD into scripts/dlc_release/."""
    def show(path: str) -> str:
        return subprocess.run(["git", "--git-dir", git_dir, "show", f"HEAD:{path}"], check=True,
                              capture_output=True, text=True).stdout

    for version in VERSIONS:
        for device in PROCESSORS.values():
            for path in source_paths(version, device).values():
                (SOURCE / path).parent.mkdir(parents=True, exist_ok=True)
                (SOURCE / path).write_text(show(path), encoding="utf-8")
    commit = subprocess.run(["git", "--git-dir", git_dir, "rev-parse", "HEAD"], check=True, capture_output=True,
                            text=True).stdout.strip()
    (SOURCE / "COMMIT").write_text(commit + "\n", encoding="utf-8")


def main(argv: list[str]) -> int:
    if "--from" in argv:
        copy_from(argv[argv.index("--from") + 1])
    text = render()
    if "--check" in argv:
        if TARGET.read_text(encoding="utf-8") != text:
            print(f"{TARGET} is stale: run python scripts/refresh_images.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
