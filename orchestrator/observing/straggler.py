"""Which rank a collective timeout waited for, under NCCL's watchdog and under gloo. Every rank that entered the
collective reports the timeout (`[Rank 5] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=42,
OpType=ALLREDUCE, ...) ran for 1800000 milliseconds before timing out.`) and aborts; the rank the others waited
for says nothing, and its launcher later stops it. The lowest reporting rank is therefore never the cause: the
rank the logs show that reported no timeout is, or the ranks torch's desync report (TORCH_NCCL_DESYNC_DEBUG=1)
names as lagging. gloo's timeout (`Timed out waiting 1800000ms for recv operation to complete`) names neither the
collective nor a rank: the ranks that reported it are those whose error it is, and the ranks of the job's rank
table (on the hosts whose log was read) that did not are the ones they waited for.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

_WATCHDOG = re.compile(r"\[Rank (?P<rank>\d+)\] Watchdog caught collective operation timeout: "
                       r"WorkNCCL\((?:SeqNum=(?P<seq>\d+), )?OpType=(?P<op>\w+).*?\) ran for (?P<ms>\d+) milliseconds")
_GLOO = re.compile(r"Timed out waiting (?P<ms>\d+)ms for (?P<op>recv|send) operation to complete")
_LAGGING = re.compile(r"ranks \[(?P<ranks>[\d, ]+)\] are the lagging ranks that caused this timeout")
"""torch's desync report (TORCH_NCCL_DESYNC_DEBUG=1) when ranks never joined any collective."""


@dataclass(frozen=True)
class CollectiveTimeout:
    """One collective that timed out: who waited in it and who, as far as the logs show, never came."""

    operation: str
    reported: str
    """The timeout as the waiting ranks reported it, without the ranks: `Watchdog caught collective operation
    timeout: ALLREDUCE (SeqNum=42) ran for 1800000 milliseconds`."""
    waiting: tuple[int, ...]
    missing: tuple[int, ...]
    named_by_torch: bool = False
    """`missing` is torch's desync report's, not read from who reported the timeout."""

    def said(self) -> str:
        """`Watchdog caught collective operation timeout: ALLREDUCE (SeqNum=42) ran for 1800000 milliseconds on
        ranks 0-2, 4-7; rank 3 reported no timeout: it never joined it`."""
        said = f"{self.reported} on {_ranks(self.waiting)}"
        if not self.missing:
            return said
        if self.named_by_torch:
            return f"{said}; torch's desync report names {_ranks(self.missing)} as never joining it"
        if len(self.missing) == 1:
            return f"{said}; {_ranks(self.missing)} reported no timeout: it never joined it"
        return f"{said}; {_ranks(self.missing)} reported no timeout: one of them never joined it"

    def fix(self) -> str:
        waiting_for = _ranks(self.missing)
        return (f"the other ranks waited in {self.operation} for {waiting_for}: read its last lines for where it "
                "stalled or what it did instead (a DataLoader that hangs, a branch only some ranks take, a save or "
                "evaluation run on one rank while the others enter the next collective); raise the process group's "
                "timeout only when that step is legitimately slower")


def collective_timeout(exception: str, lines: Iterable[str], ranks_seen: Iterable[int]) -> CollectiveTimeout | None:
    """The collective a watchdog timeout (`exception`) names, with every rank of `lines` that reported the same one
    and the ranks of `ranks_seen` (those the logs show: their output, a launcher's report) that did not; None where
    `exception` is no NCCL watchdog timeout."""
    said = _WATCHDOG.search(exception)
    if said is None:
        return None
    text = "\n".join(lines)
    waiting = sorted({int(match["rank"]) for match in _WATCHDOG.finditer(text)
                      if (match["seq"], match["op"]) == (said["seq"], said["op"])})
    lagging = _LAGGING.search(text)
    if lagging:
        missing = sorted({int(rank) for rank in lagging["ranks"].split(",") if rank.strip()})
    else:
        missing = sorted(set(ranks_seen) - set(waiting))
    which = f"{said['op']} (SeqNum={said['seq']})" if said["seq"] else said["op"]
    reported = f"Watchdog caught collective operation timeout: {which} ran for {said['ms']} milliseconds"
    return CollectiveTimeout(said["op"], reported, tuple(waiting), tuple(missing), named_by_torch=lagging is not None)


def is_gloo_timeout(exception: str) -> bool:
    return _GLOO.search(exception) is not None


def gloo_timeout(exception: str, waiting: Iterable[int], ranks: Iterable[int]) -> CollectiveTimeout | None:
    """The collective gloo timed out (`exception`), with the ranks that reported the same timeout (`waiting`) and
    those of `ranks` (every rank the logs show, and the rank table's on the hosts whose log was read) that did
    not; None where `exception` is no gloo timeout, or no rank is known to have reported it (every rank would then
    look absent)."""
    said = _GLOO.search(exception)
    waited = sorted(set(waiting))
    if said is None or not waited:
        return None
    missing = sorted(set(ranks) - set(waited))
    reported = f"gloo: Timed out waiting {said['ms']}ms for {said['op']} operation to complete"
    return CollectiveTimeout("a collective", reported, tuple(waited), tuple(missing))


def _ranks(ranks: Sequence[int]) -> str:
    """`rank 3`, `ranks 0-2, 4-7`: runs of consecutive ranks shortened."""
    runs: list[list[int]] = []
    for rank in ranks:
        if runs and rank == runs[-1][-1] + 1:
            runs[-1].append(rank)
        else:
            runs.append([rank])
    shown = ", ".join(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs)
    return f"rank {shown}" if len(ranks) == 1 else f"ranks {shown}"
