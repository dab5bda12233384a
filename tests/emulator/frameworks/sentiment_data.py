"""A toy sentiment task the framework scripts share: short sentences from a 15-word vocabulary, labelled 1 when
their adjective is positive. Deterministic, so every rank builds the same dataset."""

from __future__ import annotations

import random

POSITIVE = ("good", "great", "fine")
NEGATIVE = ("bad", "awful", "dull")


def sentences(count: int, seed: int) -> list[tuple[str, int]]:
    rng = random.Random(seed)
    rows = []
    for _ in range(count):
        label = rng.randrange(2)
        adjective = rng.choice(POSITIVE if label else NEGATIVE)
        words = [rng.choice(("the", "a")), rng.choice(("film", "book", "meal")), rng.choice(("was", "is")),
                 *([rng.choice(("very", "quite"))] if rng.random() < 0.5 else []), adjective]
        rows.append((" ".join(words), label))
    return rows
