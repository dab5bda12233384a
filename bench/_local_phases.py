"""`smtrain local ARGS` with a clock on each of its phases; writes {phase: seconds} as JSON to $PHASES_OUT.

bench_local.py runs it beside the plain command: the phases say where smtrain's own time goes (what the same
processes started by hand do not pay). Each phase's time is its own, nested phases subtracted (the interpreter
probe runs inside preparing and launching). "start-up" runs from this process's first line to planning: Python,
the imports, the CLI and loading the spec.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import sys
import time

STARTED = time.monotonic()

from orchestrator.cli.main import main  # noqa: E402  (the clock starts before the imports it measures)
from orchestrator.emulator import local_run  # noqa: E402
from orchestrator.emulator.launching import launch  # noqa: E402
from orchestrator.emulator.preparing import layout, prepared_run  # noqa: E402
from orchestrator.emulator.supervising.supervisor import Supervisor  # noqa: E402

PHASES = {
    "planning": [(local_run, "local_plan")],
    "environment probes": [(local_run, "local_gpu_count"), (prepared_run, "interpreter_versions"),
                           (launch, "interpreter_versions")],
    "preparing hosts": [(local_run, "prepare_run")],
    "installing": [(prepared_run.PreparedRun, "install_user_code")],
    "launching": [(prepared_run.PreparedRun, "host_processes"), (prepared_run.PreparedRun, "launches")],
    "the job's processes": [(Supervisor, "run")],
    "packaging": [(local_run, "_finish"), (layout, "upload_checkpoints"), (layout, "keep_tensorboard")],
}
spent: dict[str, float] = dict.fromkeys(["start-up", *PHASES, "the rest (notices, output, exit)"], 0.0)
first_phase_at: list[float] = []
stack: list[list[float]] = []  # [started, time of nested phases] per open phase


def _timed(phase: str, function):
    @functools.wraps(function)
    def timed(*args, **kwargs):
        if not first_phase_at:
            first_phase_at.append(time.monotonic())
        stack.append([time.monotonic(), 0.0])
        try:
            return function(*args, **kwargs)
        finally:
            began, nested = stack.pop()
            took = time.monotonic() - began
            spent[phase] += took - nested
            if stack:
                stack[-1][1] += took

    return timed


def _write() -> None:
    total = time.monotonic() - STARTED
    spent["start-up"] = (first_phase_at[0] if first_phase_at else time.monotonic()) - STARTED
    spent["the rest (notices, output, exit)"] = total - sum(value for key, value in spent.items()
                                                            if key != "the rest (notices, output, exit)")
    with open(os.environ["PHASES_OUT"], "w") as out:
        json.dump({**spent, "total": total}, out)


for name, places in PHASES.items():
    for owner, attribute in places:
        setattr(owner, attribute, _timed(name, getattr(owner, attribute)))
atexit.register(_write)
sys.argv = ["smtrain", *sys.argv[1:]]
main()
