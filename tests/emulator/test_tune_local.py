"""`smtrain tune local` on the example tuning spec: real emulated trials of the shared entry point (tiny epochs),
two at a time, the best trial reported being the one whose own log has the best final objective."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from tuning_specs import TINY_JOB

from orchestrator.cli.main import main
from orchestrator.contract import DEFAULT_METRIC_DEFINITIONS

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "job_specs" / "tuning" / "mlp-lr-search.yaml"
ONE_TRIAL = """job: job.yaml
objective: {metric: loss, type: Minimize}
strategy: Random
parameters:
  lr: {type: continuous, min: 0.001, max: 0.1}
max_jobs: 1
max_parallel_jobs: 1
"""
"""A search of one trial of tuning_specs.TINY_JOB, whose train.py each test writes."""
LR_IS_LOSS = "import sys\nprint(f'loss={sys.argv[sys.argv.index(\"--lr\") + 1]}')\n"
"""A train.py whose objective is its --lr: a search's objectives are the values it chose."""
GRID = """job: job.yaml
objective: {{metric: loss, type: Minimize}}
strategy: Grid
parameters:
  lr: {{type: categorical, values: [{values}]}}
max_parallel_jobs: 1
"""
"""A search of tuning_specs.TINY_JOB running the listed values in order, one at a time."""
LOSS = re.compile(next(item["Regex"] for item in DEFAULT_METRIC_DEFINITIONS if item["Name"] == "train:loss"))


def _final_loss_in_log(run_dir: Path) -> float | None:
    """The last train:loss the trial's own log holds, read with the job's metric definition."""
    values = [float(match.group(1)) for line in (run_dir / "logs" / "algo-1.log").read_text().splitlines()
              if (match := LOSS.search(line))]
    return values[-1] if values else None


def _most_at_once(trials: list[dict]) -> int:
    events = sorted([(trial["started"], 1) for trial in trials] + [(trial["ended"], -1) for trial in trials],
                    key=lambda event: (event[0], event[1]))
    running = most = 0
    for _, change in events:
        running += change
        most = max(most, running)
    return most


def test_tune_local_runs_four_trials_two_at_a_time_and_reports_the_best_of_their_logs(tmp_path, monkeypatch):
    """Two rounds of two: a trial starts as an earlier one ends, and the best is picked among more than one pair."""
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.chdir(tmp_path)

    # Bounded: 4 trials of 2 tiny epochs, each stopped at max_run_seconds, none started after --budget.
    result = CliRunner().invoke(main, [
        "tune", "local", str(EXAMPLE), "--max-jobs", "4", "--parallel", "2", "--budget", "900",
        "--set", "hyperparameters.epochs=2", "--set", "max_run_seconds=300",
        "--run-dir", str(tmp_path / "search"), "--plot", str(tmp_path / "search.png"), "-o", "json"])

    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    trials = document["trials"]
    assert len(trials) == 4 and document["parallel"] == 2
    assert _most_at_once(trials) == 2
    for trial in trials:
        run_dir = Path(trial["run_dir"])
        assert run_dir.parent == tmp_path / "search" and (run_dir / "request.json").is_file()
        hyperparameters = json.loads((run_dir / "algo-1" / "input" / "config" / "hyperparameters.json").read_text())
        assert json.loads(hyperparameters["lr"]) == trial["hyperparameters"]["lr"]
        assert json.loads(hyperparameters["optimizer"]) == trial["hyperparameters"]["optimizer"]
        assert hyperparameters["_tuning_objective_metric"] == '"train:loss"'
        assert trial["objective"] == _final_loss_in_log(run_dir)
    completed = [trial for trial in trials if trial["status"] == "Completed"]
    assert completed
    best_in_logs = min(completed, key=lambda trial: _final_loss_in_log(Path(trial["run_dir"])))
    assert document["best"]["name"] == best_in_logs["name"]
    assert trials[0]["name"] == best_in_logs["name"]  # the table is sorted by objective
    assert (tmp_path / "search" / "tuning.json").is_file() and (tmp_path / "search.png").stat().st_size > 0


