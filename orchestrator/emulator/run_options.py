"""The options of a local run, declared once (torchx's runopts): `Options`, whose every field is one option.

A field's name is the API's keyword (`orchestrator.run(spec, backend="local", run_dir=...)`); its default is the
default everywhere; its `Declared` metadata says the rest: the help, the command-line flag, the metavar, the
lowest value it takes, another option it needs, and how a given value becomes the field's (`--input NAME=PATH`
pairs become paths, `--python python3` an absolute interpreter). From this one class, `cli/local.py` generates
`smtrain local`'s flags, `options_from` checks the API's keywords, and `tune local` writes the command line each
trial runs with (`command_words`). Adding an option is adding a field here and reading it where the run uses it.

Standard library only: `smtrain local --help` and `smtrain tune --help` read it without loading the emulator.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator import declaration
from orchestrator.declaration import Declared, declared

DEFAULT_STALL_TIMEOUT_SECONDS = 300.0
DEFAULT_STOP_GRACE_SECONDS = 120.0
"""SageMaker's grace between StopTrainingJob's SIGTERM and SIGKILL."""
TRIAL_OF_SEARCH = "SMTRAIN_TRIAL_OF_SEARCH"
"""Set, to the search's name, in the environment of each trial `tune local` runs: the trial's `smtrain local`
leaves a CI's annotations and step summary to its search, which reports once for all its trials (and the
training script sees the CI's variables as in any other run)."""

def _input_paths(inputs: Mapping[str, Any]) -> dict[str, Path]:
    """Channel NAME to a local path; an empty path would silently mean the current directory."""
    empty = [name for name, path in inputs.items() if not str(path or "")]
    if empty:
        raise ValueError(f"channel {empty[0]!r} has no path (give its folder, e.g. ./data)")
    return {name: Path(path) for name, path in inputs.items()}


def _host_order(order: str | tuple[str, ...]) -> tuple[str, ...] | None:
    """`algo-3,algo-1` (the flag's word) or a sequence of host names."""
    names = tuple(filter(None, order.split(","))) if isinstance(order, str) else tuple(order)
    return names or None


def _interpreter(python: str | Path) -> str:
    """A path, or a name on PATH such as python3, as an absolute path."""
    found = shutil.which(str(python))
    if found is None:
        raise ValueError(f"{str(python)!r} is not an executable file here (nor a command on PATH)")
    return str(Path(found).absolute())


