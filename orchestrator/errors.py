"""User-facing errors. Each says what is wrong and how to fix it; the CLI prints them without a traceback."""

from __future__ import annotations


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


class SpecError(SmtrainError):
    """The spec file or an override is malformed or invalid; no AWS call was made."""


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
    before the function returned, and no rank's own exception was kept."""

    exit_code = 1
