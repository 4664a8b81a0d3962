"""WORT under simulated crashes: the correct tree survives every crash state a small reference
simulator builds from its trace, and every seeded bug of trees/wort/bugs.json is caught, with the
class the catalog names among the findings.

The simulator here is deliberately small (the real one lives in crashsim/): x86-ADR with clflush,
stores split into 8-byte pieces, a piece guaranteed once a flush of its line and then a fence
follow it. Crash points: before every fence and at every operation end. States at a point: the
guaranteed image, plus, for one line at a time, each prefix of that line's pending pieces. Each
distinct image is recovered by `driver check` of the same build (recovery bugs are in it too) and
judged against the model after operations 0..i-1 or 0..i.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from crashsim.trace import read_trace

from treeutil import ROOT, Model

WORT = ROOT / "build" / "trees" / "wort"
POOL_SIZE = 512 << 10
LINE = 64

# Splits of a compressed path whose first child is an inner node (0x1000/0x1001 below 0x1100,
# then 0x2000 splits the 13-nibble prefix), leaf splits, updates (value objects recycled),
# deletes that merge a node into its parent, and an insert into the merged node.
HISTORY = """\
insert 4096 1
insert 4097 2
insert 4352 3
insert 8192 4
update 4097 20
update 4097 21
insert 4098 5
delete 4352
delete 8192
update 4096 10
insert 12288 6
delete 4097
lookup 4098
insert 4353 7
"""


@dataclass
class Piece:
    addr: int
    data: bytes


@dataclass
class Sim:
    """Pending pieces per line, in program order; FLUSHED: how many of them a flush covered."""
    image: bytearray
    base: int
    pending: dict[int, list[Piece]] = field(default_factory=dict)
    flushed: dict[int, int] = field(default_factory=dict)

    def store(self, addr: int, data: bytes) -> None:
        pos = 0
        while pos < len(data):
            a = addr + pos
            n = min(8 - a % 8, len(data) - pos)
            self.pending.setdefault(a // LINE, []).append(Piece(a, data[pos:pos + n]))
            pos += n

    def flush(self, line_addr: int) -> None:
        line = line_addr // LINE
        self.flushed[line] = len(self.pending.get(line, []))

    def fence(self) -> None:
        for line, n in list(self.flushed.items()):
            pieces = self.pending.get(line, [])
            for p in pieces[:n]:
                self.apply(self.image, p)
            self.pending[line] = pieces[n:]
        self.flushed.clear()

    def apply(self, image: bytearray, p: Piece) -> None:
        off = p.addr - self.base
        image[off:off + len(p.data)] = p.data

    def states(self):
        """The guaranteed image, then one line at a time with each prefix of its pending pieces."""
        yield bytes(self.image)
        for line, pieces in self.pending.items():
            img = bytearray(self.image)
            for p in pieces:
                self.apply(img, p)
                yield bytes(img)


def model_states(history: list[str]) -> list[dict[int, int]]:
    model = Model()
    states = [dict(model.data)]
    for line in history:
        model.apply(line)
        states.append(dict(model.data))
    return states


def classify(result: dict, ok: list[dict[int, int]], boundary: bool, history: list[str]) -> str | None:
    """The finding for one recovered state, or None if the oracle accepts it."""
    if result["violations"]:
        return "invariant-violation"
    dump = {int(k, 16): int.from_bytes(bytes.fromhex(v), "little") for k, v in result["dump"]}
    if any(dump == m for m in ok):
        return "leak" if boundary and result["unreachable"] else None
    old_values: dict[int, set[int]] = {}
    deleted: set[int] = set()
    for line in history:
        op, *args = line.split()
        if op in ("insert", "update"):
            old_values.setdefault(int(args[0]), set()).add(int(args[1]))
        elif op == "delete":
            deleted.add(int(args[0]))
    for k in set(dump) | set().union(*ok):
        if all(k in m for m in ok) and k not in dump:
            return "lost-durable-write"
        if k in dump and all(k not in m for m in ok):
            return "resurrected-delete" if k in deleted else "wrong-value"
        if k in dump and all(dump[k] != m.get(k) for m in ok):
            return "lost-durable-write" if dump[k] in old_values.get(k, ()) else "wrong-value"
    return "torn-update"


def explore(driver: Path, tmp: Path, history: list[str] | None = None,
            stop_at: str | None = None) -> list[tuple[str, str]]:
    """Run HISTORY (default: this module's HISTORY) traced, recover every crash state with
    `driver check`; returns (class, where) findings, all of them, or up to the first of class
    STOP_AT. The WOART/ART+CoW crash tests use it too."""
    if history is None:
        history = [line for line in HISTORY.splitlines() if line.strip()]
    text = "\n".join(history) + "\n"
    trace_path = tmp / "trace"
    env = dict(os.environ, CRASHCHECK_TRACE=str(trace_path))
    res = subprocess.run([str(driver), "run", "--pool", str(tmp / "pool"), "--create", "--size", str(POOL_SIZE)],
                         input=text, capture_output=True, text=True, env=env, timeout=60)
    assert res.returncode == 0, res.stderr
    trace = read_trace(trace_path)
    assert trace.complete and trace.regions, "the traced driver wrote no complete trace"
    sim = Sim(bytearray(trace.region_image(0)), trace.regions[0].base)
    models = model_states(history)
    checked: dict[bytes, dict] = {}
    findings: list[tuple[str, str]] = []
    image_path = tmp / "image"
    op: int | None = None

    def crash_point(where: str, ok: list[dict[int, int]], boundary: bool) -> None:
        for img in sim.states():
            digest = hashlib.sha1(img).digest()
            if digest not in checked:
                image_path.write_bytes(img)
                r = subprocess.run([str(driver), "check", "--pool", str(image_path)],
                                   capture_output=True, text=True, timeout=30)
                checked[digest] = json.loads(r.stdout) if r.returncode == 0 and r.stdout else {}
            result = checked[digest]
            cls = classify(result, ok, boundary, history) if result.get("recovered") else "recovery-crash"
            if cls:
                findings.append((cls, where))

    started = False
    for ev in trace.events:
        if stop_at and any(cls == stop_at for cls, _ in findings):
            break
        if ev.kind == "op_begin":
            op, started = ev.addr, True
        elif ev.kind == "op_end":
            crash_point(f"end of op {ev.addr}", [models[ev.addr + 1]], True)
            op = None
        elif ev.kind in ("store", "ntstore") and ev.region == 0:
            sim.store(ev.addr, ev.data)
        elif ev.kind == "flush" and ev.region == 0:
            sim.flush(ev.addr)
        elif ev.kind == "fence":
            if started:
                ok = [models[op], models[op + 1]] if op is not None else [models[-1]]
                crash_point(f"fence {ev.seq} in op {op}", ok, op is None)
            sim.fence()
    return findings


def catalog() -> list[dict]:
    return json.loads((ROOT / "trees" / "wort" / "bugs.json").read_text())


def test_catalog_is_well_formed():
    classes = {"lost-durable-write", "torn-update", "resurrected-delete", "wrong-value", "invariant-violation",
               "recovery-crash", "recovery-hang", "leak", "post-recovery-divergence"}
    bugs = catalog()
    assert len(bugs) >= 5
    assert len({b["name"] for b in bugs}) == len(bugs)
    sources = "".join(p.read_text() for p in (ROOT / "trees" / "wort").glob("*.c"))
    for b in bugs:
        assert b["class"] in classes, b
        assert b["define"].startswith("BUG_WORT_"), b
        assert f"#ifdef {b['define']}" in sources or f"#ifndef {b['define']}" in sources, b
        assert b["description"].strip()


def test_correct_wort_survives_every_crash_state(trees_built, tmp_path):
    findings = explore(WORT / "driver", tmp_path)
    assert findings == []


@pytest.mark.parametrize("bug", catalog(), ids=lambda b: b["name"])
def test_seeded_bug_is_caught_with_its_class(trees_built, tmp_path, bug):
    findings = explore(WORT / f"driver-bug-{bug['name']}", tmp_path)
    classes = {cls for cls, _ in findings}
    assert findings, f"{bug['name']}: no crash state shows the bug"
    assert bug["class"] in classes, f"{bug['name']}: found {sorted(classes)}, first {findings[0]}"
