"""Every document the code, its output, the README or a docs page cites (`name.md §N`, `[name.md](name.md) §N`) is in
the project's own docs/, with that section: a reader of `smtrain plan`, of a docstring or of a page can open what it
points to."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CITATION = re.compile(r"(?:docs/)?([a-z][a-z-]+\.md)(?:\]\([^)\s]*\))?((?:,? ?§ ?[0-9]+(?:\.[0-9]+)?(?:-[0-9]+)?)*)")
CITING = [*REPO.glob("orchestrator/**/*.py"), *REPO.glob("orchestrator/**/*.yaml"), *REPO.glob("entrypoints/*.py"),
          *REPO.glob("tests/**/*.py"), *REPO.glob("scripts/*"), REPO / "README.md", *REPO.glob("docs/*.md")]
NOT_DOCS = {"README.md", "notes.md", "name.md"}


def _citations() -> list[tuple[Path, str, list[str]]]:
    found = []
    for path in CITING:
        if not path.is_file():
            continue
        for match in CITATION.finditer(path.read_text(errors="replace")):
            if match[1] not in NOT_DOCS:
                found.append((path, match[1], re.findall(r"§ ?([0-9]+(?:\.[0-9]+)?)", match[2])))
    return found


def test_the_code_cites_documents():
    names = {name for _, name, _ in _citations()}
    assert {"sagemaker-contract.md", "sdk-facts.md"} <= names


def test_every_cited_document_and_section_is_in_docs():
    missing = []
    for path, name, sections in _citations():
        document = REPO / "docs" / name
        if not document.is_file():
            missing.append(f"{path.relative_to(REPO)}: {name}")
            continue
        headings = set(re.findall(r"^#{2,3} ([0-9]+(?:\.[0-9]+)?)\.? ", document.read_text(), re.MULTILINE))
        missing += [f"{path.relative_to(REPO)}: {name} §{section}" for section in sections if section not in headings]
    assert not missing, missing


def test_plan_cites_the_docs_path():
    source = (REPO / "orchestrator" / "planning" / "plan_view.py").read_text()  # the lines `smtrain plan` prints
    assert "docs/sagemaker-contract.md §6" in source
