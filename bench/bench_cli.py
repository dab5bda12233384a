"""`smtrain validate` and `smtrain plan` against the bare SDK v2, side by side in one run.

Each contender is a fresh process, run in turn (A B C D A B C D ...) so machine noise hits all alike; medians.
Baselines: `python -c "import sagemaker.pytorch"` (what any SDK v2 script pays before it does anything) and
`baseline_sdk_estimator.py` (import + Session + PyTorch estimator construction). Goals from issue 36:
validate <= 0.05x and plan <= 0.10x the SDK import. `plan` reads nothing from AWS here (the spec names its role
and output path, $AWS_REGION the region), as for any spec that does. A PYTHONPATH set by the caller is kept, so
that a checkout that is not the installed one measures itself. Run: .venv/bin/python bench/bench_cli.py
[--repeats N]
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
    args = parser.parse_args()
    smtrain = str(Path(sys.executable).parent / "smtrain")
    home = tempfile.mkdtemp(prefix="smtrain-bench-")  # no developer config (AWS or SageMaker) is read
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "AWS_REGION": "us-east-1",
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
           "AWS_EC2_METADATA_DISABLED": "true", "SAGEMAKER_SUPPRESS_V2_WARNING": "1",
           **({"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {})}
    timings = alternate({
        "smtrain validate": [smtrain, "validate", SPEC],
        "sdk: import sagemaker.pytorch": [sys.executable, "-c", "import sagemaker.pytorch"],
        "smtrain plan -o json": [smtrain, "plan", SPEC, "-o", "json", "--job-name", "bench"],
        "sdk: import + build estimator": [sys.executable, "bench/baseline_sdk_estimator.py"],
    }, repeats=args.repeats, env=env, cwd=REPO)
    report("cli", timings, {
        "validate / sdk import": ("smtrain validate", "sdk: import sagemaker.pytorch", 0.05),
        "plan / sdk import": ("smtrain plan -o json", "sdk: import sagemaker.pytorch", 0.10),
        "plan / sdk import + estimator": ("smtrain plan -o json", "sdk: import + build estimator", None),
    })


if __name__ == "__main__":
    main()
