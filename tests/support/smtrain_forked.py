"""`smtrain` in a process of its own, forked from a warm one: what a test of a CLI command's behaviour needs (its
exit code, its stdout and stderr, a crash or a runaway allocation kept out of pytest) for about 0.03 CPU-s instead
of the 0.5 a fresh interpreter spends importing pydantic, click and the spec models before it reads a line.

Each pytest process starts one server (this file run as a script) on first use. The server imports the modules
every command needs, nothing more: no command has run in it, so no cache holds a value from another test. For each
call it forks; the child takes the call's working directory, environment, memory cap and time limit, points its
stdin at /dev/null and its stdout and stderr at files, and runs `python -m orchestrator ARGS` at the top level of
the interpreter, so an exit code, an unhandled exception's traceback and the atexit handlers are what a fresh
`smtrain` process gives. A test of what a fresh process imports (tests/cli/test_cli.py) still starts one.
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

# Imported by the server before it forks: the CLI and what validate, plan and local import before their work.
PRELOADED = ("orchestrator.cli.main", "orchestrator.cli.render", "orchestrator.specs.loader",
             "orchestrator.planning.request", "orchestrator.api")

_server: subprocess.Popen[bytes] | None = None


def smtrain(*args: str, cwd: Path | str | None = None, env: dict[str, str] | None = None,
            memory_limit_bytes: int | None = None, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    """Like `subprocess.run([sys.executable, "-m", "orchestrator", *args], capture_output=True, text=True)`:
    `env` replaces the environment (default: this process's), `cwd` the working directory (default: this
    process's). A call past `timeout` seconds raises subprocess.TimeoutExpired."""
    server = _started_server()
    with tempfile.TemporaryDirectory(prefix="smtrain-forked-") as folder:
        stdout, stderr = Path(folder, "stdout"), Path(folder, "stderr")
        call = {"args": list(args), "cwd": str(cwd or os.getcwd()), "env": dict(os.environ if env is None else env),
                "memory_limit_bytes": memory_limit_bytes, "timeout": timeout,
                "stdout": str(stdout), "stderr": str(stderr)}
        server.stdin.write(json.dumps(call).encode() + b"\n")
        server.stdin.flush()
        answer = server.stdout.readline()
        if not answer:
            raise RuntimeError("the forked smtrain server has died")
        returncode = json.loads(answer)["returncode"]
        command = [sys.executable, "-m", "orchestrator", *args]
        if returncode == -14:  # SIGALRM: the child's time limit
            raise subprocess.TimeoutExpired(command, timeout, stdout.read_bytes(), stderr.read_bytes())
        return subprocess.CompletedProcess(command, returncode, stdout.read_text(errors="replace"),
                                           stderr.read_text(errors="replace"))


def _started_server() -> subprocess.Popen[bytes]:
    global _server
    if _server is None or _server.poll() is not None:
        _server = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        atexit.register(_stop, _server)
    return _server


def _stop(server: subprocess.Popen[bytes]) -> None:
    server.stdin.close()
    server.wait(timeout=60)


def _serve() -> dict | None:
    """Answers calls until stdin closes (returns None); in a forked child, returns the child's call."""
    import importlib

    for module in PRELOADED:
        importlib.import_module(module)
    requests, answers = sys.stdin.buffer, os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    for line in requests:
        call = json.loads(line)
        pid = os.fork()
        if pid == 0:
            answers.close()
            return call
        _, status = os.waitpid(pid, 0)
        answers.write(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}).encode() + b"\n")
        answers.flush()
    return None


def _become(call: dict) -> None:
    """The forked child takes the call's process state, as `subprocess.run` would have given a new process."""
    import resource
    import signal

    os.chdir(call["cwd"])
    os.environ.clear()
    os.environ.update(call["env"])
    if call["memory_limit_bytes"]:
        resource.setrlimit(resource.RLIMIT_AS, (call["memory_limit_bytes"], call["memory_limit_bytes"]))
    for fd, path, flags in ((0, os.devnull, os.O_RDONLY), (1, call["stdout"], os.O_WRONLY | os.O_CREAT),
                            (2, call["stderr"], os.O_WRONLY | os.O_CREAT)):
        opened = os.open(path, flags, 0o600)
        os.dup2(opened, fd)
        os.close(opened)
    signal.alarm(call["timeout"])
    sys.argv = [sys.executable, *call["args"]]


if __name__ == "__main__":
    child_call = _serve()
    if child_call is not None:
        import runpy

        _become(child_call)
        del child_call
        runpy.run_module("orchestrator", run_name="__main__", alter_sys=True)
