"""`--set` from Python: the `overrides` of `load_spec`, `load_tuning` and `plan_tuning`, given as a list of
`key.path=value` strings or as one such string, the form a notebook user writes first."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import orchestrator
from orchestrator.cli.main import main
from orchestrator.errors import SpecError
from orchestrator.specs.loader import load_tuning
from tuning_specs import TINY_SEARCH


def _search(job_spec):
    path = job_spec.parent / "search.yaml"
    path.write_text(TINY_SEARCH.replace("tiny.yaml", job_spec.name))
    return path


def test_one_string_is_one_override_as_one_set_is(write_spec):
    """Before, `load_spec(path, "instance.count=3")` read the string a character at a time and refused
    `--set 'i': expected key.path=value`."""
    spec = write_spec()

    one = orchestrator.load_spec(spec, "instance.count=3")

    assert one.instance.count == 3
    assert one == orchestrator.load_spec(spec, ["instance.count=3"])


def test_a_value_is_never_split_at_its_commas_or_spaces(write_spec):
    spec = orchestrator.load_spec(write_spec(), "hyperparameters.layers=[64, 32]")

    assert spec.hyperparameters["layers"] == [64, 32]


def test_a_search_takes_one_string_for_its_job_spec_and_its_local_trials(write_spec, monkeypatch):
    """A local search's trials are run with `--set` for each of `job_overrides`: before, one per character."""
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    search = _search(write_spec())

    tuning_plan = orchestrator.plan_tuning(search, overrides="instance.count=3")
    loaded = load_tuning(search, "instance.count=3")

    assert tuning_plan.job.spec.instance.count == 3
    assert loaded.job_overrides == ("instance.count=3",) and loaded.job.spec.instance.count == 3


@pytest.mark.parametrize("overrides", [[("instance.count", 3)], [3], {"instance.count": 3}.items()])
def test_an_override_that_is_not_text_names_the_list_form(write_spec, overrides):
    """Before, an item that was not a string raised AttributeError from deep in the loader."""
    with pytest.raises(SpecError) as refused:
        orchestrator.load_spec(write_spec(), overrides)

    assert "an override is a `key.path=value` string" in refused.value.message
    assert refused.value.fix == 'pass e.g. ["instance.count=2", "hyperparameters.epochs=1"], or one such string'


@pytest.mark.parametrize("overrides", [{"instance.count": 3}, 3, None])
def test_overrides_that_are_neither_a_list_nor_a_string_name_the_list_form(write_spec, overrides):
    """A dict was read as its keys (`--set 'instance.count': expected key.path=value`, the CLI's words for a
    Python mistake), and a number or None raised TypeError from the loader; docs/sagemaker.md says anything but
    a list or one string is refused naming the list form."""
    with pytest.raises(SpecError) as refused:
        orchestrator.load_spec(write_spec(), overrides)

    assert refused.value.message.startswith("overrides are `key.path=value` strings, not ")
    assert refused.value.fix == 'pass e.g. ["instance.count=2", "hyperparameters.epochs=1"], or one such string'


def test_overrides_for_a_tuning_spec_read_already_are_refused_not_dropped(write_spec, monkeypatch):
    """Before, `plan_tuning(load_tuning(path), overrides=[...])` planned the spec as read, without the overrides."""
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    loaded = load_tuning(_search(write_spec()))

    with pytest.raises(SpecError) as refused:
        orchestrator.plan_tuning(loaded, overrides=["instance.count=3"])

    assert "read already" in refused.value.message
    assert "load_tuning(path, overrides)" in refused.value.fix
    assert orchestrator.plan_tuning(loaded).job.spec.instance.count == loaded.job.spec.instance.count


@pytest.mark.parametrize(("override", "api_said", "cli_said"), [
    ("instance.count", 'overrides=["instance.count"]: expected key.path=value\n  To fix: for example '
                       'overrides=["instance.count=2"]',
     "--set 'instance.count': expected key.path=value"),
    ("instance.count=2.5", 'overrides=["instance.count=2.5"]: instance.count: Input should be a valid integer'
                           '\n    fix: write a whole number: overrides=["instance.count=2"] or '
                           'overrides=["instance.count=3"]',
     "--set instance.count=2.5: instance.count: Input should be a valid integer\n    fix: write a whole number: "
     "--set instance.count=2 or --set instance.count=3"),
    ("framework_version=2.10", "fix: write it in quotes: overrides=['framework_version=\"2.10\"']",
     "fix: write it in quotes: --set 'framework_version=\"2.10\"'"),
    ("name.first=x", 'overrides=["name.first=x"]: name is not a mapping', "--set name.first=x: name is not a mapping"),
    ("hyperparameters.opt=[a, =]", "To fix: write it in quotes: overrides=['hyperparameters.opt=[a, \"=\"]']",
     "write it in quotes: --set 'hyperparameters.opt=[a, \"=\"]'"),
])
def test_an_override_s_error_names_it_as_its_caller_gave_it(write_spec, override, api_said, cli_said):
    """Before, `load_spec(path, overrides=[...])` was told of `--set`, a flag of a command it never ran; the
    command line keeps its words."""
    spec = write_spec()
    with pytest.raises(SpecError) as refused:
        orchestrator.load_spec(spec, [override])
    validated = CliRunner().invoke(main, ["validate", str(spec), "--set", override])

    assert api_said in str(refused.value) and "--set" not in str(refused.value)
    assert validated.exit_code == 2 and cli_said in validated.output, validated.output


def test_a_tuning_spec_s_job_overrides_are_named_as_the_api_took_them(write_spec, monkeypatch):
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    search = _search(write_spec())

    for read in (lambda: orchestrator.load_tuning(search, "instance.count=2.5"),
                 lambda: orchestrator.plan_tuning(search, overrides="instance.count=2.5")):
        with pytest.raises(SpecError) as refused:
            read()
        assert 'overrides=["instance.count=2.5"]: instance.count' in str(refused.value)
        assert "--set" not in str(refused.value)
