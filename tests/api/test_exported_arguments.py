"""A notebook user follows the names `orchestrator` exports: each takes what a user naturally passes it (a spec
as `load_spec` returns it, a path, a dict of options), and refuses a wrong but natural argument with smtrain's
error naming what to pass, never an AttributeError or TypeError from deep inside."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import orchestrator
from orchestrator.emulator.run_options import Options


@pytest.fixture
def spec_file(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("print('epoch=1 step=1/1 train_loss=0.5')\n")
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump({
        "name": "exported", "entry_point": "train.py", "source_dir": "src", "framework_version": "2.10.0",
        "instance": {"type": "ml.c5.2xlarge", "count": 1}}))
    return path


def test_run_local_takes_what_load_spec_returns_or_a_path_with_run_s_keywords(spec_file, tmp_path):
    loaded = orchestrator.load_spec(spec_file)

    assert orchestrator.run_local(loaded, run_dir=tmp_path / "a").status == "Completed"
    assert orchestrator.run_local(str(spec_file), {"run_dir": tmp_path / "b"}).status == "Completed"
    ended = orchestrator.run_local(spec_file, Options(run_dir=tmp_path / "c"))
    assert (ended.status, ended.run_dir) == ("Completed", tmp_path / "c")


def test_run_local_refuses_options_it_cannot_read_naming_the_keywords(spec_file):
    with pytest.raises(orchestrator.SpecError) as raised:
        orchestrator.run_local(spec_file, "runs/x")
    assert str(raised.value).startswith("run_local's options are keywords, a dict of them or an Options, not a str")
    assert 'run_local(spec, run_dir="runs/x"' in raised.value.fix
    with pytest.raises(orchestrator.SpecError, match="not an Options and keywords as well"):
        orchestrator.run_local(spec_file, Options(), run_dir="runs/x")
    with pytest.raises(orchestrator.SpecError, match="did you mean `run_dir`"):
        orchestrator.run_local(spec_file, rundir="runs/x")


@pytest.mark.parametrize(("call", "said", "fix"), [
    (lambda spec: orchestrator.load_spec({"name": "x"}),
     "a spec file is read from its path (a str or a pathlib.Path), not from a dict", "goes to plan, submit, run"),
    (lambda spec: orchestrator.load_spec(spec), "not from a JobSpec", 'pass its path, e.g. "job.yaml"'),
    (lambda spec: orchestrator.load_tuning({"job": "job.yaml"}), "a tuning spec file is read from its path",
     "pass the tuning spec's path"),
    (lambda spec: orchestrator.plan_tuning(spec), "a tuning spec file is read from its path", "tuning spec's path"),
    (lambda spec: orchestrator.submit_tuning(spec), "not from a JobSpec", "tuning spec's path"),
    (lambda spec: orchestrator.tune_local(spec), "not from a JobSpec", "tuning spec's path"),
    (lambda spec: orchestrator.tune_local("search.yaml", {"max_jobs": 1}), "options are a SearchOptions, not a dict",
     "SearchOptions(max_jobs=..."),
    (lambda spec: orchestrator.run_local(None), "or a Plan, not None", "orchestrator.load_spec"),
    (lambda spec: orchestrator.attach(spec), "attach finds a job by its id, not by a JobSpec", "sagemaker:NAME"),
    (lambda spec: orchestrator.attach(None), "not by None", "job.name of a Job you hold"),
    (lambda spec: orchestrator.remote("ml.g5.xlarge"), "remote() takes its settings as keywords, not a str",
     '@orchestrator.remote(instance_type="ml.g5.xlarge")'),
], ids=["load_spec-dict", "load_spec-JobSpec", "load_tuning-dict", "plan_tuning-JobSpec", "submit_tuning-JobSpec",
        "tune_local-JobSpec", "tune_local-dict-options", "run_local-None", "attach-JobSpec", "attach-None",
        "remote-positional"])
def test_a_wrong_but_natural_argument_is_refused_naming_what_to_pass(spec_file, call, said, fix):
    with pytest.raises(orchestrator.SmtrainError) as raised:
        call(orchestrator.load_spec(spec_file))

    assert said in raised.value.message and fix in raised.value.fix


def test_a_job_given_as_something_else_is_refused_by_its_type_never_its_value():
    """A list of spec-like dicts is a natural slip; its values may hold a secret, so the refusal names only the
    type."""
    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    with pytest.raises(orchestrator.SpecError) as raised:
        orchestrator.plan([{"environment": {"AWS_SECRET_ACCESS_KEY": secret}}])
    assert "not a list" in str(raised.value)
    assert "wJalr" not in str(raised.value) and "AWS_SECRET" not in str(raised.value)
