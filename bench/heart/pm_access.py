#!/usr/bin/env python3
"""bench/heart/pm_access.py -- Heart's PM-access claims, measured against WOART (section II of
L. Nie et al., "Heart: A Scalable, High-performance ART for Persistent Memory", ICCD 2023).

The claims: a lookup reads one XPLine (256 B, Optane's internal access unit) per layer (internal
node visited), and an update writes 8 bytes. This script measures both for Heart (trees/heart)
and for WOART (trees/woart) on the same keys, in one traced run per tree, and prints one table
with the ratio Heart / WOART.

How
  1. Builds a load-logging traced driver of each tree into a temporary folder: trees/build.mk's
     own `driver` rule (make with BUILD pointing there and CRASHCHECK_PASS_LOADS=1), linked with
     the pass and runtime already in build/ ($CRASHCHECK_BUILD if set; never rebuilt here).
  2. Runs one history on each: N inserts of distinct random 8-byte keys, then N lookups, then N
     updates (both in one shuffled order). Keys and values are decimal, so the driver hands both
     trees the same 8-byte big-endian keys and 8-byte values (docs/trees.md, "History format").
  3. Reads the trace (crashcheck.crashsim.trace.read_trace) and places every load, store and flush inside an
     operation (op_begin .. op_end) in the PM object that holds it. `alloc` / `free` events give
     the objects; their allocation site's function gives the class (INTERNAL, LEAF below: Heart's
     N8..N256 come from transform / split_node / heart_create, WOART's N4..N256 from
     art_node_alloc).
  Per lookup: the internal nodes loaded from, the distinct 64-B lines and 256-B XPLines loaded
  within them, and the distinct lines / XPLines of all PM loads. Per update and insert: bytes
  stored to PM (split into stores into objects that existed before the operation, stores into
  objects it allocated, and the allocator's own: zero-fill and metadata, trees/common/pm_alloc.c),
  stores, flushes and fences.

Read the figures knowing
  - Heart is built for eADR (the tree issues no flush; a commit is one locked CAS), WOART for ADR
    (clflush + mfence per persist). The pool allocator (trees/common) flushes its metadata for both.
  - The pass logs load instructions only: memcmp / memcpy reads (Heart's leaf key compare and value
    copy, WOART's value copy) are not in the trace, so leaf and "all PM" figures are lower bounds.
    Internal nodes are read by plain or atomic loads in both trees: those figures are complete.
  - An XPLine is a 256-B aligned block of the pool (the pool is mapped page-aligned, so virtual and
    pool alignment agree).

Usage: .venv/bin/python bench/heart/pm_access.py [--n 2000] [--seed 1] [--workdir DIR]
Needs the pass and runtime (`make instrument`); builds nothing outside its temporary folder
(or --workdir, which keeps the drivers and traces for a second look and a faster rerun).
"""
from __future__ import annotations

import argparse
import bisect
import os
import random
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from crashcheck.crashsim.trace import Trace, TraceError, read_trace  # noqa: E402

TREES = ("heart", "woart")
LINE, XPLINE = 64, 256
POOL_SIZE = 64 << 20
ALLOCATOR_FILES = ("pm_alloc.c",)      # sites of the pool allocator (zero-fill, metadata)
# the allocation-site functions of each tree's objects, by class
INTERNAL = {"heart": {"transform", "split_node", "heart_create"}, "woart": {"art_node_alloc"}}
LEAF = {"heart": {"leaf_new"}, "woart": {"art_leaf_new", "art_value_alloc"}}
PERSISTENCE = {"heart": "eADR: the tree issues no flush, commits by one locked CAS",
               "woart": "ADR: clflush + mfence after each persistent write"}


class BenchError(Exception):
    """The benchmark cannot run: the message says why and what to do."""


# --- building and running -------------------------------------------------------------------

