"""Agreement of the two tracers on the instrumentation corpus: every corpus
program that pmemcheck can run (single-threaded, ending normally) is traced by the pass and under
pmemcheck (its log imported), and both traces must show the same PM writes per operation (the
last byte written at every offset), the same flushed lines, the same allocations, and at least
the pass's fences. Where the program holds none of the documented differences (docs/pmemcheck.md:
a clflush logged with a fence, NT and locked stores logged as plain ones, a locked instruction
not logged as a fence, a memset, copy or vector store split into 8-byte stores, libpmem's own
flushing), both give the same legal crash-state count at every
operation boundary and in total. A second region (crashcheck_register_pm) reaches the log
through the runtime's `region` marker."""
from __future__ import annotations

import os
import subprocess

import pytest

from cli_run import run_cli
from corpus import corpuslib
from crashcheck.crashsim.persistency import ModelOptions
from crashcheck.crashsim.simulate import Simulator
from crashcheck.crashsim.trace import read_trace
from crashcheck.harness.target.tracers import wrap

# libpmemobj's programs are left out: under pmemcheck its pool's own stores and msync flushes are
# logged one by one, under the pass as `library` stores at each call (docs/pmemcheck.md).
PROGRAMS = [p for p in corpuslib.programs() if p.exit == 0 and p.complete and not p.per_thread and not p.loads
            and "-lpmemobj" not in p.ldflags]


@pytest.fixture(scope="module")
def builds(instrument_built, tmp_path_factory):
    return corpuslib.build_all(tmp_path_factory.getbasetemp() / "corpus-builds")


def _writes(trace):
    """Per operation (None outside any): {(region, offset): last byte written}, flushed lines,
    objects."""
    out, op = {}, None
    for ev in trace.events:
        if ev.kind == "op_begin":
            op = ev.addr
        elif ev.kind == "op_end":
            op = None
        rec = out.setdefault(op, ({}, set(), []))
        if ev.kind in ("store", "ntstore") and ev.off is not None:
            for i, b in enumerate(ev.data):
                rec[0][(ev.region, ev.off + i)] = b
        elif ev.kind == "flush" and ev.off is not None:
            rec[1].add((ev.region, ev.off // 64))
        elif ev.kind in ("alloc", "free"):
            rec[2].append((ev.kind, ev.region, ev.off, ev.size))
    return {k: v for k, v in out.items() if v != ({}, set(), [])}


def _plain(trace) -> bool:
    """No construct whose logging differs between the tracers."""
    return all(not (ev.kind == "ntstore" or (ev.kind == "store" and (ev.sub != "plain" or ev.size > 8))
                    or (ev.kind == "flush" and ev.sub == "clflush")
                    or (ev.kind == "fence" and ev.sub == "locked")) for ev in trace.events)


def _legal(trace) -> list[tuple[str, int]]:
    sim = Simulator.from_trace(trace, ModelOptions())
    return [(cp.kind, cp.legal) for cp in sim.crash_points() if cp.kind in ("op_begin", "op_end", "end")]


@pytest.mark.parametrize("prog", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_both_tracers_agree(prog, builds, pmemcheck, tmp_path, monkeypatch):
    missing = [f for f in prog.cpu if f not in corpuslib.cpu_flags()]
    if missing:
        pytest.skip(f"this CPU lacks {', '.join(missing)}")
    build = builds[(prog.name, "O2")]
    assert not build.error, build.error
    res, tr = corpuslib.run(build.exe, tmp_path / "pass")
    assert res.returncode == 0, res.stderr
    ours = read_trace(tr)
    monkeypatch.setenv("CRASHCHECK_PMEMCHECK", pmemcheck)
    work = tmp_path / "pmc"
    work.mkdir()
    env = dict(os.environ)
    env.pop("CRASHCHECK_TRACE", None)
    log = work / "log"
    run = subprocess.run(wrap([str(build.exe), str(work / "pool")], log), env=env, cwd=work,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    imp = run_cli("trace", "import", log, "-o", work / "t.trace")
    assert imp.returncode == 0, imp.stderr
    theirs = read_trace(work / "t.trace")
    a, b = _writes(ours), _writes(theirs)
    assert a.keys() == b.keys()
    for op in a:
        assert a[op][0] == b[op][0], f"{prog.name}: operation {op}: different bytes written"
        assert a[op][1] <= b[op][1], f"{prog.name}: operation {op}: a line flushed by the pass only"
        assert a[op][2] == b[op][2], f"{prog.name}: operation {op}: different objects"
    # a locked instruction is a fence to the pass, a plain store to pmemcheck
    fences = lambda t: sum(ev.kind == "fence" and ev.sub != "locked" for ev in t.events)
    assert fences(theirs) >= fences(ours)
    if _plain(ours) and all(a[op][1] == b[op][1] for op in a):
        assert _legal(ours) == _legal(theirs), f"{prog.name}: different legal crash-state counts"
