"""A local run's cause read from its hosts' logs however much they hold after the error that started the failure.

Before, the cause came from the last 2000 lines of each host that the supervisor keeps: a script that logged its
traceback and then printed thousands of lines while it wound down was `algo-1 (rank 0) exited with code 1` with one
of those lines as its `last line`, and rank 3's traceback in a 16-rank torchrun job, followed by 5,000 lines of
warnings, gave way to algo-2's rank 8 and its `remote process exited` (peer_lost)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from long_failures import HEADLINE, rank_3_fails_then

from orchestrator.cli.main import main
from orchestrator.emulator import local_run
from orchestrator.emulator.local_run import Options, run_local
from orchestrator.emulator.launching.toolkit_launchers import RunnerType
from orchestrator.emulator.supervising.supervisor import FAILURE_TAIL_LINES, Exit, Outcome
from orchestrator.observing import log_file_end
from orchestrator.observing.root_cause import SourcePaths
from orchestrator.specs.loader import load

NOISE_BEYOND_THE_KEPT_TAIL = 5000


def _cause_at_the_end_of(run_dir: Path, logs: dict[str, list[str]]):
    """What a 2-host torchrun run with these logs stores as its cause when it ends: the supervisor's tails are the
    last FAILURE_TAIL_LINES lines each host printed; logs/algo-N.log holds every line."""
    (run_dir / "logs").mkdir(parents=True)
    for host, lines in logs.items():
        (run_dir / "logs" / f"{host}.log").write_text("\n".join(lines) + "\n")
    hosts = [SimpleNamespace(name=host) for host in logs]
    prepared = SimpleNamespace(layout=SimpleNamespace(hosts=hosts, logs_dir=run_dir / "logs"), group_hosts=list(logs),
                               plan=SimpleNamespace(spec=SimpleNamespace(framework_version="2.3.0", image_uri=None)),
                               source_paths=SourcePaths())
    processes = [SimpleNamespace(toolkit=SimpleNamespace(runner=RunnerType.torch_distributed, processes_per_host=8))]
    outcome = Outcome("failed", [Exit(host, 1) for host in logs],
                      tails={host: lines[-FAILURE_TAIL_LINES:] for host, lines in logs.items()})
    return local_run.failure_cause(prepared, processes, outcome)


def test_rank_3s_error_is_the_cause_whatever_its_host_printed_after_it(tmp_path):
    alone = _cause_at_the_end_of(tmp_path / "alone", rank_3_fails_then(0))
    followed = _cause_at_the_end_of(tmp_path / "followed", rank_3_fails_then(NOISE_BEYOND_THE_KEPT_TAIL))

    assert followed.headline() == HEADLINE
    assert followed == alone


def test_a_search_stopped_by_its_bound_says_so_rather_than_naming_a_consequence_alone(tmp_path, monkeypatch):
    """Each host's log is read back at most CAUSE_MOST_BYTES from its end (32 MiB; 256 KiB here, which 20,000
    lines of warnings exceed)."""
    monkeypatch.setattr(log_file_end, "CAUSE_MOST_BYTES", 256 * 1024)
    cause = _cause_at_the_end_of(tmp_path / "far", rank_3_fails_then(20_000))

    assert cause.headline() != HEADLINE
    assert cause.detail[0].startswith("searched: the last 256 KiB of algo-1's log hold no error of a rank's own")
    assert "the failure may have started earlier" in cause.detail[0]


WINDS_DOWN = """\
import sys
import traceback

try:
    raise ValueError("shard 7 has 0 samples")
except ValueError:
    traceback.print_exc()
    for index in range({lines}):
        print(f"releasing pinned buffer {{index}}")
    sys.exit(1)
"""


@pytest.mark.slow
def test_status_of_a_run_that_printed_thousands_of_lines_after_its_traceback_names_the_error(make_spec, tmp_path,
                                                                                             monkeypatch):
    monkeypatch.chdir(tmp_path)  # the source dir is shown as src/
    causes = {}
    for lines in (0, NOISE_BEYOND_THE_KEPT_TAIL):
        spec = make_spec("winds_down.py", count=1)
        (tmp_path / "src" / "winds_down.py").write_text(WINDS_DOWN.format(lines=lines))
        run_dir = tmp_path / f"run-{lines}"
        assert run_local(load(spec), Options(run_dir=run_dir)).status == "Failed"
        shown = CliRunner().invoke(main, ["status", str(run_dir), "-o", "json"])
        causes[lines] = json.loads(shown.stdout)["failure_cause"]

    assert causes[NOISE_BEYOND_THE_KEPT_TAIL]["headline"] == ("algo-1 (rank 0) failed: ValueError: shard 7 has 0 "
                                                              "samples at src/winds_down.py:5")
    assert causes[NOISE_BEYOND_THE_KEPT_TAIL] == causes[0]
