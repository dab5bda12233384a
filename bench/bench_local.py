"""`smtrain local` against the same script started by hand with torchrun and the same environment.

All train the 2-host CPU gloo example (job_specs/mlp-gloo-none-2x-c5.2xlarge.yaml, its hyperparameters) with
2 processes of 1 thread each (the baselines by OMP_NUM_THREADS=1, smtrain by its own share of the cores, with
this shell's OMP_NUM_THREADS unset): smtrain emulates 2 hosts (mode none: one python per host, SM_* environment, run
directory, tarball, artifacts). Baselines: `torchrun --nproc-per-node 2 entrypoints/train.py <same args>` (the
issue's), and the two `python train.py` processes smtrain starts, started by hand with SM_HOSTS/SM_CURRENT_HOST
(what is left is smtrain's own overhead). Goals from issue 36: <= 1.0x wall time against torchrun and <= 1.05x
against the processes by hand, judged on CPU time (user + system of every process of the run: on a shared
machine the wall clock mostly measures the other work; both are printed). Then smtrain's own time, phase by
phase (_local_phases.py: planning, environment probes, preparing hosts, installing, launching, the job's
processes, packaging, and the start-up and the rest), wall and smtrain's own CPU, medians of --phase-runs runs:
what remains is printed and kept in bench/results/local.json. `--against DIR` also times (and phases) the
`smtrain local` of another checkout (its code on PYTHONPATH) in the same alternation: a before/after in one run.
Run: .venv/bin/python bench/bench_local.py [--repeats N] [--phase-runs N] [--against DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _timing import RESULTS, alternate, report

REPO = Path(__file__).resolve().parent.parent
SPEC = REPO / "job_specs" / "mlp-gloo-none-2x-c5.2xlarge.yaml"


def _hyperparameter_args() -> list[str]:
    sys.path.insert(0, str(REPO))
    from orchestrator.emulator.instances.container import user_args
    from orchestrator.specs.loader import load

    return user_args(load(SPEC).spec.hyperparameters)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--phase-runs", type=int, default=3, help="runs of smtrain local with its phases timed")
    parser.add_argument("--against", type=Path, metavar="DIR",
                        help="another checkout whose smtrain local is timed alongside (its code on PYTHONPATH)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="smtrain-bench-"))
    for name in ("model", "output", "checkpoints"):
        (work / "baseline" / name).mkdir(parents=True)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "SM_MODEL_DIR": str(work / "baseline" / "model"),
           "SM_OUTPUT_DIR": str(work / "baseline" / "output"),
           "SM_OUTPUT_DATA_DIR": str(work / "baseline" / "output"), "SAGEMAKER_BASE_DIR": str(work / "baseline")}
    bin_dir = Path(sys.executable).parent
    # Each smtrain run starts fresh (a reused run directory would resume from its checkpoints); so does the
    # baseline, whose checkpoint directory is emptied by the shell line before torchrun.
    # smtrain runs without this shell's OMP_NUM_THREADS: it gives each of its processes their share of the cores
    # itself (launch.thread_share), which is what a user who sets nothing gets.
    smtrain_run = ["sh", "-c", f"rm -rf {work}/runs && unset OMP_NUM_THREADS && exec {bin_dir}/smtrain local {SPEC} "
                               f"-q --run-dir {work}/runs"]
    # TMPDIR: torchrun's agent leaves a torchelastic_* folder behind in it; under /tmp those folders pile up, and each
    # emulated host binds every entry of /tmp back into its own.
    baseline = ["sh", "-c", f"rm -rf {work}/baseline/checkpoints/* && TMPDIR={work} exec {bin_dir}/torchrun "
                            "--nproc-per-node 2 "
                            f"--master-port 29871 {REPO}/entrypoints/train.py {' '.join(_hyperparameter_args())}"]
    train = f"{sys.executable} {REPO}/entrypoints/train.py {' '.join(_hyperparameter_args())}"
    by_hand = ["sh", "-c", " & ".join(
        f"SM_HOSTS='[\"algo-1\",\"algo-2\"]' SM_CURRENT_HOST={host} MASTER_ADDR=127.0.0.1 MASTER_PORT=29872 "
        f"SAGEMAKER_BASE_DIR={work}/{host} SM_MODEL_DIR={work}/{host}/model SM_OUTPUT_DIR={work}/{host}/output "
        f"SM_OUTPUT_DATA_DIR={work}/{host}/output {train}" for host in ("algo-1", "algo-2")) + "; wait"]
    by_hand[2] = f"rm -rf {work}/algo-*; mkdir -p {work}/algo-1/model {work}/algo-2/model; " + by_hand[2]
    contenders = {"smtrain local (2 emulated hosts)": smtrain_run, "bare torchrun, same script": baseline,
                  "2 processes by hand, SM_HOSTS": by_hand}
    ratios = {
        "smtrain local / torchrun": ("smtrain local (2 emulated hosts)", "bare torchrun, same script", 1.0),
        "smtrain local / by hand": ("smtrain local (2 emulated hosts)", "2 processes by hand, SM_HOSTS", 1.05),
    }
    against_env = {**env, "PYTHONPATH": str(args.against.resolve())} if args.against else None
    if args.against:
        contenders["--against: smtrain local"] = ["sh", "-c", f"rm -rf {work}/runs-against && PYTHONPATH="
                                                  f"{args.against.resolve()} exec {bin_dir}/smtrain local {SPEC} -q "
                                                  f"--run-dir {work}/runs-against"]
        ratios["--against / by hand"] = ("--against: smtrain local", "2 processes by hand, SM_HOSTS", None)
        ratios["smtrain local / --against's"] = ("smtrain local (2 emulated hosts)", "--against: smtrain local", None)
    cpu: dict[str, list[float]] = {}
    try:
        timings = alternate(contenders, repeats=args.repeats, env=env, cwd=work, cpu=cpu)
        phases = _phases(work, env, args.phase_runs, against_env)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    summary = report("local", timings, ratios, cpu=cpu, judged_by="cpu")
    ours, by_hand_name = "smtrain local (2 emulated hosts)", "2 processes by hand, SM_HOSTS"
    print(f"\nsmtrain local's own time, phase by phase (medians of {args.phase_runs} runs; wall, and smtrain's own "
          "CPU: the job's processes are what the by-hand baseline runs too, their CPU is not in this column):")
    print(f"  {'':<40} {'this checkout':>27}" + (f" {'--against':>27}" if args.against else ""))
    for phase, (wall, cpu_seconds, *other) in phases.items():
        print(f"  {phase:<40} {wall:8.3f} s wall {cpu_seconds:7.3f} s cpu"
              + (f" {other[0]:8.3f} s wall {other[1]:7.3f} s cpu" if other else ""))
    own_wall = phases["total"][0] - phases["the job's processes"][0]
    print(f"  {'own time (total less the job)':<40} {own_wall:8.3f} s wall; smtrain's own CPU in all: "
          f"{phases['total'][1]:.3f} s")
    print(f"  /tmp holds {len(os.listdir('/tmp'))} entries here: each host's namespace binds every one back into its "
          "own /tmp, and the run removes those mount points at its end")
    print(f"  measured smtrain - by hand: {summary['medians_s'][ours] - summary['medians_s'][by_hand_name]:.3f} s wall, "
          f"{summary['cpu_medians_s'][ours] - summary['cpu_medians_s'][by_hand_name]:.3f} s cpu")
    summary["phases_s"] = phases
    (RESULTS / "local.json").write_text(json.dumps(summary, indent=2) + "\n")


def _phases(work: Path, env: dict[str, str], runs: int,
            against_env: dict[str, str] | None = None) -> dict[str, list[float]]:
    """Medians, phase by phase, of `runs` runs of smtrain local under _local_phases.py: [wall, CPU] seconds, then
    [wall, CPU] of the --against checkout's runs (alternated with these) when there is one."""
    measured: dict[str, list[dict[str, list[float]]]] = {"this": [], "against": []}
    for index in range(runs):
        for who, environment in (("this", env), ("against", against_env)):
            if environment is None:
                continue
            out = work / f"phases-{who}-{index}.json"
            subprocess.run([sys.executable, str(Path(__file__).with_name("_local_phases.py")), "local", str(SPEC),
                            "-q", "--run-dir", str(work / f"phased-{who}-{index}")],
                           env={**environment, "PHASES_OUT": str(out)}, cwd=work, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            measured[who].append(json.loads(out.read_text()))
    return {phase: [statistics.median(run[phase][clock] for run in measured[who])
                    for who in ("this", "against") if measured[who] for clock in (0, 1)]
            for phase in measured["this"][0]}


if __name__ == "__main__":
    main()
