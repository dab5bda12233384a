"""A host's lines with each MPI rank's line whole again, where mpirun's `--tag-output` tagged it in pieces.

Open MPI 4's mpirun (the one SageMaker's images run) tags each piece of a rank's output as it arrives, not each
line. A piece without its newline (`print(..., end="")`, a progress bar's carriage returns, an exception line that
Python writes word by word) runs straight into the next piece, another rank's too, and the rest of the line comes
later under a tag of its own, its newline sometimes alone:

    [1,mpirank:1,algo-2]<stdout>:step=0 loss=[1,mpirank:0,algo-1]<stdout>:step=0 loss=[1,mpirank:1,algo-2]<stdout>:1.00
    [1,mpirank:0,algo-1]<stdout>:0.00[1,mpirank:2,algo-3]<stdout>:
    [1,mpirank:0,algo-1]<stdout>:

SageMaker's CloudWatch holds such lines as the toolkit copied them; a local run's log holds them as mpirun printed
them. Both readers hand them on rejoined: each rank's text, by its tag, up to that rank's own line end, whatever
other ranks wrote in between (`[1,mpirank:0,algo-1]<stdout>:step=0 loss=0.00`), so a traceback reads whole and a
reader of a rank's lines sees that rank's lines. The rules, for lines as both readers give them (a progress bar's
carriage returns already line breaks, so each of its states is a line):

* A line's last piece ends where the line ends: its rank's line is complete, the pieces held for it first.
* Every other piece is held for its rank.
* Text before a line's first tag, when a tag follows it, is a bar state of the rank whose piece ended the line
  before (a carriage return inside that piece): held for that rank.
* A line without a tag (mpirun's own; a bar's later states under Open MPI 5, which tags whole lines) stays as
  it is.
* What is still held when the lines end (a rank that died mid-line) is handed on as its rank's line.

SageMaker's metric definitions are applied to the lines as logged, not to these (docs/local.md says so).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

_TAG = re.compile(r"\[\d+,(?:mpirank:)?(\d+)(?:,[^\]\[]*)?\]<(std\w+)>:")
"""mpirun's `[1,3]<stderr>:`, as the toolkit relabels it `[1,mpirank:3,algo-2]<stderr>:`."""


@dataclass(frozen=True)
class Piece:
    """One piece of a rank's line: its text, and where it came: the `line`-th line handed in (from 0), at `start`."""

    line: int
    start: int
    text: str


@dataclass(frozen=True)
class RankLine:
    """A rank's line as its pieces make it: the tag its first piece came under, then the pieces' text."""

    tag: str
    pieces: tuple[Piece, ...]

    @property
    def text(self) -> str:
        return self.tag + "".join(piece.text for piece in self.pieces)


class RankLines:
    """One host's lines, read in order, rejoined rank by rank; not thread-safe: one per reader of a host."""

    def __init__(self) -> None:
        self._held: dict[tuple[str, str], tuple[str, list[Piece]]] = {}
        """By rank and stream: the tag its line began under and its pieces so far."""
        self._last: tuple[str, str, str] | None = None
        """The rank, stream and tag of the piece that ended the line before: whose bar state an untagged lead is."""
        self._count = 0
        """The lines handed in so far: the next one's number."""
        self._open: Counter[int] = Counter()
        """By line number: how many pieces of lines still unended it holds."""

    def line(self, text: str) -> list[str]:
        """The lines that `text` completes: none while it holds only pieces, several where it ends more than one."""
        return [whole.text for whole in self.completed(text)]

    def end(self) -> list[str]:
        """At the end of the lines: what each rank still held, as its line."""
        return [whole.text for whole in self.unended()]

    def completed(self, text: str) -> list[RankLine]:
        """`line`, each line with the pieces it was made of."""
        number, self._count = self._count, self._count + 1
        tags = list(_TAG.finditer(text))
        if not tags:
            return [RankLine("", (Piece(number, 0, text),))]
        lead = text[:tags[0].start()]
        completed = []
        if lead and self._last is not None:
            self._hold(self._last, Piece(number, 0, lead))
        elif lead:
            completed.append(RankLine("", (Piece(number, 0, lead),)))
        for tag, after in zip(tags, [*tags[1:], None]):
            piece = Piece(number, tag.end(), text[tag.end():after.start() if after else len(text)])
            key = (tag[1], tag[2], tag[0])
            self._hold(key, piece)
            if after is None:
                started, pieces = self._held.pop(key[:2])
                self._ended(pieces)
                completed.append(RankLine(started, tuple(pieces)))
                self._last = key
        return completed

    def unended(self) -> list[RankLine]:
        """`end`, each line with the pieces it was made of."""
        ended = [RankLine(started, tuple(pieces)) for started, pieces in self._held.values()]
        self._held.clear()
        self._open.clear()
        return ended

    def holds_unended(self, line: int) -> bool:
        """Whether the `line`-th line handed in holds a piece of a line still unended."""
        return line in self._open

    def _hold(self, key: tuple[str, str, str], piece: Piece) -> None:
        self._open[piece.line] += 1
        self._held.setdefault(key[:2], (key[2], []))[1].append(piece)

    def _ended(self, pieces: list[Piece]) -> None:
        for piece in pieces:
            self._open[piece.line] -= 1
            if not self._open[piece.line]:
                del self._open[piece.line]


class MaskedRankLines:
    """One host's lines rejoined (RankLines), a line rejoined from pieces masked again whole (`mask`): each piece
    was masked alone, and a secret a rank wrote across pieces was none of them."""

    def __init__(self, mask: Callable[[str], str]) -> None:
        self._ranks = RankLines()
        self._mask = mask

    def line(self, text: str) -> list[str]:
        """The lines that `text`, the host's next line, completes."""
        return [whole if whole == text else self._mask(whole) for whole in self._ranks.line(text)]

    def end(self) -> list[str]:
        """At the end of the host's lines: what each rank left unended, masked."""
        return [self._mask(whole) for whole in self._ranks.end()]


class HostsRankLines:
    """Several hosts' lines as they come (a reading thread per host), each host's rejoined and masked by a
    MaskedRankLines of its own."""

    def __init__(self, hosts: Iterable[str], mask: Callable[[str], str]) -> None:
        self._hosts = {host: MaskedRankLines(mask) for host in hosts}

    def line(self, host: str, text: str) -> list[str]:
        """The lines of `host` that `text`, its next line, completes."""
        return self._hosts[host].line(text)

    def end(self) -> list[tuple[str, str]]:
        """At the end of the hosts' lines: each host and a line a rank of it left unended."""
        return [(host, whole) for host, lines in self._hosts.items() for whole in lines.end()]


def rejoined(lines: Iterable[str]) -> list[str]:
    """`lines` of one host, each rank's line whole."""
    ranks = RankLines()
    return [whole for text in lines for whole in ranks.line(text)] + ranks.end()
