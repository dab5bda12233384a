"""A notebook user's local runs in a real Jupyter kernel (this interpreter, this checkout): the kernel's interrupt
during `job.wait()` and during `orchestrator.run_local`, and the same cell run twice. One kernel for the module;
each test adds its cells to the same notebook, as a user goes on in one."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

import nbformat
import pytest
import yaml
from jupyter_core.utils import run_sync
from nbclient import NotebookClient

from orchestrator.emulator.supervising.supervisor import INTERRUPT_GRACE_SECONDS

pytestmark = pytest.mark.slow  # a Jupyter kernel and local runs of two hosts

REPO = Path(__file__).resolve().parents[2]
KERNEL = "smtrain-interrupts"
TRAIN = """\
import os, time
steps = int(os.environ["SM_HP_STEPS"])
for step in range(1, steps + 1):
    print(f"epoch=1 step={step}/{steps} train_loss={1.0 / step:.4f}", flush=True)
    time.sleep(0.1)
"""

CHECKPOINTING = """\
import os, signal, sys, time
def save(signum, frame):  # what a spot interruption, StopTrainingJob or Ctrl-C gives a rank time for
    time.sleep(1)  # a checkpoint takes a moment to write
    with open(os.path.join(os.environ["SM_MODEL_DIR"], "checkpoint.txt"), "w") as out:
        out.write(f"saved at step {step}")
    sys.exit(0)
def ignore(signum, frame):
    print("ignoring SIGTERM", flush=True)
signal.signal(signal.SIGTERM, save if os.environ["SM_HP_ON_SIGTERM"] == "save" else ignore)
for step in range(1, 601):
    print(f"epoch=1 step={step}/600 train_loss={1.0 / step:.4f}", flush=True)
    time.sleep(0.1)
"""


class Notebook:
    """One kernel's notebook: `run(source)` adds a cell, executes it and returns it with its outputs."""

    def __init__(self, client: NotebookClient, folder: Path) -> None:
        self.client = client
        self.folder = folder

    def run(self, source: str) -> nbformat.NotebookNode:
        cell = nbformat.v4.new_code_cell(source)
        self.client.nb.cells.append(cell)
        self.client.execute_cell(cell, len(self.client.nb.cells) - 1)
        return cell

    def interrupt_once(self, log: Path, line: str, after_seconds: float = 0.0) -> threading.Thread:
        """Jupyter's interrupt (SIGINT to the kernel's process group) once `log` holds `line`; the thread's
        `sent_at` says when (time.monotonic())."""
        def interrupt() -> None:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and not (log.is_file() and line in log.read_text()):
                time.sleep(0.1)
            time.sleep(after_seconds)
            watcher.sent_at = time.monotonic()
            run_sync(self.client.km.interrupt_kernel)()

        watcher = threading.Thread(target=interrupt, daemon=True)
        watcher.start()
        return watcher


@pytest.fixture(scope="module")
def notebook(tmp_path_factory):
    folder = tmp_path_factory.mktemp("notebook")
    (folder / "src").mkdir()
    (folder / "src" / "train.py").write_text(TRAIN)
    (folder / "src" / "checkpointing.py").write_text(CHECKPOINTING)
    for name, steps in (("long", 600), ("short", 3)):
        (folder / f"{name}.yaml").write_text(yaml.safe_dump({
            "name": name, "entry_point": "train.py", "source_dir": "src", "framework_version": "2.10.0",
            "instance": {"type": "ml.c5.2xlarge", "count": 2}, "hyperparameters": {"steps": steps}}))
    for on_sigterm in ("save", "ignore"):
        (folder / f"{on_sigterm}.yaml").write_text(yaml.safe_dump({
            "name": on_sigterm, "entry_point": "checkpointing.py", "source_dir": "src", "framework_version": "2.10.0",
            "instance": {"type": "ml.c5.2xlarge", "count": 1}, "hyperparameters": {"on_sigterm": on_sigterm}}))
    spec_dir = folder / "jupyter" / "kernels" / KERNEL
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": KERNEL, "language": "python"}))
    with pytest.MonkeyPatch.context() as patch:  # what the kernel inherits: this checkout, a home of its own
        patch.setenv("JUPYTER_PATH", str(folder / "jupyter"))
        patch.setenv("JUPYTER_RUNTIME_DIR", str(folder / "runtime"))
        patch.setenv("HOME", str(folder))
        patch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
        client = NotebookClient(nbformat.v4.new_notebook(), kernel_name=KERNEL, timeout=300, allow_errors=True,
                                resources={"metadata": {"path": str(folder)}})
        with client.setup_kernel():
            kept = Notebook(client, folder)
            [imported] = kept.run("import orchestrator\nprint(orchestrator.__file__)").outputs
            assert imported["text"].strip() == str(REPO / "orchestrator" / "__init__.py")
            yield kept


def _errors(cell) -> list[nbformat.NotebookNode]:
    return [output for output in cell.outputs if output.output_type == "error"]


def _stream(cell, name: str) -> str:
    return "".join(output.text for output in cell.outputs if output.output_type == "stream" and output.name == name)


