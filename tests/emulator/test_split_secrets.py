"""Under Open MPI 4's `mpirun --tag-output`, which tags each piece of a rank's output, not each line: a secret a rank
wrote across pieces is masked in the host's log file too, which otherwise keeps mpirun's pieces as printed, and
reaches the file within a bounded time; the console of `smtrain local` shows each rank's line whole, while metrics
read the lines as logged (as SageMaker applies metric definitions to its log).

The lines are a real 3-host run's under Open MPI 4.1.4 (open_mpi4_lines), as in tests/observing/test_rank_lines.py."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from open_mpi4_lines import DOTS, RAISED, STEP_AND_BAR, T0, T1, T2

from orchestrator.emulator.launching.launch import Launch
from orchestrator.emulator.local_run import Options, QuietObserver, run_local
from orchestrator.emulator.supervising import split_secrets, supervisor
from orchestrator.emulator.supervising.split_secrets import HOLD_SECONDS, SplitSecrets
from orchestrator.emulator.supervising.supervisor import Limits, Supervisor
from orchestrator.observing.rank_lines import rejoined
from orchestrator.redact import mask_text
from orchestrator.specs.loader import load

TOKEN = "hf_Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr"
"""A Hugging Face token by its form (`hf_` and 34 letters): neither `hf_Ab12Cd34` nor the rest alone is one."""
SPLIT_TOKEN = [f"{T0}<stdout>:token {TOKEN[:11]}{T1}<stdout>:step=1", f"{T0}<stdout>:{TOKEN[11:]}"]
"""Rank 0 printed `token ` and the token in two writes, rank 1 a line between them."""


def _written(lines: list[str]) -> str:
    """What the log gets for `lines`, one write each, all at once, then the end of the output."""
    secrets = SplitSecrets(mask_text)
    return "".join(secrets.add([line], "\n", 0.0) for line in lines) + secrets.end()


def test_a_secret_a_rank_wrote_across_pieces_is_masked_in_the_pieces_the_log_keeps():
    written = _written(SPLIT_TOKEN)

    assert written == f"{T0}<stdout>:token ****{T1}<stdout>:step=1\n{T0}<stdout>:\n"
    assert rejoined(written.splitlines()) == [f"{T1}<stdout>:step=1", f"{T0}<stdout>:token ****"]


def test_the_log_keeps_mpiruns_pieces_as_printed_when_they_hold_no_secret():
    assert _written([*STEP_AND_BAR, *RAISED]) == "\n".join([*STEP_AND_BAR, *RAISED]) + "\n"


def test_a_secret_in_a_line_its_rank_never_ended_is_masked_when_the_output_ends():
    secrets = SplitSecrets(mask_text)

    held = secrets.add([f"{T0}<stdout>:token {TOKEN[:11]}{T1}<stdout>:step=1"], "\n", 0.0)
    held += secrets.add([f"{T0}<stdout>:{TOKEN[11:]}{T2}<stdout>:step=2"], "\n", 0.1)

    assert held == ""
    assert secrets.end() == f"{T0}<stdout>:token ****{T1}<stdout>:step=1\n{T0}<stdout>:{T2}<stdout>:step=2\n"


def test_a_ranks_unended_piece_reaches_the_log_after_a_bounded_time_and_later_lines_keep_their_order():
    """A rank that prints `loss=` and then computes for minutes holds back neither its piece nor others' lines."""
    secrets = SplitSecrets(mask_text)

    assert secrets.add([f"{T0}<stdout>:loss={T1}<stdout>:step=1"], "\n", 0.0) == ""
    assert secrets.add([f"{T2}<stdout>:step=2"], "\n", 0.5) == ""
    assert secrets.wait(0.5) == HOLD_SECONDS - 0.5
    assert secrets.due(HOLD_SECONDS) == f"{T0}<stdout>:loss={T1}<stdout>:step=1\n{T2}<stdout>:step=2\n"
    assert secrets.wait(HOLD_SECONDS) is None


SPLIT_TOKEN_SCRIPT = f"""\
import sys, time
for line in {SPLIT_TOKEN!r}:
    sys.stdout.write(line + "\\n")
    sys.stdout.flush()
    time.sleep(0.2)
"""