@dataclass(frozen=True)
class Options:
    """How a job runs here: what preparation reads (inputs, hosts, processes, interpreter, stand-in) and how the
    run goes (spot interruption, smoke, stall watch, stop grace). Field order is the order of `--help`."""

    inputs: dict[str, Path] = declared(
        dict, takes="pairs", flag="--input", metavar="NAME=PATH", normalize=_input_paths,
        help="Local data for channel NAME (overrides the spec's inputs.NAME; repeatable).")
    run_dir: Path | None = declared(
        None, takes="directory", normalize=Path,
        help="Where the emulated hosts live (default runs/<job-name>/). Reusing one resumes from its checkpoints.")
    processes_per_host: int | None = declared(
        None, takes="int", minimum=1,
        help="Start this many processes per host instead of the instance's GPU count (to fit a GPU job on this "
             "machine).")
    cpus: int | None = declared(
        None, takes="int", minimum=1, metavar="N",
        help="The cores this run's training processes share (default: every core smtrain may use, for a run of "
             "several processes): each gets OMP_NUM_THREADS = N / their number, at least 1, unless the job's "
             "environment or your shell sets it (torchrun sets 1 for several workers per host).")
    simulate_spot_interruption: float | None = declared(
        None, takes="number", minimum=0, metavar="AFTER_SECONDS",
        help="Interrupt the job after this many seconds as a spot reclaim would, restore the checkpoints on fresh "
             "instances and run it to the end.")
    simulate_spot_interruption_at_step: int | None = declared(
        None, takes="int", minimum=1, metavar="STEP",
        help="The same interruption once a progress line shows this step: at the same point of training on any "
             "machine, however fast (what a CI test of resuming wants).")
    master_host: str | None = declared(
        None, metavar="algo-N",
        help="Put this host first in the instance group, as SageMaker sometimes does: it becomes the master in "
             "distributed modes (catches scripts that assume algo-1) [default: algo-1].")
    host_order: tuple[str, ...] | None = declared(
        None, metavar="algo-N,...", normalize=_host_order, word=",".join,
        help="The instance group's host order, which SageMaker does not promise (e.g. algo-3,algo-1,algo-2): the "
             "first is the master in distributed modes, MPI ranks are placed in this order; hosts not named follow "
             "[default: algo-1,algo-2,...].")
    link_inputs: bool = declared(
        False, takes="flag",
        help="Link local channel files instead of copying them per host (hard links), mounted read-only in each "
             "host's namespace: the job cannot change them. A file that cannot be hard-linked (another file system "
             "than the run directory) is copied, and the run names it. Where hosts get no mount namespace, files the job "
             "deletes, renames or creates stay in the run, but WRITING INTO an existing channel file changes your "
             "original.")
    smoke_seconds: float | None = declared(
        None, takes="number", flag="--smoke", minimum=1, metavar="SECONDS",
        help="A bounded run for CI: the real-sized job (every host, every rank) for at most SECONDS, then stopped "
             "as StopTrainingJob stops it (SIGTERM to every rank, the grace period, checkpoints kept). Exit 0 when "
             "every rank started and none failed before the deadline (or the job completed sooner); a rank has "
             "started once a process of its host runs it (torchrun's worker with its RANK, mpirun's rank with its "
             "OMPI_COMM_WORLD_RANK, the entry point on each host in mode none). Prints the ranks started, the steps "
             "reached and the last loss.")
    smoke_steps: int | None = declared(
        None, takes="int", minimum=1, metavar="N", needs="smoke_seconds",
        help="With --smoke: end the smoke as soon as every rank has started and a line shows step N (step=N/M, "
             "step N/M, step=N, step: N, global_step=N, an unlabelled tqdm bar as transformers' Trainer prints, "
             "Lightning's bar), stopped as at the deadline "
             "(checkpoints kept); fail when the deadline comes first. A CI smoke then takes what the job needs to "
             "start and train N steps, on any machine, and the deadline only bounds a job that never gets there.")
    exact_autocast: bool = declared(
        False, takes="flag",
        help="Under the CPU stand-in, compute CUDA autocast regions in bfloat16 even on a CPU without native "
             "bfloat16 (AVX-512 BF16, AMX or Arm BF16), which emulates it about ten times slower. By default such "
             "a CPU computes them in float32 and says so; what the script converts itself keeps its dtype.")
    gpu_standin: bool = declared(
        True, takes="flag", flag="--no-gpu-standin",
        help="Run a GPU instance's processes as this machine is. By default, where this machine has fewer GPUs "
             "per host than the instance (or none), every training process gets smtrain's CPU stand-in for CUDA "
             "(torch.cuda answers as on the instance, nccl runs over gloo, smdistributed is importable); with "
             "enough GPUs it is off anyway and real NCCL runs.")
    python: str = declared(
        sys.executable, metavar="PATH", normalize=_interpreter,
        help="The interpreter that runs the job (its torch, torchvision and other packages stand for the image's), "
             "e.g. /usr/bin/python3 for Debian's torch and torchvision; smtrain itself stays in its own. Default: "
             "smtrain's own interpreter.")
    stall_timeout_seconds: float | None = declared(
        DEFAULT_STALL_TIMEOUT_SECONDS, takes="number", flag="--stall-timeout", minimum=0, metavar="SECONDS",
        normalize=lambda seconds: seconds or None, word=lambda seconds: format(seconds or 0, "g"), show_default=True,
        help="When no rank writes a line or advances a step for this long, the run is silent. Silent while some "
             "host's work still uses the CPU (a long step, a JIT compile, a data worker): slow, said with the "
             "busiest rank and where it is, again after each further SECONDS, never stopped. Silent with every "
             "rank idle (blocked in a collective, sleeping, waiting on a lock): hung: print every rank's Python "
             "stack, name the ranks waiting in a collective and the one they wait for, and stop (exit 4). A "
             "smoke's deadline (--smoke) governs a slow run. 0: never. See docs/local-runs-hangs.md.")
    stop_grace_seconds: float = declared(
        DEFAULT_STOP_GRACE_SECONDS, takes="number", flag="--stop-grace", minimum=0, metavar="SECONDS", hidden=True,
        help="How long a stopped run's ranks get between SIGTERM and SIGKILL to checkpoint (SageMaker gives 120 "
             "s; tests shorten it).")

    @property
    def hosts_in_order(self) -> tuple[str, ...] | None:
        """The instance group's host order: `host_order`, else `master_host` first (the other hosts follow)."""
        return self.host_order or ((self.master_host,) if self.master_host else None)


def declarations() -> dict[str, Declared]:
    """Each local run option's name (the field's, the API's keyword) and its declaration, in declaration order."""
    return declaration.declarations(Options)


def default_of(name: str) -> Any:
    return declaration.default_of(Options, name)


def options_from(keywords: Mapping[str, Any]) -> Options:
    """The API's keywords (`orchestrator.run(spec, backend="local", **keywords)`) as Options.

    Raises:
        SpecError: an unknown keyword (naming the nearest), a value out of range or of the wrong kind.
    """
    return declaration.options_from(Options, keywords, "a local run")


def flag_of(name: str) -> str:
    return declaration.flag_of(Options, name)


def switch_keywords() -> dict[str, str]:
    """Each switch's flag and the keyword that does the same (`--no-gpu-standin`: `gpu_standin=False`), for
    `errors.in_keywords`: a notice of a run started from Python names what Python takes, not `smtrain local`'s
    flags."""
    return {flag_of(name): f"{name}={not default_of(name)}"
            for name, option in declarations().items() if option.takes == "flag"}


def command_words(options: Options) -> list[str]:
    """`smtrain local`'s flags for every option that differs from its default: the command line of a run with
    these options (how `tune local` starts each trial)."""
    words: list[str] = []
    for name, option in declarations().items():
        value = getattr(options, name)
        if value == default_of(name):
            continue
        if option.takes == "flag":
            words.append(flag_of(name))
        elif option.takes == "pairs":
            words += [item for key, path in value.items() for item in (flag_of(name), f"{key}={path}")]
        else:
            words += [flag_of(name), option.word(value)]
    return words
