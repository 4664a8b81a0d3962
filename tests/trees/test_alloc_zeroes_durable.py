"""The pool allocator's zeroing is durable before pm_alloc returns (issue 49 point 7), as PMDK's
pmemobj_zalloc's is: at no crash point of a tree's history past the allocator's own fence is a
zero it stored still pending, so no finding can show trees/common/pm_alloc.c as a store the
structure lost, and no stale bytes of a freed object come back after a crash."""
from __future__ import annotations

from crashcheck.crashsim.simulate import Simulator
from crashcheck.harness.check.pipeline import Checker
from crashcheck.harness.core.settings import Settings
from crashcheck.harness.target import structures

ALLOC = "trees/common/pm_alloc.c"


def test_zeroes_are_pending_only_at_the_allocators_own_fence(trees_built):
    s = structures.get("woart")
    model = s.model()
    # inserts that grow nodes (allocations), then deletes that free and reuse them
    ops = [model.parse_op(f"insert {k} {k + 1}") for k in range(1, 40)] + \
          [model.parse_op(f"delete {k}") for k in range(1, 40, 2)] + \
          [model.parse_op(f"insert {k} 7") for k in range(100, 120)]
    with Checker(s, None, Settings(seed=1)) as checker:
        trace, _ = checker.trace(ops)      # (its files live as long as the checker)
        zero_sites = {i for i, site in enumerate(trace.sites)
                      if site is not None and site.file.endswith(ALLOC) and site.func == "pm_alloc_at"}
        zeroing = [ev for ev in trace.events if ev.kind == "store" and ev.site in zero_sites]
        assert zeroing, "the trace shows no zeroing by pm_alloc_at"
        points = 0
        for cp in Simulator.from_trace(trace).crash_points():
            pending = [p for u in cp.units for p in u.pieces if trace.events[p.seq].site in zero_sites]
            if not pending:
                continue
            points += 1
            at = trace.site(trace.events[cp.event].site) if cp.event < len(trace.events) else None
            # the fence in pm_alloc_at right after its flushes: the object is not handed out yet
            assert at is not None and "pm_alloc_at" in (at.func, at.inlined_func), \
                f"a zero of pm_alloc is pending at crash point {cp.index} ({cp.kind} at {at and at.describe()})"
        assert points > 0
