"""Key distributions of the WORT thesis: Dense, Sparse and Clustered 8-byte keys (chapter 4 of
S. Lee, "Write-Optimal Radix Tree", master's thesis, UNIST, 2018).

Owns only key generation; every generator is seeded and returns distinct keys in insertion order
(shuffled, as the thesis inserts "in random order").

- dense:     the integers 1..N (all keys share a long common prefix; ideal for a radix tree).
- sparse:    N distinct integers uniform over [1, 2**64) (common prefixes only near the root).
- clustered: N/64 clusters of 64 consecutive integers, each cluster at a uniform random base
             (the thesis: 2 million dense runs of 64 keys for 128M keys), so middle levels share
             prefixes.
"""
from __future__ import annotations

import random
from typing import Callable

CLUSTER = 64
U64 = 1 << 64


def dense(n: int, seed: int = 0) -> list[int]:
    keys = list(range(1, n + 1))
    random.Random(seed).shuffle(keys)
    return keys


def sparse(n: int, seed: int = 0) -> list[int]:
    rng = random.Random(seed)
    seen: set[int] = set()
    keys: list[int] = []
    while len(keys) < n:
        k = rng.randrange(1, U64)
        if k not in seen:
            seen.add(k)
            keys.append(k)
    return keys


def clustered(n: int, seed: int = 0) -> list[int]:
    rng = random.Random(seed)
    seen: set[int] = set()
    keys: list[int] = []
    while len(keys) < n:
        base = rng.randrange(0, U64 - CLUSTER) & ~(CLUSTER - 1)
        run = [base + i for i in range(min(CLUSTER, n - len(keys))) if base + i not in seen]
        seen.update(run)
        keys.extend(run)
    rng.shuffle(keys)
    return keys


GENERATORS: dict[str, Callable[[int, int], list[int]]] = {
    "dense": dense, "sparse": sparse, "clustered": clustered,
}


def generate(kind: str, n: int, seed: int = 0) -> list[int]:
    """N distinct keys of distribution KIND ('dense', 'sparse' or 'clustered')."""
    try:
        gen = GENERATORS[kind]
    except KeyError:
        raise ValueError(f"unknown key distribution {kind!r} (known: {', '.join(GENERATORS)})") from None
    if n < 0:
        raise ValueError(f"key count must be >= 0, got {n}")
    return gen(n, seed)
