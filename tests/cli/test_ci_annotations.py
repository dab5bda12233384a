"""In GitHub Actions a failure shows where the user looks: a spec problem, or a failed local run's root cause,
as an annotation on its file and line (a workflow command), and a local run in the step summary. Hostile text
stays data, secrets stay masked, and outside GitHub Actions the output is what it was."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from forked import smtrain
from tuning_specs import TINY_JOB

from orchestrator.cli import ci_annotations
from orchestrator.cli.ci_annotations import command, local_run
from orchestrator.emulator.local_run import LocalRun
from orchestrator.emulator.run_options import TRIAL_OF_SEARCH
from orchestrator.emulator.tuning.search import SearchResult
from orchestrator.errors import SpecError
from orchestrator.observing.trials import Trial
from orchestrator.specs.model import JobSpec

BAD = """name: bad
entry_point: train.py
framework_version: "2.3.0"
instance:
  type: ml.c5.nope
  count: 0
"""
GOOD = """name: good
entry_point: train.py
framework_version: "2.3.0"
instance: {type: ml.c5.2xlarge}
"""
MACHINE_SECRET = "machine-secret-4242"


def _workspace(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A checkout with specs/bad.yaml and specs/good.yaml, and GitHub Actions' variables for it."""
    workspace = tmp_path / "repo"
    (workspace / "specs").mkdir(parents=True)
    (workspace / "specs" / "bad.yaml").write_text(BAD)
    (workspace / "specs" / "good.yaml").write_text(GOOD)
    (workspace / "specs" / "train.py").write_text("print('step=1/1 loss=0.5')\n")
    return workspace, {**os.environ, "GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": str(workspace)}


def _annotations(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("::")]


@pytest.mark.parametrize("verb", ["validate", "plan", "local"])
def test_a_malformed_spec_is_annotated_at_each_problem_s_file_and_line(tmp_path, verb):
    workspace, environment = _workspace(tmp_path)

    done = smtrain(verb, str(workspace / "specs" / "bad.yaml"), cwd=tmp_path, env=environment)

    assert done.returncode == 2, done.stderr
    first, second = _annotations(done.stderr)
    assert first.startswith("::error file=specs/bad.yaml,line=5,col=3,title=smtrain%3A instance.type::"
                            "'ml.c5.nope' is not a SageMaker training instance type (fix: "), first
    assert second == ("::error file=specs/bad.yaml,line=6,col=3,title=smtrain%3A instance.count::"
                      "Input should be greater than or equal to 1 (fix: use a value at least 1)")


def test_a_spec_warning_and_a_set_s_problem_are_annotated_too(tmp_path):
    workspace, environment = _workspace(tmp_path)

    valid = smtrain("validate", "specs/good.yaml", cwd=workspace, env=environment)
    overridden = smtrain("validate", "specs/good.yaml", "--set", "instance.count=x", cwd=workspace,
                         env=environment)

    assert valid.returncode == 0, valid.stderr
    [warning] = _annotations(valid.stderr)
    assert warning.startswith("::warning file=specs/good.yaml,line=3,col=1,"
                              "title=smtrain%3A framework_version::the PyTorch 2.3.0 training "), warning
    [error] = _annotations(overridden.stderr)
    assert error.startswith("::error title=smtrain%3A instance.count::"
                            "--set instance.count=x: Input should be a valid integer"), error


def test_hostile_text_is_data_of_one_command():
    """`%`, CR and LF are escaped in the message; a property's `:` and `,` too: a value ends no property."""
    made = command("error", "bad\r\n::error::injected %0A, a: b", "smtrain: a,b:c",
                   {"file": "x,line=1:y.yaml", "line": 3, "column": None})

    assert made == ("::error file=x%2Cline=1%3Ay.yaml,line=3,title=smtrain%3A a%2Cb%3Ac::bad%0D%0A::error::"
                    "injected %250A, a: b")


