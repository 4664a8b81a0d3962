"""`crashcheck stats STRUCTURE --keys dense|sparse|clustered --ops N [--json] [--seed S]`.

Owns the per-operation write cost of a structure: it runs N inserts, then N updates, N lookups and
N deletes of the same keys with the traced driver (a built-in tree's or a user's structure's from
`crashcheck build`; the operations a structure does not have are left out), reads the traces, and
prints the average stores, flushes and fences per operation of each kind (events between an
operation's op_begin and op_end; recovery and pool formatting are not counted).

Long runs are cut into segments of at most SEGMENT operations, each a driver process on the same
pool with its own trace, so no trace has to hold millions of events in memory at once.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from crashcheck.crashsim.trace import read_trace
from crashcheck.harness.cli import keys as keygen
from crashcheck.harness.cli import options
from crashcheck.harness.target import structures
from crashcheck.harness.core.errors import UsageError

ROOT = Path(__file__).resolve().parents[2]
KINDS = ("insert", "update", "lookup", "delete")
SEGMENT = 10_000
# Pool bytes per key, generous for the sparse case (one 192-byte node, a leaf and a value per
# key at most, plus partly filled chunks); never below the driver's default 64 MiB.
POOL_PER_KEY = 512
MIN_POOL = 64 << 20


@dataclass
class Counts:
    ops: int = 0
    stores: int = 0
    flushes: int = 0
    fences: int = 0

    def averages(self) -> dict[str, float]:
        n = self.ops or 1
        return {"stores": self.stores / n, "flushes": self.flushes / n, "fences": self.fences / n}


@dataclass
class StatsRun:
    structure: str
    keys: str
    ops: int
    seed: int
    counts: dict[str, Counts] = field(default_factory=lambda: {k: Counts() for k in KINDS})


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("stats", help="stores, flushes and fences per insert/update/lookup/delete")
    parser.add_argument("structure", help="a persistent map: a built-in tree (e.g. wort) or one of `crashcheck build`")
    parser.add_argument("--keys", choices=sorted(keygen.GENERATORS), default="dense",
                        help="key distribution of the thesis (default dense)")
    parser.add_argument("--ops", type=options.positive, default=1000, help="operations of each kind (default 1000)")
    parser.add_argument("--seed", type=options.seed, default=0, help="seed of keys, values and order (default 0)")
    parser.add_argument("--json", action="store_true", help="one JSON object instead of a table")
    parser.set_defaults(func=run)


def known_structures() -> list[str]:
    """Persistent maps, built-in and the user's own (`crashcheck build`): stats counts PM stores,
    flushes and fences of map operations. A user's structure counts once its meta.json exists."""
    out = []
    for name in structures.all_names():
        if name in structures.builtin_names():
            if ".no_pm" in (ROOT / "trees" / name / "adapter.c").read_text():
                continue
        else:
            try:
                s = structures.get(name)
                if not s.has_pm or s.spec_model != "ordered_map":
                    continue
            except UsageError:
                continue        # a user's build whose driver is gone: not listed
        out.append(name)
    return out


def traced_driver(structure: str) -> Path:
    known = known_structures()
    if structure not in known:
        raise UsageError(f"unknown structure {structure!r} (known: {', '.join(known) or 'none'}; "
                         "build your own with `crashcheck build`)")
    return structures.get(structure).driver()


