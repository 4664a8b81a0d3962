"""libpmemobj under the pass (instrument/runtime/rt_pmemobj.c, rt_shadow.c): a pool that
pmemobj_create / pmemobj_open maps becomes a traced region, the library's own stores reach the
trace as durable `library` stores at the site of the call that made them, and a transaction's
added and allocated ranges are flushed at its commit while a store into a range it never added is
not (tests/corpus/support/pmobj_tx.c). The persistence calls themselves (pmemobj_persist, ...) are
in the instrumentation corpus (tests/corpus/libpmemobj_calls.c)."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from corpus import corpuslib
from crashcheck.crashsim.persistency import ModelOptions
from crashcheck.crashsim.simulate import Simulator
from crashcheck.crashsim.trace import read_trace

SRC = corpuslib.CORPUS / "support" / "pmobj_tx.c"
POOL_SIZE = 8 << 20        # PMEMOBJ_MIN_POOL


@pytest.fixture(scope="module")
def pmobj_tx(instrument_built, tmp_path_factory):
    if not Path("/usr/include/libpmemobj.h").exists():
        pytest.skip("libpmemobj-dev not installed (scripts/setup installs it)")
    exe = tmp_path_factory.mktemp("pmobj_tx") / "pmobj_tx"
    res = subprocess.run([str(corpuslib.CC), "-O2", "-Wall", "-Werror", str(SRC), "-o", str(exe), "-lpmemobj"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return exe


def markers() -> dict[str, int]:
    return {m.group(1): n for n, line in enumerate(SRC.read_text().splitlines(), 1)
            for m in re.finditer(r"/\*\s*@(\w+)\s*\*/", line)}


def run(exe: Path, work: Path, mode: str):
    work.mkdir(exist_ok=True)
    tr = work / f"{mode}.trace"
    res = subprocess.run([str(exe), str(work / "pool"), mode], capture_output=True, text=True, timeout=60,
                         env={"CRASHCHECK_TRACE": str(tr), "PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.stderr
    m = re.match(r"pool (0x[0-9a-f]+) added (0x[0-9a-f]+) not_added (0x[0-9a-f]+)", res.stdout)
    return read_trace(tr), int(m.group(1), 16), int(m.group(2), 16), int(m.group(3), 16)


def lines_of(trace, events) -> list[int]:
    return [trace.site(ev.site).line for ev in events]


def test_the_pool_is_region_0_and_library_stores_have_their_call_sites(pmobj_tx, tmp_path):
    trace, pool, _, _ = run(pmobj_tx, tmp_path, "create")
    assert trace.complete
    [region] = trace.regions
    assert (region.base, region.size) == (pool, POOL_SIZE)
    lib = [ev for ev in trace.events if ev.kind == "store" and ev.sub == "library"]
    mk = markers()
    where = set(lines_of(trace, lib))
    # pmemobj_root allocates the root, pmemobj_tx_add_range_direct writes the undo log, the
    # transaction's allocation and its commit write the allocator's metadata, the abort restores
    assert {mk["root"], mk["add"], mk["alloc"], mk["commit"]} <= where
    assert all(Path(trace.site(ev.site).file).resolve() == SRC for ev in lib)
    # each library call's stores end with a fence at the same site
    for i, ev in enumerate(trace.events):
        if ev in lib and (i + 1 == len(trace.events) or trace.events[i + 1] not in lib):
            nxt = trace.events[i + 1]
            assert nxt.kind == "fence" and nxt.site == ev.site


def test_commit_flushes_what_the_transaction_added_and_allocated(pmobj_tx, tmp_path):
    trace, pool, added, not_added = run(pmobj_tx, tmp_path, "create")
    mk = markers()
    ev = trace.events
    flushes = [e for e in ev if e.kind == "flush"]
    assert any(e.off == added & ~63 and trace.site(e.site).line == mk["commit"] for e in flushes)
    assert not any(e.off == not_added & ~63 for e in flushes)      # never added: never flushed
    # the object the transaction allocated is flushed at its commit
    obj = next(e for e in ev if e.kind == "store" and trace.site(e.site).line == mk["store_obj"])
    assert any(e.off == obj.off & ~63 and e.seq > obj.seq for e in flushes)
    # at the commit: the range flushes, a fence, then the library's own commit stores
    commit = [e for e in ev if e.site is not None and trace.site(e.site).line == mk["commit"]]
    kinds = [e.kind for e in commit]
    assert kinds[:2] == ["flush", "fence"] and "store" in kinds[2:]

    # Crash states after operation 0: the added word is durable, the other one may be lost.
    sim = Simulator.from_trace(trace, ModelOptions())
    for cp in sim.crash_points():
        if cp.kind == "op_end" and cp.last_done == 0:
            pending = {p.off for u in cp.units for p in u.pieces}
            assert added not in pending and not_added in pending
            assert sim.image.base[added:added + 8] == (7).to_bytes(8, "little")
            break
    else:
        pytest.fail("no crash point at the end of operation 0")


def test_an_abort_restores_through_the_library(pmobj_tx, tmp_path):
    trace, _, added, _ = run(pmobj_tx, tmp_path, "create")
    mk = markers()
    ours = next(e for e in trace.events if e.kind == "store" and trace.site(e.site).line == mk["store_abort"])
    restore = [e for e in trace.events[ours.seq:] if e.kind == "store" and e.sub == "library"
               and e.off <= added < e.off + e.size]
    assert restore, "the abort's restore of the added word is not in the trace"
    r = restore[0]
    assert r.data[added - r.off:added - r.off + 8] == (7).to_bytes(8, "little")


def test_an_opened_pool_starts_from_the_file_and_logs_what_the_open_wrote(pmobj_tx, tmp_path):
    run(pmobj_tx, tmp_path, "create")
    before = tmp_path / "pool.before"
    shutil.copyfile(tmp_path / "pool", before)
    trace, pool, added, _ = run(pmobj_tx, tmp_path, "open")
    [region] = trace.regions
    assert (region.base, region.size) == (pool, POOL_SIZE)
    assert Path(region.image).read_bytes() == before.read_bytes()
    mk = markers()
    assert any(e.kind == "flush" and e.off == added & ~63 for e in trace.events)
    assert any(e.kind == "store" and e.sub == "plain" and trace.site(e.site).line == mk["reopen_store"]
               for e in trace.events)


def test_untraced_runs_only_call_the_library(pmobj_tx, tmp_path):
    res = subprocess.run([str(pmobj_tx), str(tmp_path / "pool"), "create"], capture_output=True, text=True,
                         timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert res.returncode == 0 and res.stderr == ""
    assert not list(tmp_path.glob("*.region*"))