def build_drivers(out: Path) -> dict[str, Path]:
    """Load-logging traced drivers of TREES, built by trees/build.mk's `driver` rule into OUT."""
    built = Path(os.environ.get("CRASHCHECK_BUILD", ROOT / "build"))   # as crashcheck-cc's
    pass_so, rt = built / "libcrashcheck_pass.so", built / "libcrashcheck_rt.a"
    for need in (pass_so, rt):
        if not need.exists():
            raise BenchError(f"{need} is not built: run `make instrument` (or `make`) in {ROOT} first")
    for tree in TREES:
        if not (ROOT / "trees" / tree / "adapter.c").exists():
            raise BenchError(f"trees/{tree}/adapter.c is missing: this checkout has no {tree}")
    drivers = {t: out / "trees" / t / "driver" for t in TREES}
    # BUILD=OUT puts the drivers there; RUNTIME_A / PASS_SO keep them linked with build/'s, and
    # -o (old file) stops make from rebuilding those two from OUT's (absent) objects.
    cmd = ["make", "-s", "-j1", "-C", str(ROOT), f"BUILD={out}", f"RUNTIME_A={rt}", f"PASS_SO={pass_so}",
           "-o", str(rt), "-o", str(pass_so), *map(str, drivers.values())]
    res = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, CRASHCHECK_PASS_LOADS="1"))
    if res.returncode != 0:
        raise BenchError(f"building the load-logging drivers failed:\n{(res.stderr + res.stdout).strip()}")
    return drivers


def history(n: int, seed: int) -> tuple[list[str], list[str]]:
    """The driver lines and each operation's kind: N inserts, N lookups, N updates."""
    rng = random.Random(seed)
    keys = list({rng.getrandbits(64): None for _ in range(3 * n)})[:n]
    if len(keys) < n:
        raise BenchError(f"could not draw {n} distinct keys")
    order = keys[:]
    rng.shuffle(order)
    lines = [f"insert {k} {rng.getrandbits(64)}" for k in keys]
    lines += [f"lookup {k}" for k in order]
    lines += [f"update {k} {rng.getrandbits(64)}" for k in order]
    return lines, [line.split()[0] for line in lines]


def run_traced(tree: str, driver: Path, lines: list[str], work: Path) -> Trace:
    """One traced `driver run` of LINES on a fresh pool; the trace, checked for loads."""
    pool, trace = work / f"{tree}.pool", work / f"{tree}.trace"
    pool.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRASHCHECK_")}
    env["CRASHCHECK_TRACE"] = str(trace)
    res = subprocess.run([str(driver), "run", "--pool", str(pool), "--create", "--size", str(POOL_SIZE)],
                         input="".join(x + "\n" for x in lines), capture_output=True, text=True,
                         timeout=600, env=env)
    if res.returncode != 0:
        raise BenchError(f"{tree}: the traced run failed (exit {res.returncode}): {res.stderr.strip()[-500:]}")
    out = res.stdout.splitlines()
    out += ["(none)"] * (len(lines) - len(out))
    bad = [(i, line, got) for i, (line, got) in enumerate(zip(lines, out))
           if not (got.startswith("value ") if line.startswith("lookup") else got == "ok")]
    if bad:
        i, line, got = bad[0]
        raise BenchError(f"{tree}: operation {i} `{line}` answered `{got}` ({len(bad)} unexpected results)")
    try:
        tr = read_trace(trace, check_images=False)
    except TraceError as exc:
        raise BenchError(f"{tree}: unreadable trace: {exc}") from None
    if not tr.loads:
        raise BenchError(f"{tree}: the trace has no loads: the driver was built without CRASHCHECK_PASS_LOADS "
                         "(is instrument/bin/crashcheck-cc there?)")
    return tr


# --- reading the trace -----------------------------------------------------------------------

@dataclass
class Obj:
    start: int
    end: int
    cls: str          # internal, leaf, other
    born: int         # operation index that allocated it (-1: set-up)


