"""The tuning specs of every strategy and the target they are planned for: one set, checked against the golden
requests (tests/planning) and against SageMaker SDK v2's own requests (tests/referees/sdk)."""

from __future__ import annotations

from pathlib import Path

from orchestrator.planning.target import Target

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "job_specs" / "tuning" / "mlp-lr-search.yaml"
EXAMPLE_JOB = REPO / "job_specs" / "tuning" / "mlp-cpu.yaml"
TARGET = Target(region="us-east-1", role="arn:aws:iam::123456789012:role/SageMakerExecution",
                output_path="s3://my-bucket/outputs/", code_location="s3://my-bucket/code")

COMMON = f"job: {EXAMPLE_JOB}\nname: mlp-search\nobjective: {{metric: \"train:loss\", type: Minimize}}\n"
TUNING_SPECS = {
    "bayesian": EXAMPLE.read_text().replace("job: mlp-cpu.yaml", f"job: {EXAMPLE_JOB}"),
    "random": COMMON + """strategy: Random
parameters:
  lr: {type: continuous, min: 0.0001, max: 0.9, scaling: ReverseLogarithmic}
  mlp-hidden: {type: integer, min: 8, max: 64, scaling: Linear}
max_jobs: 20
max_parallel_jobs: 4
random_seed: 11
completion: {target_objective: 0.05}
""".replace("mlp-hidden", "batch-size"),
    "grid": COMMON + """strategy: Grid
parameters:
  optimizer: {type: categorical, values: [sgd, adam]}
  batch-size: {type: categorical, values: [32, 64, 128]}
  lr: {type: categorical, values: [0.01, 0.1]}
max_parallel_jobs: 3
""",
    "hyperband": COMMON + """strategy: Hyperband
hyperband: {min_resource: 1, max_resource: 4}
parameters:
  lr: {type: continuous, min: 0.001, max: 0.5, scaling: Logarithmic}
  batch-size: {type: integer, min: 16, max: 128, scaling: Auto}
  optimizer: {type: categorical, values: [sgd, adam]}
max_jobs: 30
max_parallel_jobs: 5
max_runtime_seconds: 7200
completion: {max_jobs_not_improving: 10, complete_on_convergence: true}
warm_start: {type: TransferLearning, parents: [mlp-lr-261124-104053-gx68]}
tags: {search: hyperband}
""",
}

# A job a search can tune, complete enough to plan offline: the hardening and offline-check tests' own.
TINY_JOB = """name: tiny
entry_point: train.py
framework_version: "2.10.0"
py_version: py313
role: arn:aws:iam::123456789012:role/R
output_path: s3://bucket/out/
region: us-east-1
instance: {type: ml.c5.xlarge, count: 1}
metrics: [{name: loss, regex: "loss=([0-9.]+)"}]
"""


TINY_SEARCH = """\
job: tiny.yaml
name: tiny-search
objective: {metric: "train:loss", type: Minimize}
strategy: Random
parameters:
  lr: {type: continuous, min: 0.001, max: 0.1, scaling: Logarithmic}
max_jobs: 4
max_parallel_jobs: 2
"""
"""A search of the `write_spec` fixture's job (tiny.yaml), for the tests of planning and submitting a search."""
