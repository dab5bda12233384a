"""The tests of a file are found where the file is: tests/<package>/ for each package or module of orchestrator/
(tests/emulator/gpu_standin/ for orchestrator/emulator/gpu_standin/), tests/entrypoints/ and tests/infra/ for the
repository's folders of those names, and a short list of folders for what crosses the packages."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
PACKAGE = REPO / "orchestrator"

# The repository's own folders of code outside orchestrator/ that have tests of their own.
CODE_FOLDERS = ("entrypoints", "infra")

# Folders for what no single package owns: the oracles that hold the whole product to an outside truth, the
# checks of the code base as a whole, and what the tests share.
CROSS_CUTTING = {
    "architecture": "layers, import rules and house-style checks over all of orchestrator/",
    "docs": "the documentation against the code: fields, commands, links, cited sections",
    "examples": "published SageMaker example scripts, byte for byte, run by `smtrain local`",
    "golden": "the golden CreateTrainingJob and tuning requests (data the planning and spec tests compare with)",
    "install": "installs from a wheel into fresh virtualenvs",
    "referees": "SageMaker's own SDK (referees/sdk) and training toolkit (referees/toolkit) as judges",
    "suite": "the test suite itself: isolation, order, this layout",
    "support": "helpers and fixtures that tests of several packages share (no tests)",
}


def _mirrors_code(folder: Path) -> bool:
    """Whether a folder of tests/ stands for code: a package or module of orchestrator/, or a code folder."""
    parts = folder.relative_to(TESTS).parts
    if parts[0] in CODE_FOLDERS:
        return len(parts) == 1
    return (PACKAGE.joinpath(*parts) / "__init__.py").is_file() or (
        len(parts) == 1 and (PACKAGE / f"{parts[0]}.py").is_file())


def test_every_top_level_folder_mirrors_code_or_is_a_named_cross_cutting_one():
    strays = sorted(folder.name for folder in TESTS.iterdir()
                    if folder.is_dir() and not folder.name.startswith((".", "__"))
                    and folder.name not in CROSS_CUTTING and not _mirrors_code(folder))
    assert not strays, (f"tests/{strays[0]}/ is neither a package or module of orchestrator/, nor one of "
                        f"{', '.join(CODE_FOLDERS)}, nor a cross-cutting folder: move its tests to tests/<package>/ "
                        "for the code they test, or name the folder in CROSS_CUTTING with its reason")


def test_every_test_module_lies_in_the_folder_of_its_code():
    misplaced = sorted(module.relative_to(TESTS).as_posix() for module in TESTS.rglob("test_*.py")
                       if module.parent == TESTS or (
                           module.relative_to(TESTS).parts[0] not in CROSS_CUTTING
                           and not _mirrors_code(module.parent)))
    assert not misplaced, (f"tests/{misplaced[0]} lies in a folder that mirrors no package of orchestrator/: "
                           "put it in tests/<package>/ (a subpackage's folder below it, e.g. "
                           "tests/emulator/gpu_standin/), or in a cross-cutting folder")
