"""A rank that compiles C++ or CUDA writes nothing while it does: DeepSpeed's CPU Adam op, built with torch's
cpp_extension on first use, took 85 s, and a silent first run looks hung. So a compile is said on the console when
it starts, and again each further `REPEAT_SECONDS` it lasts.

A compile is told from the rank's child processes, which the stall check's sampler reads anyway (activity.py):
torch's JIT extensions (cpp_extension.load, load_inline, DeepSpeed's op builder) run ninja, which runs c++ and
cc1plus, or nvcc; a compile without ninja (torch.compile's C++ kernels, a script's own g++) is C++ code, not an
extension the build cache keeps. A rank's first compile is said at its start, a later one only once it has lasted
REPEAT_SECONDS: torch.compile compiles in short bursts, each of which would otherwise be a line.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from orchestrator.emulator.supervising.stacks import RankProcess
from orchestrator.observing.metric_series import format_duration

EXTENSION_BUILDER = "ninja"
"""What torch's cpp_extension builds with: a rank running it builds a JIT extension."""
COMPILERS = (EXTENSION_BUILDER, "nvcc", "cicc", "ptxas", "cudafe++", "fatbinary", "nvlink", "c++", "g++", "gcc",
             "cc", "clang++", "clang", "cc1plus", "cc1", "as", "collect2", "ld")
"""The programs of a C++/CUDA compile, in the order the notice names them (process names, as /proc shows them)."""
REPEAT_SECONDS = 30.0


@dataclass
class _Compile:
    """One rank's compile while it lasts: when it was first seen, when it was last said, which programs it ran."""

    started: float
    said_after: float | None = None
    tools: set[str] = field(default_factory=set)


class CompileNotices:
    """What to say of the ranks' compiles, told their child processes at each sample."""

    def __init__(self, kept_for_next_run: bool) -> None:
        """`kept_for_next_run`: a JIT extension goes to smtrain's build cache (the job leaves TORCH_EXTENSIONS_DIR
        to smtrain), so a next run loads it instead of compiling."""
        self._kept_for_next_run = kept_for_next_run
        self._compiles: dict[RankProcess, _Compile] = {}
        self._said: set[RankProcess] = set()
        """The ranks whose first compile was said."""

    def observe(self, children: Mapping[RankProcess, Collection[str]], now: float) -> str | None:
        """`children`: the names of each rank's live child processes (and theirs); the notice due now, if any."""
        ongoing: dict[RankProcess, _Compile] = {}
        due: list[RankProcess] = []
        for rank, names in children.items():
            tools = {name for name in names if name in COMPILERS}
            if not tools:
                continue
            compile_ = ongoing[rank] = self._compiles.get(rank) or _Compile(started=now)
            compile_.tools |= tools
            lasted = now - compile_.started
            if rank not in self._said or lasted - (compile_.said_after or 0.0) >= REPEAT_SECONDS:
                compile_.said_after = lasted
                self._said.add(rank)
                due.append(rank)
        self._compiles = ongoing
        return self._text(due) if due else None

    def _text(self, due: list[RankProcess]) -> str:
        """`algo-1 rank 0: compiling a C++/CUDA extension (ninja, c++, cc1plus) for 40 s; the next run reuses it
        from smtrain's build cache`."""
        compiles = [self._compiles[rank] for rank in due]
        tools = set().union(*(compile_.tools for compile_ in compiles))
        lasted = max(compile_.said_after or 0.0 for compile_ in compiles)
        extension = EXTENSION_BUILDER in tools
        what = "a C++/CUDA extension" if extension else "C++/CUDA code"
        text = (f"{', '.join(_who(rank) for rank in due)}: compiling {what} "
                f"({', '.join(tool for tool in COMPILERS if tool in tools)})")
        text += f" for {format_duration(lasted)}" if lasted >= REPEAT_SECONDS else ", which writes nothing until done"
        if extension and self._kept_for_next_run:
            text += "; the next run reuses it from smtrain's build cache"
        return text


def _who(rank: RankProcess) -> str:
    return f"{rank.host} rank {rank.rank}" if rank.rank is not None else rank.name
