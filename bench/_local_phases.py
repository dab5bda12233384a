"""`smtrain local ARGS` with a clock on each of its phases; writes {phase: [wall seconds, CPU seconds]} as JSON to
$PHASES_OUT.

bench_local.py runs it beside the plain command: the phases say where smtrain's own time goes (what the same
processes started by hand do not pay). Each phase's time is its own, nested phases subtracted (the interpreter
probe runs inside preparing and launching). CPU time is this process's (all its threads: user + system), so
that of "the job's processes" is what supervising them costs smtrain (reading their output, watching the process
tree), not the job's own. "start-up" runs from this process's first line to planning: Python, the imports, the
CLI and loading the spec.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import sys
import time

STARTED = time.monotonic(), time.process_time()

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
spent: dict[str, list[float]] = {phase: [0.0, 0.0] for phase in ["start-up", *PHASES, REST]}
first_phase_at: list[tuple[float, float]] = []
stack: list[list[float]] = []  # [wall started, cpu started, nested wall, nested cpu] per open phase


def _clocks() -> tuple[float, float]:
    return time.monotonic(), time.process_time()


def _timed(phase: str, function):
    @functools.wraps(function)
    def timed(*args, **kwargs):
        if not first_phase_at:
            first_phase_at.append(_clocks())
        stack.append([*_clocks(), 0.0, 0.0])
        try:
            return function(*args, **kwargs)
        finally:
            wall_began, cpu_began, wall_nested, cpu_nested = stack.pop()
            wall, cpu = _clocks()
            took = (wall - wall_began, cpu - cpu_began)
            spent[phase][0] += took[0] - wall_nested
            spent[phase][1] += took[1] - cpu_nested
            if stack:
                stack[-1][2] += took[0]
                stack[-1][3] += took[1]

    return timed


def _write() -> None:
    now = _clocks()
    total = [now[0] - STARTED[0], now[1] - STARTED[1]]
    first = first_phase_at[0] if first_phase_at else now
    spent["start-up"] = [first[0] - STARTED[0], first[1] - STARTED[1]]
    for clock in (0, 1):
        spent[REST][clock] = total[clock] - sum(value[clock] for key, value in spent.items() if key != REST)
    with open(os.environ["PHASES_OUT"], "w") as out:
        json.dump({**spent, "total": total}, out)


for name, places in PHASES.items():
    for owner, attribute in places:
        setattr(owner, attribute, _timed(name, getattr(owner, attribute)))
atexit.register(_write)
sys.argv = ["smtrain", *sys.argv[1:]]
main()
