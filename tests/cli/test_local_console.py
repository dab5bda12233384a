"""What `smtrain local` draws: a progress bar with steps/s, ETA and the loss instead of log lines (unless
verbose), the loss curve and, for a hung run, the stacks at the end."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner

import orchestrator.cli.local as local_command
from orchestrator.cli.main import main
from orchestrator.cli.render import LocalConsole
from orchestrator.contract import DEFAULT_METRIC_DEFINITIONS
from orchestrator.emulator import local_run
from orchestrator.emulator.reporting.smoke import SmokeReport
from orchestrator.observing.metric_series import METRICS_FILE, MetricRecorder

EXAMPLE = Path(__file__).resolve().parents[2] / "job_specs" / "mlp-gloo-none-2x-c5.2xlarge.yaml"


@dataclass
class Finished:
    """The fields of local_run.LocalRun that the console reads."""

    run_dir: Path
    status: str = "Completed"
    seconds: float = 12.0
    world_size: int = 2
    attempts: int = 1
    failure_reason: str | None = None
    final_metrics: dict[str, float] = field(default_factory=dict)
    model_artifact: Path | None = None
    output_artifact: Path | None = None


def test_progress_bar_shows_rate_eta_and_loss_and_hides_log_lines(capsys):
    with LocalConsole() as console:
        console.started("job-1", Path("runs/job-1"), 2, 2)
        console.line("algo-1", "a log line nobody asked to see")
        before = time.monotonic()
        console.progress(10, 100, {"train:loss": 0.5, "train:epoch": 1.0})
        time.sleep(0.2)
        console.progress(20, 100, {"train:loss": 0.25, "train:epoch": 1.0})
        between = time.monotonic() - before  # at least the 0.2 s, more on a loaded machine
        task = console._progress.tasks[0]
        fields = task.fields

    assert (task.completed, task.total) == (20, 100)
    # 10 steps in the time between the two progress calls (3 significant digits shown)
    assert fields["rate"].endswith(" steps/s") and 0.99 * 10 / between <= float(fields["rate"].split()[0]) <= 50.1
    assert fields["eta"].startswith("ETA ") and fields["eta"].endswith(" s")
    assert fields["loss"] == "train:loss=0.25"
    assert "a log line nobody asked to see" not in capsys.readouterr().err


def test_verbose_prints_the_log_lines_prefixed_with_the_host(capsys):
    with LocalConsole(verbose=True) as console:
        console.started("job-1", Path("runs/job-1"), 2, 2)
        console.line("algo-2", "hello [not markup]")

    assert "[algo-2] hello [not markup]" in capsys.readouterr().err


def test_result_draws_the_loss_curve_from_the_saved_series(tmp_path, capsys):
    recorder = MetricRecorder(DEFAULT_METRIC_DEFINITIONS, tmp_path / METRICS_FILE)
    for step, loss in enumerate([0.9, 0.6, 0.4, 0.3], start=1):
        recorder.feed("algo-1", f"epoch=1 step={step}/4 train_loss={loss} samples_per_sec=10.0",
                      datetime.now(timezone.utc))

    with LocalConsole(quiet=True) as console:
        console.notice("hidden by quiet")
        console.result(Finished(tmp_path, final_metrics=dict(recorder.latest)))

    shown = capsys.readouterr().err
    assert "Completed in 12.0 s, world size 2" in shown and "hidden by quiet" not in shown
    chart = shown.split("train:loss\n", 1)[1].splitlines()
    assert chart[0].lstrip().startswith("0.9 ┤") and chart[7].lstrip().startswith("0.3 ┤")
    assert chart[9].split() == ["1", "4", "step"]
    assert "final train:loss = 0.3" in shown and f"metrics: {tmp_path / METRICS_FILE}" in shown


def test_result_of_a_hung_run_prints_the_stacks(tmp_path, capsys):
    (tmp_path / "stacks.txt").write_text("Hung: no rank wrote a line\n\n--- rank 0 (algo-1), pid 7 ---\n"
                                         "    all_reduce (torch/distributed/distributed_c10d.py:3252)\n")

    with LocalConsole() as console:
        console.result(Finished(tmp_path, status="Hung", failure_reason="Hung: no rank wrote a line"))

    shown = capsys.readouterr().err
    assert "Hung in 12.0 s" in shown
    assert "all_reduce (torch/distributed/distributed_c10d.py:3252)" in shown
    assert "failure reason" not in shown  # the stacks say it, with more


def test_before_the_first_step_the_bar_says_so_not_step_0_of_none():
    with LocalConsole() as console:
        console.started("job-1", Path("runs/job-1"), 2, 2)
        column_text = console._progress.columns[2].render(console._progress.tasks[0]).plain

    assert column_text == "waiting for the first step"


def test_an_interrupted_run_says_how_to_resume_and_paths_stay_whole(tmp_path, capsys):
    deep = tmp_path / ("a-long-directory-name-" * 6) / "run"
    with LocalConsole(command=["job.yaml"]) as console:
        console.result(Finished(deep, status="Interrupted", failure_reason="interrupted (SIGINT forwarded to every "
                                "training process as SIGTERM); checkpoints are kept in " + str(deep),
                                model_artifact=deep / "model.tar.gz"))

    shown = capsys.readouterr().err
    assert "failure reason" not in shown
    assert "interrupted (SIGINT forwarded to every training process as SIGTERM); checkpoints" in shown
    assert "interrupted: interrupted" not in shown  # the reason says the word: no label repeats it
    assert f"resume from its checkpoints: smtrain local job.yaml --run-dir {deep}" in shown.splitlines()
    assert f"model:   {deep / 'model.tar.gz'}" in shown.splitlines()


def _interrupted_local(monkeypatch, run_dir: Path, *options: str):
    """`smtrain local EXAMPLE *options`, its run interrupted (exit 130) in `run_dir`."""

    @dataclass
    class Interrupted(Finished):
        status: str = "Interrupted"
        exit_code: int = 130
        smoke: None = None

    monkeypatch.setattr(local_run, "run_local", lambda *args, **kwargs: Interrupted(run_dir))
    monkeypatch.setattr(local_command, "interrupt_on_termination", lambda: {})
    return CliRunner().invoke(main, ["local", str(EXAMPLE), *options])


def test_the_resume_line_repeats_the_command_lines_settings(tmp_path, monkeypatch):
    """Resuming from a checkpoint needs the settings that wrote it: a resume line without the run's `--set`s had
    the shared entrypoint refuse its own checkpoint (CheckpointMismatch: batch_size=32, this run 64)."""
    run_dir = tmp_path / "run"
    result = _interrupted_local(monkeypatch, run_dir, "--set", "hyperparameters.batch-size=32", "--set",
                                "hyperparameters.note=two words", "--processes-per-host", "2")

    assert result.exit_code == 130, result.output
    assert (f"resume from its checkpoints: smtrain local {EXAMPLE} --set hyperparameters.batch-size=32 "
            f"--set 'hyperparameters.note=two words' --processes-per-host 2 --run-dir {run_dir}"
            in result.stderr.splitlines())


def test_the_resume_line_gives_the_region_as_the_option_typed(tmp_path, monkeypatch):
    """Before: `--set region="eu-west-1"`, an option the user never typed, in place of `--region eu-west-1`."""
    run_dir = tmp_path / "run"
    result = _interrupted_local(monkeypatch, run_dir, "--region", "eu-west-1")

    assert result.exit_code == 130, result.output
    assert (f"resume from its checkpoints: smtrain local {EXAMPLE} --region eu-west-1 --run-dir {run_dir}"
            in result.stderr.splitlines())


@pytest.mark.parametrize(("reported", "ending"), [
    (51, "step 51 reached (progress line), stopped once a line showed step 1 or past it (--smoke-steps 1), within"),
    (1, "step 1 reached (progress line), stopped once a line showed step 1 (--smoke-steps 1), within")])
def test_a_smoke_stopped_by_smoke_steps_says_the_step_the_script_showed_not_only_the_one_asked_for(
        tmp_path, monkeypatch, reported, ending):
    """A script logging every 50 steps first shows step 51: the summary said "stopped at step 1"."""
    smoke = SmokeReport(deadline_seconds=60, ranks_expected=2, ranks_started=2, missing=[], steps_reached=reported,
                        last_loss=None, killed_after_deadline=[], step_source="progress line", steps_wanted=1)

    @dataclass
    class Smoked(Finished):
        status: str = "Stopped"
        exit_code: int = 0
        smoke: SmokeReport | None = None

    monkeypatch.setattr(local_run, "run_local", lambda *args, **kwargs: Smoked(tmp_path / "run", smoke=smoke))
    monkeypatch.setattr(local_command, "interrupt_on_termination", lambda: {})
    result = CliRunner().invoke(main, ["local", str(EXAMPLE), "--smoke", "60", "--smoke-steps", "1"])

    assert result.exit_code == 0, result.output
    assert f"smoke passed: 2 of 2 ranks started, {ending} the deadline of 60 s" in result.stderr


def test_a_note_is_not_wrapped_inside_a_command_where_no_terminal_reads_it(capsys):
    command = ("pip install torch==2.3.0 --index-url https://download.pytorch.org/whl/cpu and a long tail of words "
               "that together run far past the 160 columns a CI log gets, as the torch version notice does")
    with LocalConsole() as console:
        console.notice(f"torch is 2.13.0 here and 2.3.0 in the image: to match it: {command}")

    assert f"to match it: {command}\n" in capsys.readouterr().err


def test_result_of_a_run_without_archives_names_none_and_prints_no_none_path(tmp_path, capsys):
    with LocalConsole() as console:
        console.result(Finished(tmp_path, status="Failed", failure_reason="every host: InstallRequirementsError: "
                                "pip could not install the source dir's requirements: ERROR: No matching "
                                "distribution found for numpy==0.0.1"))

    shown = capsys.readouterr().err.splitlines()
    assert f"logs:    {tmp_path / 'logs'}" in shown
    assert "archives: none written (no model.tar.gz, no output.tar.gz)" in shown
    assert not any("None" in line for line in shown)


def test_result_prints_only_the_archives_the_run_wrote(tmp_path, capsys):
    with LocalConsole() as console:
        console.result(Finished(tmp_path, model_artifact=tmp_path / "model.tar.gz"))

    shown = capsys.readouterr().err.splitlines()
    assert f"model:   {tmp_path / 'model.tar.gz'}" in shown
    assert not any(line.startswith(("output:", "archives:")) for line in shown)
