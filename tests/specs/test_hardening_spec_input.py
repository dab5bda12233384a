"""Hostile spec files: each gets exit 2 and one message naming the file and the problem, fast and in
bounded memory, instead of a segfault, a RecursionError, a MemoryError or a decode traceback."""

from __future__ import annotations

import codecs
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from forked import smtrain
from tuning_specs import TUNING_SPECS

pytestmark = pytest.mark.hardening

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "job_specs" / "mlp-gloo-none-2x-c5.2xlarge.yaml"
HEAD = "name: hostile\nentry_point: train.py\nframework_version: '2.3.0'\ninstance: {type: ml.c5.2xlarge}\n"

# The classic "billion laughs": 9 levels of 9 aliases, 9**9 = 387 million strings from about 400 bytes.
ALIAS_BOMB = "name: bomb\na: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{name}: &{name} [{', '.join([f'*{previous}'] * 9)}]\n" for previous, name in zip("abcdefgh", "bcdefghi", strict=True))


def _validate(spec: Path | str, *args: str) -> subprocess.CompletedProcess[str]:
    """`smtrain validate` in its own process, so a segfault or a runaway allocation cannot take pytest down;
    its address space is capped at 2 GB for the same reason."""
    return smtrain("validate", str(spec), *args, cwd=REPO, memory_limit_bytes=2 << 30)


def _assert_one_message(result: subprocess.CompletedProcess[str], *expected: str) -> None:
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert "Traceback" not in output, output
    assert "1 problem in the job spec:" in output or output.count("To fix:") == 1, output
    for text in expected:
        assert text in output, output


@pytest.fixture
def spec_file(tmp_path):
    (tmp_path / "train.py").write_text("print(1)\n")

    def write(content: str | bytes) -> Path:
        path = tmp_path / "spec.yaml"
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        return path

    return write


@pytest.mark.parametrize(("body", "expected"), [
    ("hyperparameters: {deep: " + "[" * 100_000 + "]" * 100_000 + "}\n", "nested more than 32 levels deep"),
    ("hyperparameters: {deep: " + "[" * 1000 + "]" * 1000 + "}\n", "nested more than 32 levels deep"),
    ("hyperparameters: &a {x: *a}\n", "alias *a is inside its own anchor &a"),
    ("tags: [&a [*a]]\n", "alias *a is inside its own anchor &a"),
    ("hyperparameters: {n: " + "7" * 5000 + "}\n", "a number with more than 4300 digits"),
    ("name2: \x01\n", "control characters are not allowed"),
])
def test_hostile_yaml_is_one_message(spec_file, body, expected):
    path = spec_file(HEAD + body)
    _assert_one_message(_validate(path), f"{path}:", expected)


@pytest.mark.parametrize(("body", "where"), [
    ("? [a]\n: 1\n", ":5:3:"),
    ("[a, b]: 1\n", ":5:1:"),
    ("environment: {? {a: 1} : x}\n", ":5:17: environment:"),
    ("x-common: &c {? [a] : 1}\nhyperparameters: {<<: *c}\n", ":5:17: x-common:"),
])
def test_a_key_written_as_a_list_or_mapping_is_one_message_at_its_line(spec_file, body, where):
    path = spec_file(HEAD + body)
    _assert_one_message(_validate(path), f"{path}{where}", "a key written as a",
                        "fix: write the key as plain text, `name: value`")


def test_a_tuning_spec_key_written_as_a_list_is_one_message_at_its_line(tmp_path):
    search = tmp_path / "search.yaml"
    search.write_text(TUNING_SPECS["grid"] + "? [a]\n: 1\n")
    result = smtrain("tune", "validate", str(search), cwd=REPO, memory_limit_bytes=2 << 30)
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert "Traceback" not in output, output
    line = TUNING_SPECS["grid"].count("\n") + 1
    assert f"1 problem in the tuning spec:\n  {search}:{line}:3: a key written as a list" in output, output