def histories(keys: list[int], seed: int, value_size: int = 8) -> dict[str, list[str]]:
    """The four phases: each key inserted, updated, looked up and deleted, each phase shuffled.
    Values are 64-bit numbers; for a structure with wider values (HART: 16 bytes) each is
    repeated to VALUE_SIZE bytes, so every structure sees the same workload."""
    rng = random.Random(seed)
    mask = (1 << 64) - 1

    def value() -> str:
        v = rng.getrandbits(64) & mask
        if value_size == 8:
            return str(v)
        reps = -(-value_size // 8)
        return "x:" + (v.to_bytes(8, "little") * reps)[:value_size].hex()

    def order() -> list[int]:
        out = list(keys)
        rng.shuffle(out)
        return out

    return {
        "insert": [f"insert {k} {value()}" for k in keys],
        "update": [f"update {k} {value()}" for k in order()],
        "lookup": [f"lookup {k}" for k in order()],
        "delete": [f"delete {k}" for k in order()],
    }


def count_trace(path: Path, into: Counts) -> int:
    """Add the events inside operations of one trace to INTO; returns operations seen."""
    trace = read_trace(path)
    if not trace.complete:
        raise UsageError(f"{path}: the traced driver did not finish its trace ({trace.cut_reason})")
    in_op = False
    ops = 0
    for ev in trace.events:
        kind = ev.kind
        if kind == "op_begin":
            in_op = True
            ops += 1
        elif kind == "op_end":
            in_op = False
        elif in_op:
            if kind in ("store", "ntstore"):
                into.stores += 1
            elif kind == "flush":
                into.flushes += 1
            elif kind == "fence":
                into.fences += 1
    return ops


def run_segment(driver: Path, pool: Path, size: int, create: bool, lines: list[str],
                tmp: Path, counts: Counts, expect: set[str]) -> None:
    trace = tmp / "trace"
    cmd = [str(driver), "run", "--pool", str(pool), "--size", str(size)]
    if create:
        cmd.append("--create")
    env = dict(os.environ, CRASHCHECK_TRACE=str(trace))
    res = subprocess.run(cmd, input="\n".join(lines) + "\n", capture_output=True, text=True, env=env)
    if res.returncode != 0:
        raise UsageError(f"{driver.name} failed (exit {res.returncode}): {res.stderr.strip()[:300]}")
    results = res.stdout.splitlines()
    bad = [(line, got) for line, got in zip(lines, results) if got.split(" ")[0] not in expect]
    if len(results) != len(lines) or bad:
        what = bad[0] if bad else f"{len(results)} results for {len(lines)} operations"
        raise UsageError(f"{driver.parent.name} misbehaved during stats: {what}")
    seen = count_trace(trace, counts)
    if seen != len(lines):
        raise UsageError(f"trace {trace} holds {seen} operations, expected {len(lines)}")
    counts.ops += seen
    for f in tmp.glob("trace*"):
        f.unlink()


def collect(structure: str, keys_kind: str, n: int, seed: int) -> StatsRun:
    if n <= 0:
        raise UsageError(f"--ops must be positive, got {n}")
    driver = traced_driver(structure)
    keys = keygen.generate(keys_kind, n, seed)
    result = StatsRun(structure, keys_kind, n, seed)
    size = max(MIN_POOL, n * POOL_PER_KEY)
    expect = {"insert": {"ok"}, "update": {"ok"}, "lookup": {"value"}, "delete": {"ok"}}
    with tempfile.TemporaryDirectory(prefix="crashcheck-stats-") as d:
        tmp = Path(d)
        pool = tmp / "pool"
        create = True
        s = structures.get(structure)
        for kind, lines in histories(keys, seed, s.value_size).items():
            if kind not in s.map_ops:
                continue      # an optional operation the structure does not have
            for start in range(0, len(lines), SEGMENT):
                run_segment(driver, pool, size, create, lines[start:start + SEGMENT], tmp,
                            result.counts[kind], expect[kind])
                create = False
    return result


def run(args: argparse.Namespace) -> int:
    stats = collect(args.structure, args.keys, args.ops, args.seed)
    have = structures.get(args.structure).map_ops
    table = {kind: stats.counts[kind].averages() for kind in KINDS if kind in have}
    if args.json:
        print(json.dumps(table))
        return 0
    print(f"{stats.structure}: {stats.keys} keys, {stats.ops} operations of each kind (seed {stats.seed}), "
          f"averages per operation")
    print(f"{'operation':<10}{'stores':>10}{'flushes':>10}{'fences':>10}")
    for kind, row in table.items():
        print(f"{kind:<10}{row['stores']:>10.2f}{row['flushes']:>10.2f}{row['fences']:>10.2f}")
    return 0