def test_a_hostile_spec_key_and_a_machine_secret_stay_inside_one_annotation(tmp_path, monkeypatch):
    monkeypatch.setenv("DEPLOY_TOKEN", MACHINE_SECRET)
    workspace, environment = _workspace(tmp_path)
    (workspace / "specs" / "hostile.yaml").write_text(
        GOOD.replace("ml.c5.2xlarge", f"ml.{MACHINE_SECRET}") + '"extra\\n::warning::injected": 1\n')

    done = smtrain("validate", "specs/hostile.yaml", cwd=workspace, env=environment)

    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert all(line.startswith("::error file=specs/hostile.yaml,") for line in lines), done.stderr
    instance_type, unknown_key = sorted(lines)  # lines 4 and 5
    assert "title=smtrain%3A extra\\n%3A%3Awarning%3A%3Ainjected::" in unknown_key, unknown_key
    assert "'ml.****'" in instance_type and MACHINE_SECRET not in done.stderr, instance_type


def test_outside_github_actions_the_output_is_unchanged(tmp_path):
    workspace, environment = _workspace(tmp_path)
    plain = {name: value for name, value in environment.items() if not name.startswith("GITHUB_")}
    for words in (["validate", "specs/bad.yaml", "specs/good.yaml"], ["plan", "specs/bad.yaml"]):
        without = smtrain(*words, cwd=workspace, env=plain)
        declined = smtrain(*words, cwd=workspace, env={**plain, "GITHUB_ACTIONS": "false"})
        annotated = smtrain(*words, cwd=workspace, env=environment)

        assert (declined.returncode, declined.stdout, declined.stderr) == (without.returncode, without.stdout,
                                                                           without.stderr)
        assert _annotations(annotated.stderr) and not _annotations(without.stderr)
        kept = "".join(line for line in annotated.stderr.splitlines(keepends=True)
                       if not line.startswith("::"))
        assert (annotated.returncode, annotated.stdout, kept) == (without.returncode, without.stdout,
                                                                  without.stderr)


def _spec() -> JobSpec:
    return JobSpec(name="tiny", entry_point="train.py", framework_version="2.3.0",
                   instance={"type": "ml.c5.2xlarge", "count": 1},
                   hyperparameters={"api_key": "spec-secret-value"})


def _run(tmp_path: Path, **fields) -> LocalRun:
    return LocalRun(**{"job_name": "tiny-1", "run_dir": tmp_path / "run", "status": "Failed", "exit_code": 1,
                       "world_size": 1, "attempts": 1, "seconds": 3.25, **fields})


@pytest.mark.parametrize(("fields", "expected"), [
    ({"status": "Hung", "exit_code": 4, "failure_reason": "Hung: rank 0 waits for rank 1; stacks: stacks.txt",
      "failure_cause": {"headline": "Hung: rank 0 waits for rank 1", "fix": "see stacks.txt",
                        "location": None}},
     "::error title=smtrain local::Hung: rank 0 waits for rank 1 (fix: see stacks.txt)"),
    ({"failure_reason": "smoke: rank 1 (algo-2) never started within 60 s\nmore"},
     "::error title=smtrain local::smoke: rank 1 (algo-2) never started within 60 s%0Amore"),
    ({"status": "Interrupted", "exit_code": 130, "failure_reason": "interrupted (SIGTERM)"}, None),
    ({"status": "Completed", "exit_code": 0}, None),
])
def test_a_hung_run_and_a_failed_smoke_are_one_error_without_a_place(tmp_path, monkeypatch, capsys, fields,
                                                                     expected):
    monkeypatch.setenv("GITHUB_ACTIONS", "true")

    local_run(_run(tmp_path, **fields), _spec(), None)

    assert _annotations(capsys.readouterr().err) == ([expected] if expected else [])


def test_the_summary_is_appended_masked_and_an_unwritable_one_is_a_warning(tmp_path, monkeypatch, capsys):
    summary = tmp_path / "step_summary"
    summary.write_text("# an earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("DEPLOY_TOKEN", MACHINE_SECRET)
    run = _run(tmp_path, final_metrics={"train:loss": 0.5}, failure_reason=(
        f"algo-1 (rank 0) failed: KeyError: 'spec-secret-value' at src/train.py:9\n```\n{MACHINE_SECRET}"))

    local_run(run, _spec(), "smoke FAILED: 1 of 1 ranks started, step 3 reached (progress line)")

    text = summary.read_text()
    assert text.startswith("# an earlier step\n### smtrain local: ` tiny-1 `: smoke FAILED\n"), text
    for part in ("- status: Failed (exit 1) in 3.2 s", "- hosts: 1, world size 1",
                 "- smoke: ` FAILED: 1 of 1 ranks started, step 3 reached (progress line) `",
                 "- final metrics: ` train:loss=0.5 `", f"- run directory: ` {tmp_path / 'run'} `",
                 "````text\nalgo-1 (rank 0) failed: KeyError: '****' at src/train.py:9\n```\n****\n````"):
        assert part in text, text
    assert "spec-secret-value" not in text and MACHINE_SECRET not in text
    assert capsys.readouterr().err == ""  # the summary alone: not in GitHub Actions

    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path))  # a folder: no file can be appended to
    local_run(run, _spec(), None)

    [warning] = capsys.readouterr().err.splitlines()
    assert warning.startswith(f"warning: the run's summary could not be appended to $GITHUB_STEP_SUMMARY "
                              f"({tmp_path}): "), warning