def test_alias_bomb_is_refused_fast_in_bounded_memory(spec_file):
    assert len(ALIAS_BOMB) < 600
    started = time.monotonic()
    assert _validate(EXAMPLE).returncode == 0  # what starting `smtrain validate` costs on this machine now
    plain_seconds = time.monotonic() - started
    path = spec_file(ALIAS_BOMB)
    started = time.monotonic()
    result = _validate(path)
    assert time.monotonic() - started < plain_seconds + 10, "the bomb is refused without expanding it"
    _assert_one_message(result, f"{path}:", "more than 10000 values once aliases are expanded")


def test_aliases_within_bounds_still_work(spec_file):
    path = spec_file(HEAD + "environment: &env {A: '1'}\ntags: *env\nhyperparameters: {<<: *env, epochs: 1}\n")
    result = _validate(path)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(("content", "expected"), [
    ("name: x\n".encode("utf-16"), "UTF-16 (or UTF-32) text"),
    (codecs.BOM_UTF16_BE + "name: x\n".encode("utf-16-be"), "UTF-16 (or UTF-32) text"),
    (b"name: x\x00\n", "NUL byte at offset 7"),
    (HEAD.encode() + b"environment: {CITY: M\xfcnchen}\n", ":5: not UTF-8 (byte 0xfc"),
    (b"name: x\n" + b"#" * (1024 * 1024), "larger than 1024 KiB"),
])
def test_unreadable_encodings_and_sizes_are_one_message(spec_file, content, expected):
    path = spec_file(content)
    _assert_one_message(_validate(path), str(path), expected)


def test_a_device_or_fifo_is_not_read(tmp_path):
    _assert_one_message(_validate("/dev/zero"), "/dev/zero: not a regular file")
    fifo = tmp_path / "spec.yaml"
    os.mkfifo(fifo)
    _assert_one_message(_validate(fifo), f"{fifo}: not a regular file")


SWAPPED = """
import pathlib, sys
from orchestrator.specs.loader import load
spec, earlier = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
look = pathlib.Path.stat
pathlib.Path.stat = lambda path, **kw: look(earlier if path == spec else path, **kw)  # what a check saw before
try:
    load(spec)
except Exception as error:
    print(type(error).__name__, error)
"""


def test_a_spec_swapped_for_a_fifo_after_any_check_is_not_read(tmp_path):
    """The spec was checked to be a regular file, then opened by its path: a FIFO put there in between held the
    open forever. Here every look at the path sees the regular file it was a moment before (the swap), the open
    finds the FIFO, and the process's time limit ends a wait."""
    regular = tmp_path / "was.yaml"
    regular.write_text(HEAD)
    fifo = tmp_path / "spec.yaml"
    os.mkfifo(fifo)
    result = subprocess.run([sys.executable, "-c", SWAPPED, str(fifo), str(regular)], capture_output=True,
                            text=True, timeout=30, cwd=REPO, check=False)
    assert result.stdout.startswith(f"SpecError {fifo}: not a regular file"), result.stdout + result.stderr


def test_a_spec_path_that_loops_says_what_to_do(tmp_path):
    (tmp_path / "spec.yaml").symlink_to("spec.yaml")
    _assert_one_message(_validate(tmp_path / "spec.yaml"), "cannot read: Too many levels of symbolic links",
                        f"To fix: point the symbolic link at the spec file itself (`ls -l {tmp_path}/spec.yaml`")


@pytest.mark.parametrize(("override", "expected"), [
    ("instance.count=&a [*a]", "--set instance.count=&a [*a]: alias *a is inside its own anchor &a"),
    ("hyperparameters.deep=" + "[" * 5000 + "]" * 5000, "nested more than 32 levels deep"),
    ("instance.count=" + "1" * 5000, "a number with more than 4300 digits"),
])
def test_hostile_overrides_are_one_message(override, expected):
    _assert_one_message(_validate(EXAMPLE, "--set", override), expected)


