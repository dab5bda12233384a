"""A host's log lines written with a secret masked that an MPI rank wrote across Open MPI 4's pieces.

Open MPI 4's `mpirun --tag-output` tags each piece of a rank's output, not each line (observing/rank_lines.py), so a
credential a rank wrote in two pieces can sit in two log lines, another rank's piece between them:

    [1,mpirank:0,algo-1]<stdout>:token hf_Ab12Cd34[1,mpirank:1,algo-2]<stdout>:step=1
    [1,mpirank:0,algo-1]<stdout>:Ef56Gh78Ij90Kl12Mn34Op56Qr

Masking each log line as it comes masks neither: neither part is a credential alone. So a log line is held while
a rank's line with a piece in it is unended; once that line ends it is masked whole, and what masking changed is
put back into the pieces it came from: the piece where a hidden secret starts gets the mask, the others lose
their part. The log keeps mpirun's pieces, as SageMaker's CloudWatch does, and rejoined they read as the masked
line: `[1,mpirank:0,algo-1]<stdout>:token ****` (the second line keeps its tag and nothing after it).

Lines are held in order, and each at most HOLD_SECONDS (MAX_HELD_WRITES at most): a rank that writes part of a line
and then computes for minutes does not hold back the log. A secret whose pieces come further apart than that is
masked in the file only where one piece shows it; `smtrain logs` and `status` mask the rejoined line whatever
the file holds (backends/local.py).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from difflib import SequenceMatcher

from orchestrator.observing.rank_lines import RankLine, RankLines

HOLD_SECONDS = 2.0
"""The longest a log line waits for a rank's line it holds a piece of: a rank's pieces of one write, or of one
print, come milliseconds apart."""
MAX_HELD_WRITES = 10_000
"""The most log writes (a line, or a bar's states) held at once, whatever their age: memory stays bounded when
ranks print fast."""


@dataclass
class _Held:
    """What one write to the log would have been: lines (a bar's states), then `ending`; since when it waits."""

    first: int
    """The number of its first line, as RankLines counts them."""
    lines: list[str]
    ending: str
    since: float
    edits: dict[int, list[tuple[int, int, str]]] = field(default_factory=dict)
    """By line (its index in `lines`): the spans (start, end) masking replaced, and what replaces each."""


class SplitSecrets:
    """One host's log text, held while a rank's line it holds a piece of is unended, then given with the secret
    that line holds masked in its pieces; not thread-safe: one per host's reader."""

    def __init__(self, mask: Callable[[str], str]) -> None:
        self._mask = mask
        self._ranks = RankLines()
        self._held: deque[_Held] = deque()
        self._count = 0
        """The lines taken so far: the next one's number."""

    def add(self, lines: list[str], ending: str, now: float) -> str:
        """What the log gets now, in order, for one write of `lines` (ended with `ending`) at `now`: nothing while
        a rank's line it holds a piece of is unended, more than it when earlier writes were held for such a line."""
        if not lines:  # a private key's lines being hidden: nothing to write
            return self.due(now)
        self._held.append(_Held(self._count, lines, ending, now))
        self._count += len(lines)
        for line in lines:
            for whole in self._ranks.completed(line):
                self._masked(whole)
        return self.due(now)

    def due(self, now: float) -> str:
        """The held writes whose ranks' lines have ended, or which waited HOLD_SECONDS, in order."""
        given = []
        while self._held and (not self._waits(self._held[0]) or now - self._held[0].since >= HOLD_SECONDS
                              or len(self._held) > MAX_HELD_WRITES):
            given.append(_text(self._held.popleft()))
        return "".join(given)

    def wait(self, now: float) -> float | None:
        """The seconds until the first held write is due, or None when none is held."""
        return max(self._held[0].since + HOLD_SECONDS - now, 0.0) if self._held else None

    def end(self) -> str:
        """At the end of the output: every held write, the lines ranks left unended masked whole too."""
        for whole in self._ranks.unended():
            self._masked(whole)
        given = "".join(map(_text, self._held))
        self._held.clear()
        return given

    def _masked(self, whole: RankLine) -> None:
        """Puts what masking `whole` changes into its pieces' held lines (one already written is left as it is)."""
        if len(whole.pieces) < 2:
            return  # a line in one piece was masked as its log line was
        joined = "".join(piece.text for piece in whole.pieces)
        masked = self._mask(joined)
        if masked == joined:
            return
        for piece, text in zip(whole.pieces, _into_pieces(joined, masked, [len(piece.text) for piece in whole.pieces]),
                               strict=True):
            if text != piece.text and (held := self._holding(piece.line)) is not None:
                held.edits.setdefault(piece.line - held.first, []).append(
                    (piece.start, piece.start + len(piece.text), text))

    def _waits(self, held: _Held) -> bool:
        """Whether a line of `held` holds a piece of a rank's line still unended."""
        return any(self._ranks.holds_unended(line) for line in range(held.first, held.first + len(held.lines)))

    def _holding(self, line: int) -> _Held | None:
        return next((held for held in self._held if held.first <= line < held.first + len(held.lines)), None)


def _into_pieces(joined: str, masked: str, lengths: list[int]) -> list[str]:
    """`masked` (`joined` masked) cut into the pieces `joined` was made of (their `lengths`): what it kept goes to
    the piece it came from, what it changed or hid to the piece where the change starts. The pieces together are
    `masked`, so that what they show is only what masking shows."""
    owner = [index for index, length in enumerate(lengths) for _ in range(length)]
    last = len(lengths) - 1
    parts: list[list[str]] = [[] for _ in lengths]
    for kind, start, end, masked_start, masked_end in SequenceMatcher(None, joined, masked,
                                                                      autojunk=False).get_opcodes():
        if kind == "equal":
            for offset in range(end - start):
                parts[owner[start + offset]].append(masked[masked_start + offset])
        else:
            parts[owner[start] if start < len(owner) else last].append(masked[masked_start:masked_end])
    return ["".join(part) for part in parts]


def _text(held: _Held) -> str:
    """A held write as the log gets it, each line with its edits made."""
    lines = list(held.lines)
    for index, edits in held.edits.items():
        for start, end, text in sorted(edits, reverse=True):
            lines[index] = lines[index][:start] + text + lines[index][end:]
    return "\n".join(lines) + held.ending