def test_tune_local_grid_runs_every_combination_once(tmp_path):
    """Which combinations ran is the question, not what they train: each trial prints its --lr as its loss."""
    (tmp_path / "train.py").write_text(LR_IS_LOSS)
    (tmp_path / "job.yaml").write_text(TINY_JOB)
    search = tmp_path / "grid.yaml"
    search.write_text("""\
job: job.yaml
objective: {metric: loss, type: Minimize}
strategy: Grid
parameters:
  optimizer: {type: categorical, values: [sgd, adam]}
  lr: {type: categorical, values: [0.01, 0.1]}
max_parallel_jobs: 2
""")

    result = CliRunner().invoke(main, ["tune", "local", str(search), "--run-dir", str(tmp_path / "grid"),
                                       "-o", "json"])

    assert result.exit_code == 0, result.output
    tried = sorted((trial["hyperparameters"]["optimizer"], trial["hyperparameters"]["lr"])
                   for trial in json.loads(result.stdout)["trials"])
    assert tried == [("adam", "0.01"), ("adam", "0.1"), ("sgd", "0.01"), ("sgd", "0.1")]


def test_tune_local_budget_starts_no_trial_after_it_and_stops_the_running_ones(tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_REGION", "us-east-1")

    # Trials of 500 epochs would run for minutes; the budget of 1 s stops the two started at once.
    result = CliRunner().invoke(main, [
        "tune", "local", str(EXAMPLE), "--parallel", "2", "--budget", "1", "--set", "hyperparameters.epochs=500",
        "--run-dir", str(tmp_path / "search"), "-o", "json"])

    assert result.exit_code == 1, result.output  # no trial completed: no best
    document = json.loads(result.stdout)
    assert [trial["status"] for trial in document["trials"]] == ["Stopped", "Stopped"]
    assert document["best"] is None
    for trial in document["trials"]:
        assert json.loads((Path(trial["run_dir"]) / "result.json").read_text())["status"] == "Stopped"


def test_a_failed_trial_says_why_as_it_ends(tmp_path):
    (tmp_path / "train.py").write_text("raise ValueError('lr too small')\n")
    (tmp_path / "job.yaml").write_text(TINY_JOB)
    search = tmp_path / "search.yaml"
    search.write_text(ONE_TRIAL)

    result = CliRunner().invoke(main, ["tune", "local", str(search), "--run-dir", str(tmp_path / "search")])

    assert result.exit_code == 1, result.output
    ended = next(line for line in result.output.splitlines() if line.startswith("trial 1 failed"))
    assert " - algo-1 (rank 0) failed: ValueError: lr too small at " in ended and ended.endswith("train.py:1"), ended
    assert result.output.splitlines()[-1] == "no best trial: no trial completed (1 failed)"


def test_a_search_whose_first_five_trials_all_fail_fails_as_sagemakers_does(tmp_path):
    """A broken script ran every one of max_jobs trials and the search read Completed in `tune status`; SageMaker
    fails the tuning job after five attempts without a success, saying so."""
    (tmp_path / "train.py").write_text("raise SystemExit('no data in /opt/ml/input')\n")
    (tmp_path / "job.yaml").write_text(TINY_JOB)
    search = tmp_path / "search.yaml"
    search.write_text(ONE_TRIAL.replace("max_jobs: 1", "max_jobs: 7"))

    result = CliRunner().invoke(main, ["tune", "local", str(search), "--run-dir", str(tmp_path / "search")])
    status = CliRunner().invoke(main, ["tune", "status", f"local:{tmp_path / 'search'}"])

    assert result.exit_code == 1, result.output
    document = json.loads((tmp_path / "search" / "tuning.json").read_text())
    assert document["status"] == "Failed" and len(document["trials"]) == 5
    assert document["failure_reason"].startswith("No training job succeeded after 5 attempts")
    assert "failed: No training job succeeded after 5 attempts" in result.output
    assert "Failed (Random); trials: 0 completed, 0 in progress, 0 stopped, 5 failed of 7" in status.output
    assert "exited with code 1; last line: no data in /opt/ml/input" in status.output, status.output


def test_a_search_whose_objective_never_shows_says_so_and_where_to_look(tmp_path):
    (tmp_path / "train.py").write_text("print('accuracy=0.5')\n")  # completes, but prints no loss=
    (tmp_path / "job.yaml").write_text(TINY_JOB)
    search = tmp_path / "search.yaml"
    search.write_text(ONE_TRIAL)

    result = CliRunner().invoke(main, ["tune", "local", str(search), "--run-dir", str(tmp_path / "search")])

    assert result.exit_code == 1, result.output
    trial = json.loads((tmp_path / "search" / "tuning.json").read_text())["trials"][0]
    assert trial["status"] == "Completed" and trial["objective"] is None
    last = result.output.splitlines()[-1]
    assert last.startswith("no best trial: no completed trial reported loss (its metric definition matched no line"), last
    assert f"`smtrain metrics {trial['run_dir']}`" in last and f"`metrics:` in {tmp_path / 'job.yaml'}" in last


def test_a_search_cut_to_one_trial_says_one_trial_run_one_at_a_time(tmp_path):
    """It said `1 trials of tiny, 2 at a time` and `1 trials in 1.0 s, up to 2 at once`: max_parallel_jobs, not
    what ran."""
    (tmp_path / "train.py").write_text("print('loss=0.5')\n")
    (tmp_path / "job.yaml").write_text(TINY_JOB)
    search = tmp_path / "search.yaml"
    search.write_text(ONE_TRIAL.replace("max_jobs: 1\nmax_parallel_jobs: 1", "max_jobs: 4\nmax_parallel_jobs: 2"))

    result = CliRunner().invoke(main, ["tune", "local", str(search), "--max-jobs", "1",
                                       "--run-dir", str(tmp_path / "search")])

    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert ": 1 trial of tiny, 1 at a time (Random); trials in " in lines[0], lines[0]
    assert re.fullmatch(r"1 trial in [0-9.]+ s, up to 1 at once; results in .*", lines[-1]), lines[-1]
    assert json.loads((tmp_path / "search" / "tuning.json").read_text())["parallel"] == 1


def test_a_search_run_again_into_its_folder_continues_it_and_other_settings_are_refused(tmp_path):
    """Run again into its folder, a search started anew under a new name and overwrote tuning.json: the earlier
    trials (maybe the best) dropped out of the results. Now it continues: the same name, the earlier trials kept
    and counted toward max_jobs, the new ones numbered and drawn after them as one uninterrupted search would."""
    (tmp_path / "train.py").write_text(LR_IS_LOSS)
    (tmp_path / "job.yaml").write_text(TINY_JOB)
    search = tmp_path / "search.yaml"
    search.write_text(ONE_TRIAL.replace("max_jobs: 1", "max_jobs: 3\nrandom_seed: 5"))

    def tune(folder: str, *args: str):
        return CliRunner().invoke(main, ["tune", "local", str(search), "--run-dir", str(tmp_path / folder), *args])

    first = tune("search", "--max-jobs", "1")
    earlier = json.loads((tmp_path / "search" / "tuning.json").read_text())
    again = tune("search")
    whole = tune("whole")  # the same search, uninterrupted
    refused = tune("search", "--set", "hyperparameters.epochs=2")

    assert first.exit_code == 0 and again.exit_code == 0, first.output + again.output
    assert "continuing the search in" in again.output and "its 1 trial so far count toward its 3" in again.output
    document = json.loads((tmp_path / "search" / "tuning.json").read_text())
    assert document["tuning_job_name"] == earlier["tuning_job_name"] and document["created"] == earlier["created"]
    assert sorted(trial["trial"] for trial in document["trials"]) == [1, 2, 3]
    assert earlier["trials"][0] in document["trials"]
    values = sorted(trial["hyperparameters"]["lr"] for trial in document["trials"])
    assert whole.exit_code == 0, whole.output
    whole_trials = json.loads((tmp_path / "whole" / "tuning.json").read_text())["trials"]
    assert values == sorted(trial["hyperparameters"]["lr"] for trial in whole_trials)
    assert document["best"]["objective"] == min(values)
    assert refused.exit_code == 2 and "with other settings" in refused.output
    assert "give another --run-dir to keep them beside a new search, or delete" in refused.output
    assert json.loads((tmp_path / "search" / "tuning.json").read_text()) == document


def _objectives(document: dict) -> list[float | None]:
    return [trial["objective"] for trial in sorted(document["trials"], key=lambda trial: trial["trial"])]


def test_a_search_ends_once_a_completed_trial_reaches_the_target_objective_and_says_so(tmp_path):
    """`completion.target_objective` went into the request, and `tune local` ran every trial regardless."""
    (tmp_path / "train.py").write_text(LR_IS_LOSS)
    (tmp_path / "job.yaml").write_text(TINY_JOB)
    search = tmp_path / "search.yaml"
    search.write_text(GRID.format(values="0.5, 0.05, 0.3, 0.2")
                      + "completion: {target_objective: 0.1, complete_on_convergence: true}\n")

    result = CliRunner().invoke(main, ["tune", "local", str(search), "--run-dir", str(tmp_path / "search")])
    status = CliRunner().invoke(main, ["tune", "status", f"local:{tmp_path / 'search'}"])

    assert result.exit_code == 0, result.output
    document = json.loads((tmp_path / "search" / "tuning.json").read_text())
    assert _objectives(document) == [0.5, 0.05]  # 0.3 and 0.2 never started
    reason = f"target objective reached: {document['trials'][0]['name']} has loss = 0.05, at or below 0.1"
    assert document["status"] == "Completed" and document["completion_reason"] == reason
    assert f"complete: {reason}; no more trials start" in result.output
    assert result.output.count("complete_on_convergence is not emulated here") == 1  # said once, at the start
    assert f"completed early: {reason}" in status.output, status.output


def test_a_search_ends_after_trials_that_improve_on_the_best_by_less_than_one_percent(tmp_path):
    (tmp_path / "train.py").write_text(LR_IS_LOSS)
    (tmp_path / "job.yaml").write_text(TINY_JOB)
    search = tmp_path / "search.yaml"
    search.write_text(GRID.format(values="0.5, 0.499, 0.6, 0.7, 0.1") + "completion: {max_jobs_not_improving: 3}\n")

    result = CliRunner().invoke(main, ["tune", "local", str(search), "--run-dir", str(tmp_path / "search")])

    assert result.exit_code == 0, result.output
    document = json.loads((tmp_path / "search" / "tuning.json").read_text())
    assert _objectives(document) == [0.5, 0.499, 0.6, 0.7]  # 0.499 is better by 0.2%: no improvement
    assert document["status"] == "Completed" and document["completion_reason"].startswith(
        "best objective not improving: 3 trials in a row")


def test_the_max_runtime_starts_no_trial_after_it_and_stops_the_running_one(tmp_path, monkeypatch):
    """`max_runtime_seconds` (at least 120 s) went into the request only; the search's clock runs 100 times fast
    here, so the limit comes 1.2 s in, whatever this machine's speed, and the trial, which would print for a
    minute, is stopped at it."""
    import orchestrator.emulator.tuning.search as search_module

    real = time.monotonic
    monkeypatch.setattr(search_module, "time", SimpleNamespace(monotonic=lambda: real() * 100, sleep=time.sleep))
    (tmp_path / "train.py").write_text("import time\nfor _ in range(600):\n    print('loss=0.5', flush=True)\n"
                                       "    time.sleep(0.1)\n")
    (tmp_path / "job.yaml").write_text(TINY_JOB)
    search = tmp_path / "search.yaml"
    search.write_text(GRID.format(values="0.5, 0.4") + "max_runtime_seconds: 120\n")

    result = CliRunner().invoke(main, ["tune", "local", str(search), "--run-dir", str(tmp_path / "search")])

    assert result.exit_code == 1, result.output  # its only trial was stopped: no best
    document = json.loads((tmp_path / "search" / "tuning.json").read_text())
    assert [trial["status"] for trial in document["trials"]] == ["Stopped"]
    assert document["status"] == "Completed" and document["completion_reason"] == "its max runtime (120 s) ran out"
    assert "stopped at the search's max runtime (120 s)" in result.output


def test_a_warm_started_search_learns_its_local_parents_and_says_which_it_cannot_use(tmp_path, monkeypatch):
    """`warm_start` parents went into the request only; a local search now finds its parents under runs/."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(LR_IS_LOSS)
    (tmp_path / "job.yaml").write_text(TINY_JOB)
    (tmp_path / "parent.yaml").write_text(ONE_TRIAL.replace("max_jobs: 1", "max_jobs: 2"))
    (tmp_path / "child.yaml").write_text(ONE_TRIAL.replace("strategy: Random", "strategy: Bayesian")
                                         + "warm_start: {type: IdenticalDataAndAlgorithm, parents: [coarse, gone]}\n")

    parent = CliRunner().invoke(main, ["tune", "local", "parent.yaml", "--run-dir", "runs/coarse"])
    child = CliRunner().invoke(main, ["tune", "local", "child.yaml", "--run-dir", "runs/fine"])

    assert parent.exit_code == 0 and child.exit_code == 0, parent.output + child.output
    assert "warm start: the 2 ended trials of coarse are prior observations of the search" in child.output
    assert "warm start: parent gone is no local search" in child.output
    trials = json.loads((tmp_path / "runs" / "fine" / "tuning.json").read_text())["trials"]
    assert [trial["trial"] for trial in trials] == [1]  # the parents' trials are not the search's
