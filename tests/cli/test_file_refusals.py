"""A spec file refused as a whole (too large, UTF-16, a NUL byte, not UTF-8, a folder, a FIFO, unreadable, missing)
is named by every command that reads one: its path (and line, where the refusal has one) in `--output json`'s
`file` and `line` and in the text, exit 2, no traceback. Before, the size and encoding refusals gave `"file": null`,
and a folder was click's usage error (`validate -o json`: no report per file) or, through the API, a traceback."""

from __future__ import annotations

import codecs
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from orchestrator.cli.main import main
from orchestrator.specs.loader import MAX_SPEC_BYTES

pytestmark = pytest.mark.hardening


def _bytes(content: bytes) -> Callable[[Path], None]:
    return lambda path: path.write_bytes(content)


def _link_to_itself(path: Path) -> None:
    path.symlink_to(path.name)


FILES = {  # what is at spec.yaml: (how it is made there, the refusal's words, the line it names)
    "too large": (_bytes(b"name: x\n" + b"#" * MAX_SPEC_BYTES), "larger than 1024 KiB", None),
    "UTF-16 with its BOM": (_bytes(codecs.BOM_UTF16_LE + "name: x\n".encode("utf-16-le")), "UTF-16", None),
    "a NUL byte": (_bytes(b"name: x\nentry_point: a\x00\n"), "NUL byte at offset 22", 2),
    "not UTF-8": (_bytes(b"name: x\n# caf\xe9\n"), "not UTF-8 (byte 0xe9", 2),
    "a folder": (Path.mkdir, "not a regular file (a folder)", None),
    "a FIFO": (os.mkfifo, "not a regular file (a named pipe (FIFO))", None),
    "unreadable": (_link_to_itself, "cannot read: Too many levels of symbolic links", None),
    "missing": (lambda path: None, "no such spec file", None),
}
COMMANDS = [("validate", "spec.yaml"), ("plan", "spec.yaml"), ("submit", "spec.yaml"),
            ("submit", "spec.yaml", "--dry-run"), ("check", "spec.yaml"), ("tune", "validate", "spec.yaml"),
            ("tune", "plan", "spec.yaml"), ("tune", "submit", "spec.yaml")]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
@pytest.mark.parametrize("case", FILES)
def test_a_refused_file_is_named_with_its_line_in_json_and_text(tmp_path, monkeypatch, command, case):
    make, words, line = FILES[case]
    monkeypatch.chdir(tmp_path)
    make(tmp_path / "spec.yaml")

    as_json = CliRunner().invoke(main, [*command, "-o", "json"])
    as_text = CliRunner().invoke(main, list(command))

    for result in (as_json, as_text):
        assert result.exit_code == 2, result.output
        assert "Traceback" not in result.output and not isinstance(result.exception, OSError), result.output
    document = json.loads(as_json.stdout)
    error = document[0]["problems"][0] if isinstance(document, list) else document["error"]  # validate: reports
    assert (error["file"], error["line"]) == ("spec.yaml", line), error
    assert words in error["message"]
    assert f"spec.yaml{f':{line}' if line else ''}: " in as_text.output and words in as_text.output