@pytest.mark.parametrize("character", ["\u202e", "\u200b", "\u2028", "\x1b"], ids=["rlo", "zwsp", "lsep", "esc"])
def test_a_hyperparameter_name_with_a_bidi_or_control_character_is_refused_and_shown_escaped(spec_file, character):
    """`lr<U+202E>esab` printed raw by plan would show as another name."""
    from click.testing import CliRunner

    from orchestrator.cli.main import main

    name = f"lr{character}esab"
    written = HEAD + f'hyperparameters: {{"{name.encode("unicode_escape").decode()}": 1}}\n'
    for body, args in ((written, ["validate"]), (written, ["validate", "-o", "json"]), (written, ["plan"]),
                       (HEAD, ["validate", "--set", f"hyperparameters.{name}=1"])):
        result = CliRunner().invoke(main, [args[0], str(spec_file(body)), *args[1:]])
        assert result.exit_code == 2, (args, result.output)
        assert character not in result.output, (args, result.output)
        assert f"\\u{ord(character):04x}" in result.output, (args, result.output)


@pytest.mark.parametrize(("body", "args"), [
    (HEAD + 'hyperparameters: {"": 1}\n', []),
    (HEAD, ["--set", "hyperparameters.=1"]),
    (HEAD, ["--set", "hyperparameters..lr=1"]),
], ids=["in-the-spec", "set-empty", "set-double-dot"])
def test_an_empty_hyperparameter_name_is_refused(spec_file, body, args):
    """The toolkit passes no option for it: the script's argparse got a stray `1`, and the job failed on
    SageMaker."""
    _assert_one_message(_validate(spec_file(body), *args), "hyperparameters.: an empty hyperparameter name",
                        "give it a name, or remove it")


def test_a_tuned_parameter_name_with_a_bidi_character_is_refused_escaped(spec_file, tmp_path):
    from click.testing import CliRunner

    from orchestrator.cli.main import main

    job = spec_file(HEAD)
    search = tmp_path / "search.yaml"
    search.write_text(f'job: {job}\nobjective: {{metric: "train:loss", type: Minimize}}\nstrategy: Random\n'
                      'parameters: {"lr\\u202eesab": {type: continuous, min: 0.1, max: 0.2}}\nmax_jobs: 2\n')
    for command in ("validate", "plan"):
        result = CliRunner().invoke(main, ["tune", command, str(search)])
        assert result.exit_code == 2, result.output
        assert "\u202e" not in result.output and "\\u202e" in result.output, result.output


def test_validate_warns_that_a_secret_looking_hyperparameter_is_on_the_command_line(spec_file):
    """Kept as SageMaker's toolkit does it (on the script's command line), but said, with where to put
    such a value instead; the value itself is not shown."""
    from click.testing import CliRunner

    from orchestrator.cli.main import main

    path = spec_file(HEAD + "hyperparameters: {db_password: hunter22-value, epochs: 2}\n")
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 0, result.output
    assert "hyperparameters.db_password" in result.output and "process list" in result.output
    assert "environment" in result.output and "Secrets Manager" in result.output
    assert "hunter22-value" not in result.output
    document = CliRunner().invoke(main, ["validate", str(path), "-o", "json"]).output
    assert "hyperparameter-on-command-line" in document and "hunter22-value" not in document


def _local_path_cases(tmp_path: Path) -> dict[str, tuple[str, str]]:
    """Spec lines naming a path on this machine that cannot even be looked up, and what the refusal says."""
    (tmp_path / "loop").symlink_to("loop")
    long_name = "x" * 5000
    s3 = "inputs: {train: s3://bucket/train/}\n"
    return {
        "source_dir loop": ("source_dir: loop\n", f"source_dir: {tmp_path}/loop cannot be looked up: Too many levels"),
        "source_dir NUL": ('source_dir: "a\\0b"\n', f"source_dir: {tmp_path}/a\\u0000b holds a NUL character"),
        "entry_point too long": (f"entry_point: {long_name}\n", "cannot be looked up: File name too long"),
        "entry_point loop": ("entry_point: loop\n", f"entry_point: {tmp_path}/loop cannot be looked up"),
        "inputs loop": ("inputs: {train: loop}\n", f"inputs.train: {tmp_path}/loop cannot be looked up"),
        "local_inputs NUL": (s3 + 'local_inputs: {train: "a\\0b"}\n', "local_inputs.train: "
                             f"{tmp_path}/a\\u0000b holds a NUL character"),
    }


@pytest.mark.parametrize("case", ["source_dir loop", "source_dir NUL", "entry_point too long", "entry_point loop",
                                  "inputs loop", "local_inputs NUL"])
