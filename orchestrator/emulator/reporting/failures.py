"""What SageMaker's toolkit reports when a local run fails (where it started is observing/root_cause.py's).

Each host's failure file holds the toolkit's own message
(`process.check_error`, `errors._CalledProcessError`): `ExecuteUserScriptError:`, `ExitCode`, `ErrorMessage`
(the output from the first line naming a known error), `ExtraInfo` for a process killed with SIGKILL (137), and
`Command`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

# sagemaker_training/__init__.py (5.1.4) _PYTHON_ERRORS_ + _MPI_ERRORS_, plus the error classes the runners add
# (ExecuteUserScriptError when neither smdebug nor TensorFlow is installed): a line containing any of them
# starts the ErrorMessage.
TOOLKIT_ERROR_NAMES = (
    "BaseException", "Exception", "ArithmeticError", "AssertionError", "AttributeError", "BlockingIOError",
    "BrokenPipeError", "BufferError", "ChildProcessError", "ConnectionAbortedError", "ConnectionError",
    "ConnectionRefusedError", "ConnectionResetError", "EOFError", "EnvironmentError", "FileExistsError",
    "FileNotFoundError", "FloatingPointError", "IOError", "ImportError", "IndentationError", "IndexError",
    "InterruptedError", "IsADirectoryError", "KeyError", "LookupError", "MemoryError", "ModuleNotFoundError",
    "NameError", "NotADirectoryError", "NotImplementedError", "OSError", "OverflowError", "PermissionError",
    "ProcessLookupError", "RecursionError", "ReferenceError", "RuntimeError", "SyntaxError", "SystemError",
    "TabError", "TimeoutError", "TypeError", "UnboundLocalError", "UnicodeDecodeError", "UnicodeEncodeError",
    "UnicodeError", "UnicodeTranslateError", "ValueError", "ZeroDivisionError", "Invalid requirement",
    "ResourceExhaustedError", "OutOfRangeError", "InvalidArgumentError", "mpirun.real", "ORTE",
    "ExecuteUserScriptError",
)
OUT_OF_MEMORY = "OutOfMemory: Process killed by SIGKILL (signal 9)"
STOPPED_EXITS = (-15, 128 + 15)
"""A launcher's exit when smtrain stopped it with SIGTERM: killed by the signal, or a shell's 128 + 15."""
FAILURE_REASON_LIMIT = 1024

_RELABELLED = re.compile(r"\[(\d),mpirank:(\d+),[^\]]*\]<(std\w+)>")
def toolkit_error_message(lines: Sequence[str]) -> str:
    """The toolkit's ErrorMessage: from the first line that names a known error on (`process.watch`), each line
    trimmed of its MPI tag and of ` :`, then duplicate lines dropped (`check_error`)."""
    output: list[str] = []
    started = False
    for line in lines:
        raw = _RELABELLED.sub(r"[\1,\2]<\3>", line)  # the toolkit matches the line as mpirun printed it
        err_line = re.sub(r"\[(\d),(\d)\]<stdout>", "", re.sub(r"\[(\d),(\d)\]<stderr>", "", raw))
        if started:
            if err_line not in output:
                output.append(err_line.strip(" :\n") + "\n")
        elif any(name in err_line for name in TOOLKIT_ERROR_NAMES):
            started = True
            output.append(err_line.strip(" :\n") + "\n")
    joined = " ".join(output)
    return "\n".join(dict.fromkeys(joined.split("\n"))).strip()


def toolkit_failure(return_code: int, command: str, lines: Sequence[str],
                    error_class: str = "ExecuteUserScriptError") -> str:
    """The failure file the toolkit writes when the launcher exits non-zero."""
    message = toolkit_error_message(lines)
    code = 128 - return_code if return_code < 0 else return_code  # a shell reports a signal as 128 + n
    extra = f'\nExtraInfo "{OUT_OF_MEMORY}"' if code == 137 else ""
    return f'{error_class}:\nExitCode {code}\nErrorMessage "{message}"{extra}\nCommand "{command}"'.strip()


def quoted_hosts(cause_host: str | None, first_failed: str | None, exit_codes: Mapping[str, int]) -> list[str]:
    """The hosts whose toolkit message a failure reason quotes, best first: the root cause's host, then the host
    whose launcher failed first. A host smtrain stopped with SIGTERM because another failed is left out: its
    message (`ExitCode 143`, an empty `ErrorMessage`) describes smtrain's stop, not the failure, and contradicts
    the cause (a rank of a torchrun host that exited 2 is still in torchrun's exit barrier when it is stopped)."""
    hosts: list[str] = []
    for host in (cause_host, first_failed):
        if host and host not in hosts and (host == first_failed or exit_codes.get(host) not in STOPPED_EXITS):
            hosts.append(host)
    return hosts