class Objects:
    """The live PM objects of a trace, by address."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.by_start: dict[int, Obj] = {}

    def alloc(self, obj: Obj) -> None:
        if obj.start not in self.by_start:
            bisect.insort(self.starts, obj.start)
        self.by_start[obj.start] = obj

    def free(self, start: int) -> None:
        if self.by_start.pop(start, None) is not None:
            del self.starts[bisect.bisect_left(self.starts, start)]

    def at(self, addr: int) -> Obj | None:
        i = bisect.bisect_right(self.starts, addr) - 1
        if i < 0:
            return None
        obj = self.by_start[self.starts[i]]
        return obj if addr < obj.end else None


def blocks(addr: int, size: int, unit: int) -> range:
    return range(addr // unit, (addr + max(size, 1) - 1) // unit + 1)


@dataclass
class OpStats:
    """Sums over the operations of one kind."""
    ops: int = 0
    c: Counter = field(default_factory=Counter)


@dataclass
class Measured:
    """One tree's run: sums per operation kind, and what its lookups' internal nodes were."""
    ops: dict[str, OpStats]
    visited: dict[int, int]        # internal nodes lookups loaded from: start -> allocated size
    xpl_per_visit: Counter         # a lookup's visits of one node, by the XPLines it read there


def measure(tree: str, tr: Trace, kinds: list[str]) -> Measured:
    """The sums of every figure of the table, from TREE's trace TR of the operations KINDS."""
    objs = Objects()
    stats = {k: OpStats() for k in ("insert", "lookup", "update")}
    unknown: Counter = Counter()
    visited: dict[int, int] = {}
    xpl_per_visit: Counter = Counter()
    op = -1
    cur: dict = {}

    def site_func(ev) -> str:
        s = tr.site(ev.site)
        return s.func if s else ""

    def by_allocator(ev) -> bool:
        # a site in pm_alloc.c, or in a helper of another file (persist.h) inlined into it
        s = tr.site(ev.site)
        return s is not None and (os.path.basename(s.file) in ALLOCATOR_FILES
                                  or os.path.basename(s.inlined_file) in ALLOCATOR_FILES)

    for ev in tr.events:
        k = ev.kind
        if k == "alloc":
            size = ev.size                 # the reader puts the object's size here
            func = site_func(ev)
            cls = ("internal" if func in INTERNAL[tree] else "leaf" if func in LEAF[tree] else "other")
            if cls == "other":
                unknown[func] += 1
            objs.alloc(Obj(ev.addr, ev.addr + size, cls, op))
        elif k == "free":
            objs.free(ev.addr)
        elif k == "op_begin":
            op = ev.addr
            cur = {"nodes": {}, "nl": set(), "nx": set(), "al": set(), "ax": set(), "loads": 0, "c": Counter()}
        elif k == "op_end":
            kind = kinds[op] if 0 <= op < len(kinds) else None
            if kind in stats:
                s, nodes = stats[kind], cur["nodes"]
                s.ops += 1
                s.c.update(cur["c"])
                s.c.update({"nodes": len(nodes), "node_lines": len(cur["nl"]), "node_xplines": len(cur["nx"]),
                            "visit_lines": sum(len(ls) for ls, _ in nodes.values()),
                            "visit_xplines": sum(len(xs) for _, xs in nodes.values()),
                            "lines": len(cur["al"]), "xplines": len(cur["ax"]), "loads": cur["loads"]})
                if kind == "lookup":
                    visited.update((a, objs.at(a).end - a) for a in nodes)
                    xpl_per_visit.update(len(xs) for _, xs in nodes.values())
            op = -1
        elif op < 0:
            continue                       # set-up, or between operations
        elif k == "load":
            cur["loads"] += 1
            cur["al"].update(blocks(ev.addr, ev.size, LINE))
            cur["ax"].update(blocks(ev.addr, ev.size, XPLINE))
            obj = objs.at(ev.addr)
            if obj is not None and obj.cls == "internal":
                ls, xs = cur["nodes"].setdefault(obj.start, (set(), set()))
                ls.update(blocks(ev.addr, ev.size, LINE))
                xs.update(blocks(ev.addr, ev.size, XPLINE))
                cur["nl"].update(blocks(ev.addr, ev.size, LINE))
                cur["nx"].update(blocks(ev.addr, ev.size, XPLINE))
        elif k in ("store", "ntstore"):
            c = cur["c"]
            c["stores"] += 1
            c["bytes"] += ev.size
            if by_allocator(ev):
                c["bytes_alloc"] += ev.size
            else:
                obj = objs.at(ev.addr)
                c["bytes_new" if obj is not None and obj.born == op else "bytes_inplace"] += ev.size
        elif k == "flush":
            cur["c"]["flush_alloc" if by_allocator(ev) else "flush_tree"] += 1
        elif k == "fence":
            cur["c"]["fences"] += 1
    if unknown:
        raise BenchError(f"{tree}: objects allocated by functions this script does not classify: "
                         f"{dict(unknown)} (update INTERNAL / LEAF)")
    return Measured(stats, visited, xpl_per_visit)


# --- the table -------------------------------------------------------------------------------

def per_op(s: OpStats, key: str) -> float:
    return s.c[key] / s.ops if s.ops else 0.0


def per_node(s: OpStats, key: str) -> float:
    return s.c[key] / s.c["nodes"] if s.c["nodes"] else 0.0


