"""The instrumentation corpus, table-driven: one test per (program, optimisation level).

Each program in tests/corpus/ exercises one construct and states, in its header comment, the exact
events it must leave in the trace (format: tests/corpus/README.md). This file only builds, runs
and compares; the expectations are data. Every case runs with the default pass (build/) and with
the pass built for a second LLVM (`llvm19`: tests/llvm_builds.py, $CRASHCHECK_TEST_LLVM), whose
exact events the same data states (an event that differs says `llvm>=N` / `llvm<N`).
"""
from __future__ import annotations

from pathlib import Path

import pytest

import llvm_builds
from corpus import corpuslib
from crashcheck.crashsim.trace import read_trace

PROGRAMS = corpuslib.programs()
CASES = [pytest.param(p, lv, id=f"{p.name}-{lv}") for p in PROGRAMS for lv in p.levels]
PASSES = [pytest.param(None, id="default")] + [pytest.param(v, id=f"llvm{v}") for v in llvm_builds.OTHER]


@pytest.fixture(scope="session")
def corpus_builds(instrument_built, tmp_path_factory):
    return corpuslib.builds(tmp_path_factory.getbasetemp() / "corpus-builds")


@pytest.fixture(scope="session", params=PASSES)
def pass_builds(request, corpus_builds, tmp_path_factory):
    """The corpus with the default pass, or with the pass built for another LLVM."""
    if request.param is None:
        return corpus_builds
    build = llvm_builds.build(request.param)
    return corpuslib.builds(tmp_path_factory.getbasetemp() / f"corpus-builds-llvm{request.param}", build)


def test_corpus_is_well_formed():
    """Every program parses, names a construct, and expects something at every level."""
    assert len(PROGRAMS) >= 25
    names = {p.name for p in PROGRAMS}
    assert len(names) == len(PROGRAMS)
    for p in PROGRAMS:
        for lv in p.levels:
            assert p.expected(lv), f"{p.name} expects no events at -{lv}"


@pytest.mark.parametrize("prog, level", CASES)
def test_corpus(prog: corpuslib.Program, level: str, pass_builds, tmp_path: Path):
    missing = [f for f in prog.cpu if f not in corpuslib.cpu_flags()]
    if missing:
        pytest.skip(f"this CPU lacks {', '.join(missing)}")
    build = pass_builds[(prog.name, level)]
    assert not build.error, f"build failed:\n{build.error}"

    res, tr = corpuslib.run(build.exe, tmp_path)
    assert res.returncode == prog.exit, (
        f"{prog.name} -{level} exited {res.returncode}, expected {prog.exit}\n{res.stderr}")
    trace = read_trace(tr)

    # Header: the pool of corpus.h, loads only when asked for.
    assert (trace.pool_base, trace.pool_size) == (corpuslib.DEFAULT_POOL_ADDR, corpuslib.POOL_SIZE)
    assert trace.loads == prog.loads
    assert trace.complete == prog.complete, trace.cut_reason
    if not prog.complete:
        assert f"read {len(trace.events)} events" in trace.cut_reason

    # Every event's site is in this program's source (its own file, and the inlined-at file).
    for ev in trace.events:
        site = trace.site(ev.site)
        assert site is not None, f"event {ev.seq} ({ev.kind}) has no site"
        assert Path(site.file).resolve() == prog.path, site.describe()
        if site.inlined_line:
            assert Path(site.inlined_file).resolve() == prog.path, site.describe()

    expected = prog.expected(level, pass_builds.llvm)
    actual = [corpuslib.actual_record(trace, ev) for ev in trace.events]
    if prog.per_thread:
        # Threads interleave freely; each thread's own events are in program order, none lost.
        for tid in sorted({e["tid"] for e in expected} | {e["tid"] for e in actual}):
            want = [corpuslib.describe(e) for e in expected if e["tid"] == tid]
            got = [corpuslib.describe(e) for e in actual if e["tid"] == tid]
            assert got == want, f"thread {tid} of {prog.name} -{level}"
    else:
        want = [corpuslib.describe(e) for e in expected]
        got = [corpuslib.describe(e) for e in actual]
        assert got == want, f"{prog.name} -{level} ({prog.construct}); markers {prog.markers}"


def test_std_atomic_stores_name_the_users_line_with_the_library_chain(corpus_builds, tmp_path: Path):
    """A std::atomic store is inlined from libstdc++'s bits/atomic_base.h: its site is main's line
    in atomic_cpp.cpp, and the library frame it was named past is kept in the site's chain."""
    prog = next(p for p in PROGRAMS if p.name == "atomic_cpp")
    res, tr = corpuslib.run(corpus_builds[(prog.name, "O2")].exe, tmp_path)
    assert res.returncode == 0, res.stderr
    trace = read_trace(tr)
    stores = [trace.site(ev.site) for ev in trace.events if ev.kind == "store"]
    assert stores and all(s.func == "main" for s in stores)
    for s in stores:
        assert s.chain and "atomic_base.h:" in s.chain[0], s
        assert s.as_dict()["via"] == list(s.chain)
        assert " via " in s.describe()


@pytest.mark.parametrize("level", ["O0", "O2"])
def test_inlined_chain_names_every_call(corpus_builds, tmp_path: Path, level: str):
    """A store two inline levels deep (tests/corpus/inlined_chain.c) is named by its own line, and
    its site's inline chain (trace version 4) names each call it was inlined at, nearest first,
    up to main's: the store in put, put's call in mid, mid's call in main."""
    prog = next(p for p in PROGRAMS if p.name == "inlined_chain")
    res, tr = corpuslib.run(corpus_builds[(prog.name, level)].exe, tmp_path)
    assert res.returncode == 0, res.stderr
    trace = read_trace(tr)
    assert trace.version == 4
    site = next(trace.site(ev.site) for ev in trace.events if ev.kind == "store")
    assert site.line == prog.markers["st"]
    assert site.inlined == (f"{prog.path}:{prog.markers['call1']} in mid", f"{prog.path}:{prog.markers['call2']} in main")
    assert site.as_dict()["inline_chain"] == list(site.inlined)
    # the sites of main's own flush and fence were inlined nowhere (the intrinsics are no calls)
    assert all(not trace.site(ev.site).inlined for ev in trace.events if ev.kind in ("flush", "fence"))
