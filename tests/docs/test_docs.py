"""The documentation stays true: the README is a short door with the two commands CI runs, docs/ holds the
reference (its field table is the models', every command is documented), and every relative link resolves."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import click
import pytest

from orchestrator.cli.main import main as smtrain

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
PAGES = [REPO / "README.md", *sorted(DOCS.glob("*.md"))]
README_MAX_LINES = 100
"""A door: what smtrain is, the two commands, a tour, one spec, one notebook cell and the map of docs/ (89 lines on
2026-11-28, down from 149); reference paragraphs belong on the docs page that owns their topic (docs/cli.md, ...)."""
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _commands(group: click.Group, prefix: str = "smtrain") -> list[str]:
    """Every command, those the group imports only when run (`smtrain local`, `submit`, `tune`, ...) too."""
    found, context = [], click.Context(group)
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        found.append(f"{prefix} {name}")
        if isinstance(command, click.Group):
            found += _commands(command, f"{prefix} {name}")
    return found


def test_field_reference_matches_the_models():
    generated = subprocess.run([sys.executable, "scripts/spec_reference.py"], cwd=REPO, capture_output=True,
                               text=True, check=True).stdout
    page = (DOCS / "specs.md").read_text()
    start = page.index("<!-- spec-reference:start -->\n") + len("<!-- spec-reference:start -->\n")
    assert page[start:page.index("<!-- spec-reference:end -->")] == generated, \
        "docs/specs.md's field reference is stale: paste the output of `python scripts/spec_reference.py`"


def test_readme_opens_with_the_two_commands_and_ci_runs_the_test_one():
    head = (REPO / "README.md").read_text()[:1200]
    assert "bash scripts/demo.sh" in head and "bash scripts/test.sh" in head
    assert "bash scripts/test.sh" in (REPO / ".ci" / "run").read_text()


def test_readme_is_a_door_not_the_house():
    assert len((REPO / "README.md").read_text().splitlines()) <= README_MAX_LINES


@pytest.mark.parametrize("command", _commands(smtrain))
def test_every_command_is_documented_somewhere(command):
    text = "\n".join(page.read_text() for page in PAGES)
    assert f"`{command}" in text or f"{command} " in text, f"no page of README.md or docs/ shows `{command}`"


def test_every_option_of_smtrain_local_is_listed_on_its_page():
    """docs/local.md lists the command's options; --link-inputs and --exact-autocast were missing from it."""
    command = smtrain.get_command(click.Context(smtrain), "local")
    page = (DOCS / "local.md").read_text()
    missing = [option.opts[0] for option in command.params if isinstance(option, click.Option) and not option.hidden
               and not any(re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", page)
                           for flag in option.opts + option.secondary_opts)]
    assert not missing, f"docs/local.md does not list {missing}"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_relative_link_resolves(page):
    broken = []
    for target in LINK.findall(page.read_text()):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        path = (page.parent / target.split("#", 1)[0]).resolve()
        if not path.exists():
            broken.append(target)
    assert not broken, f"{page.relative_to(REPO)} links to missing files: {broken}"


MAPPED_PACKAGES = ("cloud", "observing", "planning", "specs")
"""The packages whose every module docs/architecture.md's layout names (cause_window, log_file_end, pip_failure,
epochs, yaml_readings, bucket_names, reserved_environment and unverified were added without it at first)."""


def _layout() -> str:
    return (DOCS / "architecture.md").read_text().split("```")[1]


@pytest.mark.parametrize("package", MAPPED_PACKAGES)
def test_the_layout_names_every_module_of_the_mapped_packages(package):
    layout = _layout()
    modules = sorted(path.stem for path in (REPO / "orchestrator" / package).glob("*.py") if path.stem != "__init__")
    missing = [module for module in modules if not re.search(rf"\b{module}\b", layout)]
    assert not missing, f"docs/architecture.md's layout does not name orchestrator/{package}/{missing}"


def test_every_module_path_the_architecture_page_names_exists():
    named = set(re.findall(r"`(?:orchestrator/)?((?:[a-z_]+/)+[a-z_]+\.py)`", (DOCS / "architecture.md").read_text()))
    gone = sorted(path for path in named
                  if not (REPO / "orchestrator" / path).is_file() and not (REPO / path).is_file())
    assert not gone, f"docs/architecture.md names modules that do not exist: {gone}"
