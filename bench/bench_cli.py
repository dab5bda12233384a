"""`smtrain validate` and `smtrain plan` against the bare SDK v2, side by side in one run.

Each contender is a fresh process, run in turn (A B C D A B C D ...) so machine noise hits all alike; medians.
Baselines: `python -c "import sagemaker.pytorch"` (what any SDK v2 script pays before it does anything) and
`baseline_sdk_estimator.py` (import + Session + PyTorch estimator construction). Goals from issue 36:
validate <= 0.05x and plan <= 0.10x the SDK import, judged on CPU time (user + system: on a shared machine the
wall clock measures the other work; both are printed). A reference line, `libraries alone`, is the interpreter
importing only the libraries every spec command needs (click, PyYAML, pydantic's BaseModel and Field): the
floor under smtrain's own share. `plan` reads nothing from AWS here (the spec names its role
and output path, $AWS_REGION the region), as for any spec that does. A PYTHONPATH set by the caller is kept, so
that a checkout that is not the installed one measures itself; `--against DIR` also times validate and plan of
another checkout (e.g. `git worktree add /tmp/before main`) in the same alternation: a before/after in one run.
Run: .venv/bin/python bench/bench_cli.py [--repeats N] [--against DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from _timing import alternate, report

REPO = Path(__file__).resolve().parent.parent
SPEC = "job_specs/mlp-gloo-none-2x-c5.2xlarge.yaml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--against", type=Path, metavar="DIR",
                        help="another checkout whose validate and plan are timed alongside (its code on PYTHONPATH)")
    args = parser.parse_args()
    smtrain = str(Path(sys.executable).parent / "smtrain")
    home = tempfile.mkdtemp(prefix="smtrain-bench-")  # no developer config (AWS or SageMaker) is read
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "AWS_REGION": "us-east-1",
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
           "AWS_EC2_METADATA_DISABLED": "true", "SAGEMAKER_SUPPRESS_V2_WARNING": "1",
           **({"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {})}
    # Under --against both checkouts start through `env` (one with PYTHONPATH=DIR), so that they pay alike.
    this = ["env", smtrain] if args.against else [smtrain]
    validate, plan = ["validate", SPEC], ["plan", SPEC, "-o", "json", "--job-name", "bench"]
    contenders = {
        "smtrain validate": [*this, *validate],
        "libraries alone": [sys.executable, "-c", "import click, yaml\nfrom pydantic import BaseModel, Field"],
        "sdk: import sagemaker.pytorch": [sys.executable, "-c", "import sagemaker.pytorch"],
        "smtrain plan -o json": [*this, *plan],
        "sdk: import + build estimator": [sys.executable, "bench/baseline_sdk_estimator.py"],
    }
    ratios = {
        "validate / sdk import": ("smtrain validate", "sdk: import sagemaker.pytorch", 0.05),
        "plan / sdk import": ("smtrain plan -o json", "sdk: import sagemaker.pytorch", 0.10),
        "plan / sdk import + estimator": ("smtrain plan -o json", "sdk: import + build estimator", None),
        "libraries alone / sdk import": ("libraries alone", "sdk: import sagemaker.pytorch", None),
    }
    if args.against:
        other = ["env", f"PYTHONPATH={args.against.resolve()}", smtrain]
        contenders.update({"--against: validate": [*other, *validate], "--against: plan -o json": [*other, *plan]})
        ratios.update({
            "--against: validate / sdk import": ("--against: validate", "sdk: import sagemaker.pytorch", None),
            "--against: plan / sdk import": ("--against: plan -o json", "sdk: import sagemaker.pytorch", None),
            "validate / --against's": ("smtrain validate", "--against: validate", None),
            "plan / --against's": ("smtrain plan -o json", "--against: plan -o json", None)})
    cpu: dict[str, list[float]] = {}
    timings = alternate(contenders, repeats=args.repeats, env=env, cwd=REPO, cpu=cpu)
    report("cli", timings, ratios, cpu=cpu, judged_by="cpu")


if __name__ == "__main__":
    main()