ROWS = [
    ("lookup: internal nodes visited", lambda st: per_op(st["lookup"], "nodes")),
    ("lookup: 64-B lines per internal node", lambda st: per_node(st["lookup"], "visit_lines")),
    ("lookup: XPLines per internal node", lambda st: per_node(st["lookup"], "visit_xplines")),
    ("lookup: 64-B lines in internal nodes", lambda st: per_op(st["lookup"], "node_lines")),
    ("lookup: XPLines in internal nodes", lambda st: per_op(st["lookup"], "node_xplines")),
    ("lookup: 64-B lines, all PM loads", lambda st: per_op(st["lookup"], "lines")),
    ("lookup: XPLines, all PM loads", lambda st: per_op(st["lookup"], "xplines")),
    ("lookup: loads", lambda st: per_op(st["lookup"], "loads")),
]
for _kind in ("update", "insert"):
    ROWS += [
        (f"{_kind}: bytes written to PM", lambda st, k=_kind: per_op(st[k], "bytes")),
        (f"{_kind}:   into existing objects", lambda st, k=_kind: per_op(st[k], "bytes_inplace")),
        (f"{_kind}:   into objects it allocated", lambda st, k=_kind: per_op(st[k], "bytes_new")),
        (f"{_kind}:   by the allocator", lambda st, k=_kind: per_op(st[k], "bytes_alloc")),
        (f"{_kind}: stores", lambda st, k=_kind: per_op(st[k], "stores")),
        (f"{_kind}: flushes by the tree", lambda st, k=_kind: per_op(st[k], "flush_tree")),
        (f"{_kind}: flushes by the allocator", lambda st, k=_kind: per_op(st[k], "flush_alloc")),
        (f"{_kind}: fences (incl. locked)", lambda st, k=_kind: per_op(st[k], "fences")),
    ]


def table(n: int, seed: int, res: dict[str, Measured]) -> str:
    h, w = res["heart"], res["woart"]
    out = [f"PM accesses per operation: {n} random 8-byte keys (seed {seed}); {n} inserts, then {n} lookups,",
           f"then {n} updates, one traced run per tree. Means per operation (per node: sums over all lookups).",
           f"{'':40} {'heart':>9} {'woart':>9} {'heart/woart':>12}"]
    for name, f in ROWS:
        a, b = f(h.ops), f(w.ops)
        ratio = f"{a / b:.2f}" if b else "-"
        out.append(f"{name:40} {a:9.2f} {b:9.2f} {ratio:>12}")
    out += ["", "persistence: " + "; ".join(f"{t} built for {PERSISTENCE[t]}" for t in TREES)]
    for t in TREES:
        v = res[t].visited
        sizes = ", ".join(f"{n} of {sz} B" for sz, n in sorted(Counter(v.values()).items()))
        out.append(f"{t}: internal nodes lookups read: {len(v)} ({sizes}; allocated sizes), "
                   f"{sum(a % XPLINE == 0 for a in v)} start on a 256-B boundary (pm_alloc aligns to 64 B)")
        xv = res[t].xpl_per_visit
        out.append(f"{t}: lookup visits of an internal node by XPLines read in it: "
                   + ", ".join(f"{k}: {xv[k]}" for k in sorted(xv)))
    out.append("loads by memcmp/memcpy (leaf key compare, value copy) are not logged: 'all PM' is a lower bound")
    return "\n".join(out)


def run(n: int, seed: int, work: Path) -> str:
    drivers = build_drivers(work / "build")
    lines, kinds = history(n, seed)
    res = {}
    for tree in TREES:
        res[tree] = measure(tree, run_traced(tree, drivers[tree], lines, work), kinds)
        for kind in ("insert", "lookup", "update"):
            if res[tree].ops[kind].ops != n:
                raise BenchError(f"{tree}: {res[tree].ops[kind].ops} {kind} operations in the trace, expected {n}")
    return table(n, seed, res)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000, help="keys: inserts, lookups and updates each (default 2000)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workdir", type=Path, help="keep drivers, pools and traces here (default: a temporary folder)")
    a = ap.parse_args()
    if a.n < 1:
        ap.error("--n must be at least 1")
    try:
        if a.workdir:
            a.workdir.mkdir(parents=True, exist_ok=True)
            print(run(a.n, a.seed, a.workdir.resolve()))
        else:
            with tempfile.TemporaryDirectory(prefix="pm-access-") as tmp:
                print(run(a.n, a.seed, Path(tmp)))
    except BenchError as exc:
        print(f"bench/heart/pm_access.py: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
