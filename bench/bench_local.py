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
processes, packaging, and the start-up and the rest), wall, smtrain's own CPU and its child processes' CPU,
medians of --phase-runs runs, each after a run of the processes by hand: the difference to them, part by part
(smtrain's own, probes, each host's hostfs.py set-up, the job's shells and ranks), is printed and kept in
bench/results/local.json. `--against DIR` also times (and phases) the
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

from _timing import RESULTS, alternate, report, run_once

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
        phases = _phases(work, env, args.phase_runs, against_env, by_hand)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    summary = report("local", timings, ratios, cpu=cpu, judged_by="cpu")
    ours, by_hand_name = "smtrain local (2 emulated hosts)", "2 processes by hand, SM_HOSTS"
    print(f"\nsmtrain local's time, phase by phase (medians of {args.phase_runs} runs; wall, smtrain's own CPU, and "
          "the CPU of its child processes that ended in the phase: probes, and in the job's phase each host's "
          "hostfs.py, shell and ranks):")
    print(f"  {'':<42} {'this checkout':>37}" + (f" {'--against':>37}" if args.against else ""))
    for phase, clocks in phases.items():
        if phase in (BY_HAND, RANKS_LESS_BY_HAND, BEYOND_BY_HAND):
            continue
        print(f"  {phase:<42}" + "".join(f" {wall:7.3f} s wall {own:6.3f} cpu {children:6.3f} children"
                                         for wall, own, children in zip(*[iter(clocks)] * 3, strict=True)))
    own_wall = phases["total"][0] - phases["the job's processes"][0]
    print(f"  {'own time (total less the job)':<42} {own_wall:7.3f} s wall; smtrain's own CPU in all: "
          f"{phases['total'][1]:.3f} s")
    by_hand_cpu = phases[BY_HAND][2]
    job_children, holders = phases["the job's processes"][2], phases[HOLDERS][2]
    other_children = phases["total"][2] - job_children
    print(f"  what smtrain's processes spend beyond by hand's {by_hand_cpu:.3f} s CPU (runs by hand alternated with "
          "the phased runs; medians):")
    for name, seconds, what in (
            ("smtrain's own CPU", phases["total"][1], "the phases above"),
            ("child processes outside the job's phase", other_children, "probes: the column above"),
            ("hostfs.py set-up, all hosts", holders, "each host's namespaces, /opt/ml, /tmp's binds"),
            ("the job's shells and ranks, less by hand", phases[RANKS_LESS_BY_HAND][2], "median of each pair"),
            ("in all", phases[BEYOND_BY_HAND][2], "median of each pair; the parts are medians too")):
        print(f"    {name:<41} {seconds:7.3f} s cpu ({what})")
    print(f"  /tmp holds {len(os.listdir('/tmp'))} entries here: each host's namespace binds every one back into its "
          "own /tmp, and the run removes those mount points at its end")
    print(f"  measured smtrain - by hand: {summary['medians_s'][ours] - summary['medians_s'][by_hand_name]:.3f} s wall, "
          f"{summary['cpu_medians_s'][ours] - summary['cpu_medians_s'][by_hand_name]:.3f} s cpu (the alternation's "
          "medians)")
    summary["phases_s"] = phases
    (RESULTS / "local.json").write_text(json.dumps(summary, indent=2) + "\n")


BY_HAND = "2 processes by hand (alternated)"
HOLDERS = "of the job's: hostfs.py set-up (children)"
RANKS_LESS_BY_HAND = "of the job's: shells, ranks less by hand"
BEYOND_BY_HAND = "all CPU less by hand"


def _phases(work: Path, env: dict[str, str], runs: int, against_env: dict[str, str] | None,
            by_hand: list[str]) -> dict[str, list[float]]:
    """Medians, phase by phase, of `runs` runs of smtrain local under _local_phases.py: [wall, CPU, children's CPU]
    seconds, then the same of the --against checkout's runs (alternated with these) when there is one. The
    processes by hand run once before each run of this checkout: BY_HAND (their CPU, in the children's column),
    and pair by pair RANKS_LESS_BY_HAND (the job's children less the hostfs.py set-up less the run by hand) and
    BEYOND_BY_HAND (smtrain's own CPU and its children's less the run by hand)."""
    measured: dict[str, list[dict[str, list[float]]]] = {"this": [], "against": []}
    for index in range(runs):
        _, by_hand_cpu = run_once(by_hand, env, work)
        for who, environment in (("this", env), ("against", against_env)):
            if environment is None:
                continue
            out = work / f"phases-{who}-{index}.json"
            subprocess.run([sys.executable, str(Path(__file__).with_name("_local_phases.py")), "local", str(SPEC),
                            "-q", "--run-dir", str(work / f"phased-{who}-{index}")],
                           env={**environment, "PHASES_OUT": str(out)}, cwd=work, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            run = json.loads(out.read_text())
            run[BY_HAND] = [0.0, 0.0, by_hand_cpu]
            run[BEYOND_BY_HAND] = [0.0, 0.0, run["total"][1] + run["total"][2] - by_hand_cpu]
            run[RANKS_LESS_BY_HAND] = [0.0, 0.0, run["the job's processes"][2] - run[HOLDERS][2] - by_hand_cpu]
            measured[who].append(run)
    return {phase: [statistics.median(run[phase][clock] for run in measured[who])
                    for who in ("this", "against") if measured[who] for clock in (0, 1, 2)]
            for phase in measured["this"][0]}


if __name__ == "__main__":
    main()
