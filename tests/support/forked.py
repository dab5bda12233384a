"""A Python program in a process of its own, forked from a warm interpreter: what a test of a command's behaviour
needs (its exit code, stdout and stderr; a crash or a runaway allocation kept out of pytest) without paying, call
after call, for the imports a fresh interpreter makes before the program reads a line. `smtrain validate` costs
about 0.5 CPU-s started fresh and 0.03 forked: pydantic, click and the spec models are imported once.

A server (this file run as a script) is started per pytest process and per set of modules to preload, on first
use. It imports those modules and runs nothing else, so no cache holds a value from another test. For each call it
forks; the child takes the call's working directory, environment, memory cap and time limit, points stdin at
/dev/null and stdout and stderr at files, and runs the program at the top level of the interpreter (as `python -m
MODULE` or `python FILE` would), so the exit code, an unhandled exception's traceback and the atexit handlers are
those of a fresh process. What a fresh process imports (tests/cli/test_cli.py) is still tested in one.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

# The CLI and what validate, plan and local import before their work.
SMTRAIN_PRELOAD = ("orchestrator.cli.main", "orchestrator.cli.render", "orchestrator.specs.loader",
                   "orchestrator.planning.request", "orchestrator.api")

_servers: dict[tuple[str, ...], subprocess.Popen[bytes]] = {}


def smtrain(*args: str, cwd: Path | str | None = None, env: dict[str, str] | None = None,
            memory_limit_bytes: int | None = None, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    """Like `subprocess.run([sys.executable, "-m", "orchestrator", *args], capture_output=True, text=True)`."""
    return run_forked("orchestrator", list(args), SMTRAIN_PRELOAD, cwd=cwd, env=env,
                      memory_limit_bytes=memory_limit_bytes, timeout=timeout)


def run_forked(program: str, args: list[str], preload: tuple[str, ...], *, cwd: Path | str | None = None,
               env: dict[str, str] | None = None, memory_limit_bytes: int | None = None,
               timeout: int = 600) -> subprocess.CompletedProcess[str]:
    """Like `subprocess.run([sys.executable, PROGRAM, *args], capture_output=True, text=True)`, where `program` is
    a module name (run as `-m`) or the path of a .py file, and `preload` names modules or .py files to import in
    the warm interpreter. `env` replaces the environment (default: this process's), `cwd` the working directory
    (default: this process's). A call past `timeout` seconds raises subprocess.TimeoutExpired."""
    server = _started_server(preload)
    command = [sys.executable, *([program] if program.endswith(".py") else ["-m", program]), *args]
    with tempfile.TemporaryDirectory(prefix="forked-") as folder:
        stdout, stderr = Path(folder, "stdout"), Path(folder, "stderr")
        call = {"program": program, "args": args, "cwd": str(cwd or os.getcwd()),
                "env": dict(os.environ if env is None else env), "memory_limit_bytes": memory_limit_bytes,
                "timeout": timeout, "stdout": str(stdout), "stderr": str(stderr)}
        server.stdin.write(json.dumps(call).encode() + b"\n")
        server.stdin.flush()
        answer = server.stdout.readline()
        if not answer:
            raise RuntimeError(f"the forked-process server for {preload} has died")
        returncode = json.loads(answer)["returncode"]
        if returncode == -signal.SIGALRM:  # the child's time limit
            raise subprocess.TimeoutExpired(command, timeout, stdout.read_bytes(), stderr.read_bytes())
        return subprocess.CompletedProcess(command, returncode, stdout.read_text(errors="replace"),
                                           stderr.read_text(errors="replace"))


def _started_server(preload: tuple[str, ...]) -> subprocess.Popen[bytes]:
    server = _servers.get(preload)
    if server is None or server.poll() is not None:
        server = _servers[preload] = subprocess.Popen([sys.executable, __file__, *preload], stdin=subprocess.PIPE,
                                                      stdout=subprocess.PIPE)
        atexit.register(_stop, server)
    return server


def _stop(server: subprocess.Popen[bytes]) -> None:
    server.stdin.close()
    server.wait(timeout=60)


def _serve(preload: list[str]) -> dict | None:
    """Answers calls until stdin closes (returns None); in a forked child, returns the child's call."""
    import importlib
    import runpy

    for name in preload:
        if name.endswith(".py"):
            runpy.run_path(name, run_name=f"preloaded:{name}")
        else:
            importlib.import_module(name)
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
    sys.argv = [call["program"], *call["args"]]


if __name__ == "__main__":
    child_call = _serve(sys.argv[1:])
    if child_call is not None:
        import runpy

        _become(child_call)
        if child_call["program"].endswith(".py"):  # sys.path[0] as a fresh interpreter sets it
            sys.path[0] = os.path.dirname(os.path.abspath(child_call["program"]))
            runpy.run_path(child_call["program"], run_name="__main__")
        else:
            sys.path[0] = os.getcwd()
            runpy.run_module(child_call["program"], run_name="__main__", alter_sys=True)
