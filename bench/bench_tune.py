"""`smtrain tune local` with 2 trials at a time against the same trials run one after another.

The search is the example's (job_specs/tuning/mlp-lr-search.yaml over mlp-cpu.yaml) as a Random search with a
fixed seed, so both contenders run the same 6 trials with the same values (checked after each pair of runs),
each a real emulated job of 2 epochs with 1 thread. The ratio is the wall time of `--parallel 2` over that of
`--parallel 1`: what running trials side by side buys on this machine (1.0 would be nothing, 0.5 the ideal).
Run: .venv/bin/python bench/bench_tune.py [--repeats N] [--trials N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from _timing import alternate, report

REPO = Path(__file__).resolve().parent.parent
JOB = REPO / "job_specs" / "tuning" / "mlp-cpu.yaml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--trials", type=int, default=6)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="smtrain-bench-tune-"))
    search = work / "search.yaml"
    search.write_text(f"""\
job: {JOB}
name: bench-tune
objective: {{metric: "train:loss", type: Minimize}}
strategy: Random
random_seed: 7
parameters:
  lr: {{type: continuous, min: 0.001, max: 0.5, scaling: Logarithmic}}
  batch-size: {{type: integer, min: 16, max: 128, scaling: Logarithmic}}
  optimizer: {{type: categorical, values: [sgd, adam]}}
max_jobs: {args.trials}
max_parallel_jobs: 2
""")
    smtrain = Path(sys.executable).parent / "smtrain"
    env = {**os.environ, "AWS_REGION": os.environ.get("AWS_REGION", "us-east-1")}

    def command(parallel: int) -> list[str]:
        out = work / f"parallel-{parallel}"
        return ["sh", "-c", f"rm -rf {out} && exec {smtrain} tune local {search} --parallel {parallel} "
                            f"--set hyperparameters.epochs=2 --run-dir {out} -o json > {out}.json"]

    try:
        timings = alternate({"tune local, 2 trials at a time": command(2),
                             "tune local, one trial at a time": command(1)}, repeats=args.repeats, env=env, cwd=work)
        chosen = [sorted(json.dumps(trial["hyperparameters"], sort_keys=True)
                         for trial in json.loads((work / f"parallel-{parallel}.json").read_text())["trials"])
                  for parallel in (2, 1)]
        if chosen[0] != chosen[1]:
            raise SystemExit("the two searches ran different trials: the comparison is void")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report("tune", timings, {
        "2 at a time / one at a time": ("tune local, 2 trials at a time", "tune local, one trial at a time", None),
    })
    print(f"  ({args.trials} trials each, the same values in both; {os.cpu_count()} cores here)")


if __name__ == "__main__":
    main()
