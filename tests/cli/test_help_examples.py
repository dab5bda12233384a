"""Every command's `--help` ends with examples a new user can type: each names the command and parses as its
arguments (no flag that does not exist, no value of the wrong kind)."""

from __future__ import annotations

import shlex
from typing import Any

import click
import pytest
from click.testing import CliRunner

from orchestrator.cli.main import main


def _leaf_commands(group: click.Group, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    """Every command under `group` that runs (not a group), with the words that name it."""
    context = click.Context(group)
    found = []
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        if isinstance(command, click.Group):
            found += _leaf_commands(command, (*path, name))
        else:
            found.append(((*path, name), command))
    return found


def _examples(help_text: str) -> list[str]:
    """The lines under `Examples:`, up to the options."""
    if "Examples:" not in help_text:
        return []
    lines = help_text.split("Examples:", 1)[1].split("Options:", 1)[0].splitlines()
    return [line.strip() for line in lines if line.strip().startswith("smtrain ")]


LEAVES = _leaf_commands(main)


def test_every_command_is_seen():
    names = {" ".join(path) for path, _ in LEAVES}
    assert {"validate", "plan", "local", "submit", "status", "logs", "tune local", "infra deploy"} <= names


@pytest.mark.parametrize(("path", "command"), LEAVES, ids=[" ".join(path) for path, _ in LEAVES])
def test_help_shows_examples_that_parse(path, command):
    help_text = CliRunner().invoke(main, [*path, "--help"], terminal_width=200).output
    examples = _examples(help_text)
    assert examples, f"`smtrain {' '.join(path)} --help` shows no example"
    for example in examples:
        words = shlex.split(example.split(" > ")[0])  # a redirect (`> schema.json`) is the shell's
        assert words[1:1 + len(path)] == list(path), example
        command.make_context(" ".join(path), words[1 + len(path):], parent=click.Context(main))