def test_a_hosts_log_file_holds_no_secret_a_rank_wrote_across_pieces(tmp_path):
    (tmp_path / "pieces.py").write_text(SPLIT_TOKEN_SCRIPT)
    logs = tmp_path / "logs"
    logs.mkdir()
    command = f"{sys.executable} pieces.py"

    outcome = Supervisor([Launch("algo-1", command, dict(os.environ), tmp_path, command)], "run-id", logs,
                         lambda host, text: None, mask=mask_text).run(
        Limits(timeout_seconds=60, interrupt_after=None, stop_grace_seconds=5))

    assert outcome.status == "completed"
    log = (logs / "algo-1.log").read_text()
    assert log.endswith(f"{T0}<stdout>:token ****{T1}<stdout>:step=1\n{T0}<stdout>:\n"), log
    assert TOKEN[:11] not in log and TOKEN[11:] not in log


UNENDED_SCRIPT = f"""\
import os, sys, time
sys.stdout.write({f"{T0}<stdout>:loss={T1}<stdout>:step=1"!r} + "\\n")
sys.stdout.flush()
deadline = time.monotonic() + 60
while not os.path.exists("seen") and time.monotonic() < deadline:
    time.sleep(0.1)
if not os.path.exists("seen"):
    sys.exit("the log never showed step=1 while this rank waited")
sys.stdout.write({f"{T0}<stdout>:0.5"!r} + "\\n")
"""
"""Rank 0 prints `loss=`, rank 1 a line, then nothing comes until the log shows them; after 60 s without (only a hang
reaches it), the rank fails: the piece was held until the output ended."""


def test_a_ranks_unended_piece_reaches_the_log_file_while_the_run_goes_on(tmp_path, monkeypatch):
    """The supervisor's reader wakes at the bound with nothing to read and writes what is due. The bound is set to
    0.2 s here, and the test looks at the log every 0.1 s: HOLD_SECONDS' 2 s and WATCH_SECONDS' 1 s would only be
    waited out. Both are read where the product reads them, at each wait."""
    monkeypatch.setattr(split_secrets, "HOLD_SECONDS", 0.2)
    monkeypatch.setattr(supervisor, "WATCH_SECONDS", 0.1)
    (tmp_path / "unended.py").write_text(UNENDED_SCRIPT)
    logs = tmp_path / "logs"
    logs.mkdir()
    command = f"{sys.executable} unended.py"

    def look(processes: object) -> None:
        if "step=1" in (logs / "algo-1.log").read_text():
            (tmp_path / "seen").touch()

    outcome = Supervisor([Launch("algo-1", command, dict(os.environ), tmp_path, command)], "run-id", logs,
                         lambda host, text: None, mask=mask_text).run(
        Limits(timeout_seconds=120, interrupt_after=None, stop_grace_seconds=5), watch=look)

    assert outcome.status == "completed" and (tmp_path / "seen").exists()
    assert (logs / "algo-1.log").read_text().endswith(
        f"{T0}<stdout>:loss={T1}<stdout>:step=1\n{T0}<stdout>:0.5\n")


class _Console(QuietObserver):
    def __init__(self) -> None:
        self.lines: list[str] = []

    def line(self, host: str, text: str) -> None:
        self.lines.append(text)


def test_the_console_of_a_local_run_shows_each_ranks_line_whole_and_metrics_read_the_lines_as_logged(
        make_spec, tmp_path):
    """A host's output as Open MPI 4's mpirun prints it: the console shows it as `smtrain logs` does; a metric a
    rank printed in pieces is missed, as SageMaker misses it."""
    printed = [*STEP_AND_BAR, *SPLIT_TOKEN, *RAISED]
    spec = make_spec("mpirun_output.py", count=1, metrics=[{"name": "loss", "regex": "loss=([0-9.]+)"}])
    (tmp_path / "src" / "mpirun_output.py").write_text(f"print({chr(10).join(printed)!r})\n")
    console = _Console()

    result = run_local(load(spec), Options(run_dir=tmp_path / "run"), observer=console)

    assert result.status == "Completed", result.failure_reason
    expected = [mask_text(line) for line in rejoined(printed) if "File" not in line]
    assert [line for line in console.lines if "File" not in line][-len(expected):] == expected
    assert f"{T2}<stdout>:step=0 loss=2.00" in console.lines and console.lines[-1] == DOTS
    assert f"{T0}<stdout>:token ****" in console.lines and not any(TOKEN[11:] in line for line in console.lines)
    assert "loss" not in result.final_metrics
    log = Path(result.run_dir / "logs" / "algo-1.log").read_text()
    assert "\n".join(STEP_AND_BAR) in log