def test_a_local_path_that_cannot_be_looked_up_is_one_message(spec_file, tmp_path, case):
    """A link loop, a NUL or a name longer than the file system takes, in any path the spec names on this machine:
    each was a RuntimeError, ValueError or OSError traceback from validate (pathlib raises them)."""
    line, expected = _local_path_cases(tmp_path)[case]
    head = HEAD.replace("entry_point: train.py\n", "") if line.startswith("entry_point") else HEAD
    path = spec_file(head + line)
    _assert_one_message(_validate(path), f"{path}:", expected)


def test_a_tuning_spec_whose_job_is_a_link_loop_is_one_message(tmp_path):
    (tmp_path / "loop").symlink_to("loop")
    search = tmp_path / "search.yaml"
    search.write_text('job: loop\nobjective: {metric: "train:loss", type: Minimize}\nstrategy: Random\n'
                      'parameters: {lr: {type: continuous, min: 0.1, max: 0.2}}\nmax_jobs: 2\n')
    result = smtrain("tune", "validate", str(search), cwd=REPO)
    output = result.stdout + result.stderr
    assert result.returncode == 2 and "Traceback" not in output, output
    assert f"{search}:1:1: job: {tmp_path}/loop: cannot read: Too many levels of symbolic links" in output


@pytest.mark.parametrize("kind", ["fifo", "link to /dev/zero"])
def test_an_entry_point_named_train_py_that_is_no_file_is_never_read(tmp_path, kind):
    """Whether a job runs smtrain's own train.py was answered by reading the entry point whole: a FIFO held
    validate forever (the forked call's time limit ends it), /dev/zero filled its memory (capped at 1 GB here)."""
    source = tmp_path / "src"
    source.mkdir()
    if kind == "fifo":
        os.mkfifo(source / "train.py")
    else:
        (source / "train.py").symlink_to("/dev/zero")
    spec = tmp_path / "spec.yaml"
    spec.write_text(HEAD + "source_dir: src\n")
    result = smtrain("validate", str(spec), cwd=REPO, memory_limit_bytes=1 << 30, timeout=120)
    what = "a named pipe (FIFO)" if kind == "fifo" else "a character device"
    _assert_one_message(result, f"{spec}:2:1: entry_point: train.py in {source} is not a regular file ({what}), so "
                        "it is no script to run", "point entry_point at your training script")


def test_a_path_with_terminal_escapes_is_shown_escaped_in_errors(tmp_path):
    """A spec path or run name is echoed in errors: `ESC]52;...BEL` in it would write the clipboard and `ESC[2J`
    clear the screen of whoever reads them; each control character is shown as its escape instead."""
    from click.testing import CliRunner

    from orchestrator.cli.main import main

    hostile = "x\x1b]52;c;aGk=\x07\x1b[2J"
    (tmp_path / f"ok{hostile}.yaml").write_text(HEAD.replace("entry_point: train.py\n", "entry_point: ok.py\n"))
    (tmp_path / "ok.py").write_text("print(1)\n")
    for args in (["validate", str(tmp_path / f"{hostile}.yaml")], ["plan", str(tmp_path / f"{hostile}.yaml")],
                 ["tune", "validate", str(tmp_path / f"{hostile}.yaml")], ["status", hostile],
                 ["validate", str(tmp_path / f"ok{hostile}.yaml")]):
        result = CliRunner().invoke(main, args)
        assert "\x1b" not in result.output and "\x07" not in result.output, (args, result.output)
        assert "\\u001b]52;c;aGk=\\u0007\\u001b[2J" in result.output, (args, result.output)


@pytest.mark.parametrize("body", [f"hyperparameters:\n  {'k' * 1100}: 1\n", f"hyperparameters: {{{'k' * 1100}: 1}}\n"])
def test_a_key_longer_than_pyyaml_reads_is_named_as_such(spec_file, body):
    """PyYAML reads a key of at most 1024 characters: beyond, it said "did not find expected ','" (or "mapping
    values are not allowed here"), which names no key and no limit."""
    path = spec_file(HEAD + body)
    _assert_one_message(_validate(path), f"{path}:", "YAML: a key of 1100 characters, longer than the 1024 PyYAML "
                        "reads as a key (its simple key limit)", "shorten the key")
