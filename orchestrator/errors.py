"""User-facing errors. Each says what is wrong and how to fix it; the CLI and a notebook show them without a
traceback."""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

_Function = TypeVar("_Function", bound=Callable[..., Any])
_OPTION = re.compile(r"(?<![\w-])--([a-z][a-z-]*)(?:=([\w.:-]+))?")
"""A CLI option as an error names it: `--region`, or with its value, `--backend=local`."""


class SmtrainError(Exception):
    """Base of every error meant for a user rather than a developer.

    Attributes:
        exit_code: the CLI's exit status for this error (2: the input is wrong and nothing was sent).
        fix: one sentence saying what to do about it, printed after the message.
    """

    exit_code = 2

    def __init__(self, message: str, fix: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix

    def __str__(self) -> str:
        return self.message if not self.fix else f"{self.message}\n  To fix: {self.fix}"

    def _render_traceback_(self) -> list[str]:
        """What IPython and Jupyter show for it: the message and the fix, as the CLI prints them, not a traceback
        through smtrain's own frames (`%debug` still has it)."""
        return f"{type(self).__name__}: {self}".splitlines()


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (a notebook's interrupt) that smtrain has handled: its message says what became of the job. Still a
    KeyboardInterrupt, so the cell stops and `except KeyboardInterrupt` catches it; IPython shows that one line
    instead of a traceback through smtrain's frames (`%debug` still has them).

    Attributes:
        signal_name: the signal that came (the CLI's handlers raise one for SIGTERM and SIGHUP too).
    """

    def __init__(self, message: str, signal_name: str = "SIGINT") -> None:
        super().__init__(message)
        self.message = message
        self.signal_name = signal_name

    def _render_traceback_(self) -> list[str]:
        return [f"KeyboardInterrupt: {self.message}"]


class SpecError(SmtrainError):
    """The spec file or an override is malformed or invalid; no AWS call was made.

    Attributes:
        file: the spec file refused as a whole (missing, unreadable, not UTF-8), the place `--output json` gives as
            `file`; None where no file is involved or each of its problems names its own place.
        line: the line of `file` the refusal is at (a byte that is not UTF-8), `--output json`'s `line`; None where
            the whole file is refused.
    """

    def __init__(self, message: str, fix: str | None = None, *, file: str | None = None,
                 line: int | None = None) -> None:
        super().__init__(message, fix)
        self.file = file
        self.line = line


class CapabilityError(SpecError):
    """The spec is well-formed but would certainly fail on SageMaker (mode x instance x version)."""


class EnvironmentProblem(SmtrainError):
    """This machine lacks something a command needs (mpirun, torch, credentials, a role)."""


class AwsError(SmtrainError):
    """An AWS call failed in a way the user can act on (unknown job, name clash, access denied)."""

    exit_code = 1


class DamagedRun(SmtrainError):
    """A run directory's status file cannot be read as one (not JSON, not an object, fields missing): that run
    is reported as damaged, alone; every other run still answers."""

    exit_code = 1


class RunFailed(SmtrainError):
    """`smtrain local` could not go on with a run it had started preparing (a full disk while copying a channel);
    result.json says so where it could be written."""

    exit_code = 1


class JobFailed(SmtrainError):
    """A function job (`orchestrator.function_jobs`) ended without every rank's return value: it failed or was stopped
    before the function returned and no rank's own exception was kept, or a rank's function exited (`sys.exit(3)`)
    or was interrupted, which would end the caller if raised there."""

    exit_code = 1


_OPTION_OF = {"max_source_bytes": "--max-source-mb", "names": "--metric", "period_seconds": "--period"}
"""The API's keywords whose CLI option has another name (and unit)."""


def naming_keywords(function: _Function) -> _Function:
    """For a function of the Python API: its errors name its keyword (`region=`, `backend="local"`) where their
    text, written once for the CLI and the API, names the CLI's option of that name (`--region`,
    `--backend=local`), by `in_keywords`; a keyword that is False by default is a switch, and its option says
    `allow_unverified=True` as the flag turns it on."""
    keywords = {_OPTION_OF.get(name, "--" + name.replace("_", "-")): f"{name}=True" if keyword.default is False
                else f"{name}=" for name, keyword in inspect.signature(function).parameters.items()}

    @functools.wraps(function)
    def called(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except SmtrainError as error:
            error.message = in_keywords(error.message, keywords)
            error.fix = in_keywords(error.fix, keywords) if error.fix else error.fix
            error.args = (error.message,)
            raise

    return called  # type: ignore[return-value]


def in_keywords(text: str, keywords: Mapping[str, str]) -> str:
    """`text`, written once for the CLI and the API, as a Python caller reads it: each CLI option that `keywords`
    maps is written as the keyword that does the same (`--region` as `region=`, a switch such as
    `--no-gpu-standin` as `gpu_standin=False`), an option with its value (`--backend=local`) as the keyword with
    it (`backend="local"`). Options it does not map, and a command in backticks (`aws s3 mb ... --region x`), keep
    the CLI's words."""
    def keyword(option: re.Match[str]) -> str:
        said = keywords.get(f"--{option[1]}")
        if said is None or (option[2] and not said.endswith("=")):
            return option[0]
        return f'{said}"{option[2]}"' if option[2] else said

    parts = text.split("`")
    return "`".join(part if quoted % 2 else _OPTION.sub(keyword, part) for quoted, part in enumerate(parts))


def install_extra(extra: str) -> str:
    """The command that adds smtrain's optional `extra` (plot, tune, remote, sdk) to the environment smtrain runs in.

    smtrain is not on PyPI (docs/install.md): `pip install 'smtrain[tune]'` works only through the pip of an
    environment where smtrain is installed, which keeps it and adds the extra's packages; any other pip (the
    system's, beside an unactivated `.venv`) finds no smtrain. So the command names this interpreter's pip, and
    where smtrain runs without being installed (a clone on PYTHONPATH), installs it from that clone.
    """
    import shlex
    import sys

    installed = _installed_origin() is not None
    return f"{shlex.quote(sys.executable)} -m pip install " + shlex.quote(
        f"{'smtrain' if installed else smtrain_source()}[{extra}]")


def smtrain_source() -> str:
    """What pip installs this smtrain from elsewhere (a fresh virtualenv): the clone or wheel it was installed
    from, else the clone it runs from, else its name (for an index that has it)."""
    from pathlib import Path
    from urllib.parse import unquote, urlparse

    url = urlparse((_installed_origin() or {}).get("url", ""))
    if url.scheme == "file" and Path(unquote(url.path)).exists():
        return unquote(url.path)
    checkout = Path(__file__).resolve().parents[1]
    return str(checkout) if (checkout / "pyproject.toml").is_file() else "smtrain"


def _installed_origin() -> dict | None:
    """The installed smtrain's direct_url.json (PEP 610: `{}` when it came from an index), None when it is not
    installed."""
    import json
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        return json.loads(distribution("smtrain").read_text("direct_url.json") or "{}")
    except PackageNotFoundError:
        return None
