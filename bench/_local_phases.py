"""`smtrain local ARGS` with a clock on each of its phases; writes {phase: [wall seconds, CPU seconds, children's
CPU seconds]} as JSON to $PHASES_OUT.

bench_local.py runs it beside the plain command: the phases say where smtrain's own time goes (what the same
processes started by hand do not pay). Each phase's time is its own, nested phases subtracted (the interpreter
probe runs inside preparing and launching). CPU time is this process's (all its threads: user + system), so
that of "the job's processes" is what supervising them costs smtrain (reading their output, watching the process
tree), not the job's own. "start-up" runs from this process's first line to planning: Python, the imports, the
CLI and loading the spec. The third clock is the CPU of the child processes that ended (and were waited for)
within the phase (getrusage RUSAGE_CHILDREN): the probes' processes, and in "the job's processes" each host's
hostfs.py, shell and ranks, of which HOLDERS is the hostfs.py processes' own (read from /proc while they wait for
the job: their namespace set-up, before the job starts; the reading thread's CPU is not counted in smtrain's).
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import resource
import sys
import threading
import time


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


STARTED = time.monotonic(), time.process_time(), _children_cpu()

from orchestrator.cli.main import main  # noqa: E402  (the clock starts before the imports it measures)
from orchestrator.emulator import local_run  # noqa: E402
from orchestrator.emulator.launching import launch  # noqa: E402
from orchestrator.emulator.preparing import layout, prepared_run  # noqa: E402
from orchestrator.emulator.supervising import status  # noqa: E402
from orchestrator.emulator.supervising.supervisor import Supervisor  # noqa: E402

PHASES = {
    "planning": [(local_run, "local_plan")],
    "environment probes": [(local_run, "local_gpu_count"), (prepared_run, "interpreter_versions"),
                           (launch, "interpreter_versions"), (prepared_run, "_require_module")],
    "image notices (script imports)": [(local_run, "image_notices")],
    "preparing hosts": [(local_run, "prepare_run")],
    "installing": [(prepared_run.PreparedRun, "with_user_code_installed")],
    "launching": [(prepared_run.PreparedRun, "host_processes"), (prepared_run.PreparedRun, "launches")],
    "the job's processes": [(Supervisor, "run")],
    "packaging: model and output tarballs": [(layout, "merge_artifacts")],
    "packaging: checkpoints, tensorboard": [(layout, "upload_checkpoints"), (layout, "keep_tensorboard")],
    "packaging: emptying each host's /tmp": [(layout, "clear_host_tmp")],
    "status and result files": [(status.StatusReport, "transition"), (status.StatusReport, "finish"),
                                (layout, "write_status_files"), (layout, "write_result")],
    "packaging: the rest of finishing": [(local_run, "_finish")],
}
REST = "the rest (notices, console, exit)"
HOLDERS = "of the job's: hostfs.py set-up (children)"
CLOCKS = 3
spent: dict[str, list[float]] = {phase: [0.0] * CLOCKS for phase in ["start-up", *PHASES, REST]}
first_phase_at: list[tuple[float, ...]] = []
stack: list[list[float]] = []  # [*clocks started, *nested clocks] per open phase
holders: dict[int, float] = {}  # hostfs.py process: its CPU seconds when last read
reader_cpu = [0.0]  # the /proc reading thread's own CPU, taken out of smtrain's


def _clocks() -> tuple[float, ...]:
    return time.monotonic(), time.process_time(), _children_cpu()


def _proc_stat(pid: str) -> list[str]:
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()


def _read_holders(done: threading.Event) -> None:
    """Every 0.5 s, the CPU (utime + stime) of each descendant hostfs.py process (the holders wait for the job
    after setting up its namespace, so what is read is their set-up's)."""
    ticks = os.sysconf("SC_CLK_TCK")
    while not done.wait(0.5):
        parents: dict[str, str] = {}
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                parents[pid] = _proc_stat(pid)[1]
            except (OSError, IndexError):
                continue
        mine, grew = {str(os.getpid())}, True
        while grew:
            grew = False
            for pid, parent in parents.items():
                if parent in mine and pid not in mine:
                    mine.add(pid)
                    grew = True
        for pid in mine - {str(os.getpid())}:
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                    if b"hostfs.py" not in cmdline.read():
                        continue
                fields = _proc_stat(pid)
            except (OSError, IndexError):
                continue
            holders[int(pid)] = (int(fields[11]) + int(fields[12])) / ticks
    reader_cpu[0] += time.thread_time()


def _reading_holders(function):
    @functools.wraps(function)
    def run(*args, **kwargs):
        done = threading.Event()
        reader = threading.Thread(target=_read_holders, args=(done,), daemon=True)
        reader.start()
        before = reader_cpu[0]
        try:
            return function(*args, **kwargs)
        finally:
            done.set()
            reader.join()
            stack[-1][CLOCKS + 1] += reader_cpu[0] - before  # as if nested: not the phase's own CPU

    return run


def _timed(phase: str, function):
    @functools.wraps(function)
    def timed(*args, **kwargs):
        if not first_phase_at:
            first_phase_at.append(_clocks())
        stack.append([*_clocks(), *[0.0] * CLOCKS])
        try:
            return function(*args, **kwargs)
        finally:
            opened = stack.pop()
            took = [now - began for now, began in zip(_clocks(), opened[:CLOCKS], strict=True)]
            for clock in range(CLOCKS):
                spent[phase][clock] += took[clock] - opened[CLOCKS + clock]
                if stack:
                    stack[-1][CLOCKS + clock] += took[clock]

    return timed


def _write() -> None:
    now = _clocks()
    total = [now[clock] - STARTED[clock] for clock in range(CLOCKS)]
    total[1] -= reader_cpu[0]
    first = first_phase_at[0] if first_phase_at else now
    spent["start-up"] = [first[clock] - STARTED[clock] for clock in range(CLOCKS)]
    for clock in range(CLOCKS):
        spent[REST][clock] = total[clock] - sum(value[clock] for key, value in spent.items() if key != REST)
    with open(os.environ["PHASES_OUT"], "w") as out:
        json.dump({**spent, HOLDERS: [0.0, 0.0, sum(holders.values())], "total": total}, out)


Supervisor.run = _reading_holders(Supervisor.run)  # inside the phase's clock: the reader's CPU is taken out of it
for name, places in PHASES.items():
    for owner, attribute in places:
        setattr(owner, attribute, _timed(name, getattr(owner, attribute)))
atexit.register(_write)
sys.argv = ["smtrain", *sys.argv[1:]]
main()