@pytest.mark.slow
def test_a_failed_local_run_is_annotated_at_the_user_s_line_and_summarized(tmp_path):
    """One host, one process on a CPU instance: the script raises at line 2 of src/train.py."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(
        "print('loading', flush=True)\nraise ValueError('no rows ::warning::x %0A for hf_' + 'a' * 34)\n")
    spec = {"name": "fails", "entry_point": "train.py", "source_dir": "src", "framework_version": "2.3.0",
            "instance": {"type": "ml.c5.2xlarge", "count": 1}, "distribution": {"mode": "none"}}
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    summary = tmp_path / "step_summary"
    environment = {**os.environ, "GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": str(tmp_path),
                   "GITHUB_STEP_SUMMARY": str(summary)}

    done = subprocess.run([sys.executable, "-m", "orchestrator", "local", "spec.yaml", "--run-dir", "run"],
                          cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=600,
                          check=False)

    assert done.returncode == 1, done.stderr
    [error] = [line for line in _annotations(done.stderr) if line.startswith("::error")]
    assert error == ("::error file=src/train.py,line=2,title=smtrain local::algo-1 (rank 0) failed: "
                     "ValueError: no rows ::warning::x %250A for **** at src/train.py:2")
    assert not _annotations(done.stdout), done.stdout  # the script's own lines stay behind their [algo-1] tag
    text = summary.read_text()
    assert text.startswith("### smtrain local: ` fails-") and ": Failed\n" in text, text
    assert "failure cause:" in text
    assert "ValueError: no rows ::warning::x %0A for **** at src/train.py:2" in text, text
    assert f"- run directory: ` {tmp_path / 'run'} `" in text and "hf_aaaa" not in text


@pytest.mark.slow
@pytest.mark.parametrize(("requirements", "place", "location"), [
    # the requirement pip names, found by its canonical name whatever its extras, markers and spacing
    ({"requirements.txt": "numpy\n# metrics\nTorchMetricz[image] == 99.0 ; python_version >= '3'\n"},
     "file=src/requirements.txt,line=3", "src/requirements.txt:3"),
    # through a simple `-r` include: the included file's line
    ({"requirements.txt": "-r reqs/base.txt\n", "reqs/base.txt": "torchmetricz==99.0\n"},
     "file=src/reqs/base.txt,line=1", "src/reqs/base.txt:1"),
    # two includes deep: requirements.txt, without a line
    ({"requirements.txt": "-r a.txt\n", "a.txt": "-r b.txt\n", "b.txt": "torchmetricz==99.0\n"},
     "file=src/requirements.txt", "src/requirements.txt"),
])
def test_a_requirement_pip_cannot_install_is_annotated_at_its_line_and_said_as_on_sagemaker(tmp_path, requirements,
                                                                                           place, location):
    """pip fails fast and offline (no index). Before: an annotation with no file, and a cause that read `the job
    failed: InstallRequirementsError: ...` with `launcher` null, where the same failure on SageMaker reads
    `algo-1 (pip install) failed: ERROR: ...` with `launcher: "pip install"`. Now the cause is pip's on both,
    located at the line to fix; locally no host is named (one install serves every host)."""
    for name, text in requirements.items():
        (tmp_path / "src" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "src" / name).write_text(text)
    (tmp_path / "src" / "train.py").write_text("print('never runs')\n")
    spec = {"name": "pins", "entry_point": "train.py", "source_dir": "src", "framework_version": "2.3.0",
            "instance": {"type": "ml.c5.2xlarge", "count": 2}}
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    environment = {**os.environ, "GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": str(tmp_path), "PIP_NO_INDEX": "1",
                   "SMTRAIN_CACHE_DIR": str(tmp_path / "cache")}

    done = smtrain("local", "spec.yaml", "--run-dir", "run", cwd=tmp_path, env=environment)
    shown = smtrain("status", "run", cwd=tmp_path, env=environment)
    status = json.loads(smtrain("status", "run", "-o", "json", cwd=tmp_path, env=environment).stdout)

    assert done.returncode == 1, done.stderr
    pip_said = "ERROR: No matching distribution found for "
    [error] = [line for line in _annotations(done.stderr) if line.startswith("::error")]
    assert error.startswith(f"::error {place},title=smtrain local::the job (pip install) failed: {pip_said}"), error
    assert f" at {location} (fix: pip could not install the source dir's requirements.txt" in error, error
    cause = status["failure_cause"]
    assert (cause["host"], cause["rank"], cause["launcher"]) == (None, None, "pip install")
    assert (cause["location"], cause["category"]) == (location, "requirements_install")
    assert cause["exception"].startswith(pip_said) and cause["headline"].endswith(f" at {location}")
    rows = dict(re.findall(r"^  (\w+) +(.*)$", shown.stdout, re.MULTILINE))
    assert rows["cause"] == cause["headline"]
    assert f" at {location}" in done.stderr.split("failure reason: ")[1].splitlines()[0], done.stderr


def test_a_spec_key_holding_a_newline_stays_on_its_problem_s_line(tmp_path):
    """Outside the annotations too: validate's own text writes the key's line break as an escape, so no line of
    it starts with what the key smuggled (a CI runner reads a line starting `::` as a command)."""
    workspace, environment = _workspace(tmp_path)
    (workspace / "specs" / "hostile.yaml").write_text(GOOD + '"extra\\n::warning::injected": 1\n')

    for variables in (environment, {name: value for name, value in environment.items()
                                    if not name.startswith("GITHUB_")}):
        done = smtrain("validate", "specs/hostile.yaml", cwd=workspace, env=variables)
        assert done.returncode == 2
        printed = (done.stdout + done.stderr).splitlines()
        assert not any(line.startswith("::warning") for line in printed), printed
        assert any("extra\\n::warning::injected" in line for line in printed), printed


def _search(tmp_path: Path, **fields) -> SearchResult:
    """A search of two trials, both failed: the first at line 2 of src/train.py (its result.json says so)."""
    first = tmp_path / "search" / "s-001"
    first.mkdir(parents=True)
    (first / "result.json").write_text(json.dumps({"status": "Failed", "failure_cause": {
        "headline": "algo-1 (rank 0) failed: ValueError: no rows for spec-secret-value at src/train.py:2",
        "location": "src/train.py:2", "fix": "check the train channel"}}))
    trials = [Trial(name="s-002", status="Failed", objective=None, hyperparameters={"lr": 0.5}, number=2,
                    failure_reason="algo-1 (rank 0) failed: KeyError: 'x'",
                    run_dir=str(tmp_path / "search" / "s-002")),
              Trial(name="s-001", status="Failed", objective=None, hyperparameters={"lr": 0.1}, number=1,
                    failure_reason="algo-1 (rank 0) failed: ValueError", run_dir=str(first))]
    return SearchResult(**{"name": "s", "run_dir": tmp_path / "search", "strategy": "Random",
                           "metric": "loss", "goal": "Minimize", "parallel": 1, "seconds": 4.5,
                           "trials": trials, "max_jobs": 7,
                           "status": "Failed", "failure_reason": "No training job succeeded after 5 attempts",
                           **fields})


def test_a_failed_search_is_one_error_at_its_first_failed_trial_s_line_and_one_summary(tmp_path, monkeypatch,
                                                                                        capsys):
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_WORKSPACE", str(tmp_path))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "step_summary"))

    ci_annotations.tune_search(_search(tmp_path), _spec(), None)

    assert _annotations(capsys.readouterr().err) == [
        "::error file=src/train.py,line=2,title=smtrain tune local::No training job succeeded after 5 "
        "attempts; s-001: algo-1 (rank 0) failed: ValueError: no rows for **** at src/train.py:2 "
        "(fix: check the train channel)"]
    text = (tmp_path / "step_summary").read_text()
    assert text.count("### ") == 1 and text.startswith("### smtrain tune local: ` s `: Failed\n"), text
    for part in ("- status: Failed in 4.5 s (Random search, Minimize ` loss `)",
                 "- trials: 2 run of 7 (2 failed)", f"- run directory: ` {tmp_path / 'search'} `",
                 "failure cause:",
                 "```text\nNo training job succeeded after 5 attempts; s-001: algo-1 (rank 0) failed: "
                 "ValueError: no rows for **** at src/train.py:2 (fix: check the train channel)\n```"):
        assert part in text, text
    assert "- best:" not in text and "spec-secret-value" not in text


def test_a_search_s_summary_names_its_best_trial_masked_and_a_search_with_one_is_no_error(
        tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "step_summary"))
    monkeypatch.setenv("DEPLOY_TOKEN", MACHINE_SECRET)
    best = Trial(name="s-003", status="Completed", objective=0.0123456789, number=3, run_dir=str(tmp_path),
                 hyperparameters={"lr": 0.012345678, "optimizer": "adam", "tag": MACHINE_SECRET})
    failed = _search(tmp_path)
    search = _search(tmp_path / "again", status="Completed", failure_reason=None,
                     trials=[*failed.trials, best], completion_reason="the objective reached its target 0.05")

    ci_annotations.tune_search(search, _spec(), None)

    assert capsys.readouterr().err == ""
    text = (tmp_path / "step_summary").read_text()
    assert text.startswith("### smtrain tune local: ` s `: Completed\n"), text
    for part in ("- trials: 3 run of 7 (1 completed, 2 failed)",
                 "- best: ` s-003 `: ` loss = 0.0123457 ` with ` lr=0.0123457, optimizer=adam, tag=**** `",
                 "- completed early: ` the objective reached its target 0.05 `"):
        assert part in text, text
    assert "failure cause" not in text and MACHINE_SECRET not in text


def test_outside_github_actions_a_failed_search_prints_and_appends_nothing(tmp_path, monkeypatch, capsys):
    ci_annotations.tune_search(_search(tmp_path), _spec(), None)

    assert capsys.readouterr() == ("", "")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["search"]


def test_a_trial_of_a_search_prints_no_annotation_and_appends_no_summary(tmp_path, monkeypatch, capsys):
    """Its search reports once for all its trials: twenty trials were twenty summaries."""
    summary = tmp_path / "step_summary"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv(TRIAL_OF_SEARCH, "s")

    local_run(_run(tmp_path, failure_reason="algo-1 (rank 0) failed: ValueError"), _spec(), None)
    ci_annotations.user_error(SpecError("bad value", fix="another"))

    assert capsys.readouterr().err == "" and not summary.exists()


@pytest.mark.slow
def test_a_failed_search_under_actions_is_one_error_and_one_summary_not_one_per_trial(tmp_path):
    """Two trials of a script that raises at its line 1; neither writes a summary of its own."""
    (tmp_path / "train.py").write_text("raise ValueError('lr too small')\n")
    (tmp_path / "job.yaml").write_text(TINY_JOB)
    (tmp_path / "search.yaml").write_text(
        "job: job.yaml\nobjective: {metric: loss, type: Minimize}\nstrategy: Random\nparameters:\n"
        "  lr: {type: continuous, min: 0.001, max: 0.1}\nmax_jobs: 2\nmax_parallel_jobs: 1\n")
    summary = tmp_path / "step_summary"
    environment = {**os.environ, "GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": str(tmp_path),
                   "GITHUB_STEP_SUMMARY": str(summary)}

    done = subprocess.run([sys.executable, "-m", "orchestrator", "tune", "local", "search.yaml",
                           "--run-dir", "search"], cwd=tmp_path, env=environment, capture_output=True,
                          text=True, timeout=600, check=False)

    assert done.returncode == 1, done.stderr
    [error] = _annotations(done.stdout + done.stderr)
    assert error.startswith("::error file=train.py,line=1,title=smtrain tune local::no best trial: no trial "
                            "completed (2 failed); tiny-"), error
    assert error.endswith("-001: algo-1 (rank 0) failed: ValueError: lr too small at ./train.py:1"), error
    text = summary.read_text()
    assert text.count("### ") == 1 and text.startswith("### smtrain tune local: ` tiny-"), text
    assert "- trials: 2 run of 2 (2 failed)" in text and f"- run directory: ` {tmp_path / 'search'} `" in text
