"""A tuning spec that SageMaker would refuse fails `smtrain tune validate` (and plan, submit, local) with exit 2,
the file:line:col where it was written (the job spec's line for the job's part), the field and a fix; limits
come from botocore's model through api_limits.yaml."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from orchestrator.cli.main import main
from orchestrator.specs.tuning import MAX_CATEGORICAL_VALUES, MAX_ENVIRONMENT, MAX_TUNED, tuning_limit
from orchestrator.specs.loader import load_tuning

JOB = """\
name: demo
entry_point: train.py
source_dir: .
framework_version: "2.3.0"
role: arn:aws:iam::123456789012:role/Demo
instance: {type: ml.c5.2xlarge, count: 1}
hyperparameters: {epochs: 3, seed: 1}
output_path: s3://demo-bucket/outputs/
"""

TUNING = """\
job: job.yaml
objective: {metric: "train:loss", type: Minimize}
strategy: Bayesian
parameters:
  lr: {type: continuous, min: 0.001, max: 0.1, scaling: Logarithmic}
  batch-size: {type: integer, min: 16, max: 128}
  optimizer: {type: categorical, values: [sgd, adam]}
max_jobs: 10
max_parallel_jobs: 2
"""


@pytest.fixture
def write(tmp_path: Path):
    (tmp_path / "train.py").write_text("print('hello')\n")

    def write(tuning: str = TUNING, job: str = JOB) -> Path:
        (tmp_path / "job.yaml").write_text(job)
        path = tmp_path / "search.yaml"
        path.write_text(tuning)
        return path

    return write


def _swap(old: str, new: str, text: str = TUNING) -> str:
    assert old in text, old
    return text.replace(old, new)


LR = "  lr: {type: continuous, min: 0.001, max: 0.1, scaling: Logarithmic}\n"
CATEGORICAL_ONLY = _swap("  batch-size: {type: integer, min: 16, max: 128}\n", "", _swap(LR, ""))

# (id, tuning text, job text, expected place, field, fragment of the message or fix)
CASES = [
    ("unknown-key", _swap("max_jobs:", "max_job:"), JOB, "search.yaml:8:1", "max_job", "did you mean `max_jobs`?"),
    ("log-scale-with-zero-min", _swap("min: 0.001", "min: 0"), JOB, "search.yaml:5", "parameters.lr",
     "raise min above 0"),
    ("reverse-log-outside-unit", _swap("scaling: Logarithmic", "scaling: ReverseLogarithmic", _swap("max: 0.1", "max: 2")),
     JOB, "search.yaml:5", "parameters.lr", "within [0, 1)"),
    ("integer-reverse-log", _swap("max: 128}", "max: 128, scaling: ReverseLogarithmic}"), JOB, "search.yaml:6",
     "parameters.batch-size", "continuous ranges within [0, 1)"),
    ("min-not-below-max", _swap("min: 16, max: 128", "min: 64, max: 64"), JOB, "search.yaml:6",
     "parameters.batch-size", "make min smaller than max"),
    ("unknown-range-type", _swap("type: integer", "type: int"), JOB, "search.yaml:6", "parameters.batch-size",
     "continuous, integer or categorical"),
    ("typo-in-a-range", _swap("values: [sgd, adam]", "valeus: [sgd, adam]"), JOB, "search.yaml:7",
     "parameters.optimizer.valeus", "did you mean `values`?"),
    ("typo-in-the-objective", _swap("metric:", "metirc:"), JOB, "search.yaml:2", "objective.metirc",
     "did you mean `metric`?"),
    # it was `write a whole number without quotes, e.g. min: 2`: nothing was quoted
    ("integer-range-of-floats", _swap("min: 16, max: 128", "min: 16.5, max: 128.0"), JOB, "search.yaml:6:42",
     "parameters.batch-size.max", "fix: write it without the decimal point: max: 128 (or make the range type: "
                                  "continuous)"),
    ("integer-range-of-fractions", _swap("min: 16, max: 128", "min: 16.5, max: 128"), JOB, "search.yaml:6:31",
     "parameters.batch-size.min", "fix: write a whole number: min: 16 or min: 17"),
    # it was `write a whole number without quotes, e.g. max_jobs: 2`: the list was the mistake, not quotes
    ("max-jobs-as-a-list", _swap("max_jobs: 10", "max_jobs: [2]"), JOB, "search.yaml:8:1", "max_jobs",
     "fix: write the value itself, not a list: max_jobs: 2"),
    # it said "single hyphens", but SageMaker's pattern takes several in a row (`my--search` is a name)
    ("tuning-name-with-an-underscore", "name: my_search\n" + TUNING, JOB, "search.yaml:1:1", "name",
     "fix: use letters, digits and hyphens, starting and ending with a letter or digit"),
    # it was `use one of: ...` without the choice meant
    ("mistyped-scaling", _swap("scaling: Logarithmic", "scaling: Logarithmc"), JOB, "search.yaml:5",
     "parameters.lr.scaling", "did you mean `Logarithmic`?"),
    ("mistyped-strategy", _swap("strategy: Bayesian", "strategy: bayesian"), JOB, "search.yaml:3:1", "strategy",
     "did you mean `Bayesian`?"),
    ("duplicate-categorical-values", _swap("values: [sgd, adam]", "values: [sgd, sgd]"), JOB, "search.yaml:7",
     "parameters.optimizer.values", "list each value once"),
    ("objective-not-a-metric", _swap('"train:loss"', '"validation:accuracy"'), JOB, "search.yaml:2",
     "objective.metric", "not among the job's metric definitions (train:loss, eval:loss, train:learning_rate, train:samples_per_sec, train:epoch, eval:train_loss)"),
    ("tuned-and-static", TUNING, _swap("seed: 1}", "seed: 1, lr: 0.05}", JOB), "job.yaml:7", "hyperparameters.lr",
     "remove lr from the hyperparameters of job.yaml"),
    ("grid-with-continuous", _swap("strategy: Bayesian", "strategy: Grid", _swap("max_jobs: 10\n", "")), JOB,
     "search.yaml:3:1", "strategy", "Grid takes categorical ranges only; lr, batch-size are not"),
    ("grid-with-max-jobs", _swap("strategy: Bayesian", "strategy: Grid", CATEGORICAL_ONLY), JOB, "search.yaml:6:1",
     "max_jobs", "runs every combination (2); max_jobs is not taken"),
    ("bayesian-without-max-jobs", _swap("max_jobs: 10\n", ""), JOB, "search.yaml:3:1", "strategy", "needs max_jobs"),
    ("hyperband-with-early-stopping", _swap("strategy: Bayesian", "strategy: Hyperband\nearly_stopping: Auto"), JOB,
     "search.yaml:4:1", "early_stopping", "early_stopping Off"),
    ("hyperband-settings-elsewhere", TUNING + "hyperband: {min_resource: 1, max_resource: 9}\n", JOB,
     "search.yaml:10:1", "hyperband", "only for strategy Hyperband"),
    ("hyperband-without-epochs", _swap("strategy: Bayesian", "strategy: Hyperband"), _swap("epochs: 3, ", "", JOB),
     "search.yaml:1:1", "hyperband.max_resource", "add `hyperband: {max_resource: 20}`"),
    ("parallel-above-max", _swap("max_parallel_jobs: 2", "max_parallel_jobs: 11"), JOB, "search.yaml:9:1",
     "max_parallel_jobs",
     "set max_parallel_jobs to at most 10"),
    ("runtime-below-api-minimum", TUNING + "max_runtime_seconds: 60\n", JOB, "search.yaml:10:1",
     "max_runtime_seconds", f"at least {tuning_limit('HyperParameterTuningJobConfig.ResourceLimits.MaxRuntimeInSeconds', 'min')}"),
    ("too-many-categorical-values", _swap("values: [sgd, adam]",
                                          f"values: [{', '.join(f'v{i}' for i in range(MAX_CATEGORICAL_VALUES + 1))}]"),
     JOB, "search.yaml:7", "parameters.optimizer.values", f"at most {MAX_CATEGORICAL_VALUES}"),
    ("completion-below-api-minimum", TUNING + "completion: {max_jobs_not_improving: 2}\n", JOB, "search.yaml:10",
     "completion.max_jobs_not_improving", "at least 3"),
    ("warm-start-bad-parent", TUNING + "warm_start: {type: TransferLearning, parents: [my_search]}\n", JOB,
     "search.yaml:10", "warm_start.parents", "copy the name from `smtrain tune list`"),
    ("reserved-name", _swap("  lr:", "  sagemaker_program:"), JOB, "search.yaml:4", "parameters",
     "tune the script's own hyperparameters"),
    ("job-spec-problem", TUNING, _swap("count: 1}", "count: 0}", JOB), "search.yaml:1:1", "job",
     "instance.count"),
    ("too-much-environment", TUNING, JOB + "environment: {" + ", ".join(f"V{i}: x" for i in range(MAX_ENVIRONMENT + 1))
     + "}\n", "job.yaml:9", "environment", f"takes at most {MAX_ENVIRONMENT} (a single job 100)"),
]


@pytest.mark.parametrize(("tuning", "job", "where", "field", "fragment"), [case[1:] for case in CASES],
                         ids=[case[0] for case in CASES])
def test_tune_validate_refuses_with_place_field_and_fix(write, tuning, job, where, field, fragment):
    path = write(tuning, job)

    result = CliRunner().invoke(main, ["tune", "validate", str(path)])

    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if where in line and f": {field}:" in line + ":"]
    assert lines, result.output
    assert fragment in result.output
    assert "fix:" in result.output


def test_a_misspelled_required_key_of_a_tuning_spec_is_one_problem(write):
    """`objectiv:` was also `objective: Field required, fix: add objective:`, the key the user had written."""
    result = CliRunner().invoke(main, ["tune", "validate", str(write(_swap("objective:", "objectiv:")))])

    assert result.exit_code == 2, result.output
    assert "1 problem in the tuning spec" in result.output and "did you mean `objective`?" in result.output
    assert "Field required" not in result.output


def test_tune_validate_accepts_the_example_and_a_spec_at_the_limits(write):
    example = Path(__file__).resolve().parents[2] / "job_specs" / "tuning" / "mlp-lr-search.yaml"
    assert CliRunner().invoke(main, ["tune", "validate", str(example)]).exit_code == 0
    many = "".join(f"  p{i}: {{type: integer, min: 1, max: 2}}\n" for i in range(MAX_TUNED))
    at_limits = _swap("  lr:", "  lr:", TUNING).split("parameters:\n")[0] + "parameters:\n" + many + "max_jobs: 10\n"

    result = CliRunner().invoke(main, ["tune", "validate", str(write(at_limits))])

    assert result.exit_code == 0, result.output


def test_more_parameters_than_a_tuning_job_searches_are_refused(write):
    many = "".join(f"  p{i}: {{type: integer, min: 1, max: 2}}\n" for i in range(MAX_TUNED + 1))
    text = TUNING.split("parameters:\n")[0] + "parameters:\n" + many + "max_jobs: 10\n"

    result = CliRunner().invoke(main, ["tune", "validate", str(write(text))])

    assert result.exit_code == 2 and f"at most {MAX_TUNED}" in result.output


def test_limits_are_botocores():
    assert tuning_limit("HyperParameterTuningJobName", "max") == 32
    assert tuning_limit("TrainingJobDefinition.Environment", "max") == 48
    assert MAX_TUNED == 30 and MAX_CATEGORICAL_VALUES == 30
    assert tuning_limit("HyperParameterTuningJobConfig.StrategyConfig.HyperbandStrategyConfig.MaxResource",
                        "documented_max") == 20000


def test_overrides_apply_to_the_job_spec(write):
    loaded = load_tuning(write(), ["hyperparameters.epochs=1"])

    assert loaded.job.spec.hyperparameters["epochs"] == 1


def _modules_loaded_by(*args: str) -> set[str]:
    script = ("import sys\nfrom orchestrator.cli.main import main\n"
              "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
              "print('\\n'.join(sorted({m.split('.')[0] for m in sys.modules})), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "AWS_REGION": "us-east-1"})
    return set(done.stderr.split())


def test_tune_help_validate_and_plan_stay_fast():
    """No SDK, no torch, no optuna (only `tune local` needs it); validate not even boto3."""
    example = Path(__file__).resolve().parents[2] / "job_specs" / "tuning" / "mlp-lr-search.yaml"
    heavy = {"sagemaker", "torch", "optuna"}
    assert not (heavy | {"boto3", "botocore"}) & _modules_loaded_by("tune", "--help")
    assert not (heavy | {"boto3", "botocore"}) & _modules_loaded_by("tune", "validate", str(example))
    loaded = _modules_loaded_by("tune", "plan", str(example), "-o", "json")
    assert "orchestrator" in loaded and not heavy & loaded