def test_an_interrupted_wait_says_in_one_line_that_the_job_still_runs_and_the_next_cells_stop_it_and_run_anew(
        notebook):
    run_dir = notebook.folder / "runs" / "waited"
    started = notebook.run(f'job = orchestrator.run("long.yaml", backend="local", run_dir="{run_dir}")\njob.name')
    name = started.outputs[0]["data"]["text/plain"].strip("'")
    notebook.interrupt_once(run_dir / "logs" / "algo-1.log", "step=3/", after_seconds=1.0)

    waited = notebook.run("job.wait()")

    [error] = _errors(waited)
    # The line, not a traceback through smtrain's frames; and said once (not on stderr as well).
    assert error["traceback"] == [f"KeyboardInterrupt: interrupted the wait; job {name} still runs (Training): "
                                  "job.stop() stops it"]
    assert _stream(waited, "stderr") == ""
    stopped = notebook.run("print(job.status().status, job.stop())\nprint(job.wait(poll_seconds=0.2).status)")
    assert _stream(stopped, "stdout") == "InProgress True\nStopped\n"
    again = notebook.run('print(orchestrator.run("short.yaml", backend="local").wait(poll_seconds=0.2).status)')
    assert _stream(again, "stdout") == "Completed\n"


def test_an_interrupted_run_local_says_in_one_line_that_nothing_is_left_running_and_where_the_run_is(notebook):
    run_dir = notebook.folder / "runs" / "blocking"
    notebook.interrupt_once(run_dir / "logs" / "algo-1.log", "step=3/")

    interrupted = notebook.run(
        "from pathlib import Path\nfrom orchestrator.emulator.run_options import Options\n"
        "from orchestrator.specs.loader import load\n"
        f'orchestrator.run_local(load("long.yaml"), Options(run_dir=Path("{run_dir}")))')

    [error] = _errors(interrupted)
    [line] = error["traceback"]
    assert line.startswith("KeyboardInterrupt: interrupted (SIGINT): run long-")
    assert line.endswith(f" ended Interrupted, and nothing it started is left running; its logs and checkpoints "
                         f"stay in {run_dir}")
    left = notebook.run("import psutil\nprint(psutil.Process().children(recursive=True))")
    assert _stream(left, "stdout") == "[]\n"
    assert json.loads((run_dir / "result.json").read_text())["status"] == "Interrupted"


def test_the_same_cell_run_again_while_its_run_goes_on_is_refused_naming_run_dir_as_python_takes_it(
        notebook):
    run_dir = notebook.folder / "runs" / "mine"
    cell = f'job = orchestrator.run("long.yaml", backend="local", run_dir="{run_dir}")'
    notebook.run(cell)

    refused = notebook.run(cell)

    [error] = _errors(refused)
    assert error["traceback"] == [  # Python's words, not `smtrain local`'s flag (--run-dir)
        f"SpecError: the run directory {run_dir} is in use by a run still going in this process",
        "  To fix: wait for that run to end (job.wait()) or stop it (job.stop()), or pass another run_dir="]
    stopped = notebook.run("job.stop()\nprint(job.wait(poll_seconds=0.2).status)")
    assert _stream(stopped, "stdout") == "Stopped\n"
    notebook.run(cell)  # once the earlier run has ended, the cell runs again into the same directory
    ended = notebook.run("job.stop()\nprint(job.wait(poll_seconds=0.2).status)")
    assert _stream(ended, "stdout") == "Stopped\n"


def test_an_interrupted_run_local_gives_the_ranks_their_grace_to_checkpoint_as_smtrain_locals_ctrl_c_does(notebook):
    run_dir = notebook.folder / "runs" / "saving"
    notebook.interrupt_once(run_dir / "logs" / "algo-1.log", "step=3/")

    interrupted = notebook.run(f'orchestrator.run_local("save.yaml", run_dir="{run_dir}")')

    [error] = _errors(interrupted)
    assert error["traceback"][0].startswith("KeyboardInterrupt: interrupted (SIGINT): run save-")
    # The rank's SIGTERM handler ran to its end (before: SIGKILL at once, and no checkpoint).
    assert (run_dir / "algo-1" / "model" / "checkpoint.txt").read_text().startswith("saved at step ")
    result = json.loads((run_dir / "result.json").read_text())
    assert (result["status"], result["failure_reason"].split(";")[0]) == (
        "Interrupted", "interrupted (SIGINT forwarded to every training process as SIGTERM)")
    left = notebook.run("import psutil\nprint(psutil.Process().children(recursive=True))")
    assert _stream(left, "stdout") == "[]\n"


def test_a_second_interrupt_during_the_grace_kills_the_ranks_at_once(notebook):
    run_dir = notebook.folder / "runs" / "ignoring"
    log = run_dir / "logs" / "algo-1.log"
    notebook.interrupt_once(log, "step=3/")
    second = notebook.interrupt_once(log, "ignoring SIGTERM")  # the first interrupt reached the rank, alive still

    interrupted = notebook.run(f'orchestrator.run_local("ignore.yaml", run_dir="{run_dir}")')
    ended = time.monotonic()
    second.join()

    assert "ignoring SIGTERM" in log.read_text()  # the first interrupt gave the rank its grace
    assert ended - second.sent_at < INTERRUPT_GRACE_SECONDS  # the second did not wait it out
    [error] = _errors(interrupted)
    assert error["traceback"][0].startswith("KeyboardInterrupt: interrupted (SIGINT): run ignore-")
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "Interrupted"
    left = notebook.run("import psutil\nprint(psutil.Process().children(recursive=True))")
    assert _stream(left, "stdout") == "[]\n"
