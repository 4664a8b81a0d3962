"""Flushes and fences that make nothing durable (crashsim/perf.py, `crashcheck trace perf`):
exact counts per site on a trace that has each kind once or twice, and none where the work was
real (a line stored again between two flushes, a fence after another thread's store that this
thread flushed, a fence ordering a non-temporal store, a locked instruction)."""
import json
import subprocess
import sys

from crashcheck.crashsim.perf import useless_persistence
from crashcheck.crashsim.trace import read_trace
from crashcheck.crashsim.trace_writer import TraceWriter


def _trace(tmp_path):
    w = TraceWriter(pool_size=4096)
    s = {name: w.site("pm.c", line, name) for line, name in
         enumerate(["store", "flush_ok", "clean", "again", "fence_ok", "idle", "other_idle", "nt"], start=10)}
    w.store(56, b"a" * 16, site=s["store"])              # lines 0 and 64
    w.flush(0, site=s["flush_ok"])
    w.flush(64, site=s["flush_ok"])
    w.fence(site=s["fence_ok"])
    w.flush(0, "clflushopt", site=s["clean"])           # nothing stored since: clean line
    w.store(128, b"b" * 8, site=s["store"])
    w.flush(128, site=s["flush_ok"])
    w.flush(128, site=s["again"])                       # flushed already, no store since, no fence yet
    w.fence(site=s["fence_ok"])
    w.fence(site=s["idle"])                             # nothing since the last fence
    w.store(192, b"c" * 8, site=s["store"])
    w.flush(192, site=s["flush_ok"])
    w.store(192, b"d" * 8, site=s["store"])             # dirty again: the next flush is real
    w.flush(192, site=s["flush_ok"])
    w.fence(site=s["fence_ok"])
    w.store(256, b"e" * 8, tid=1, site=s["store"])
    w.flush(256, site=s["flush_ok"])                    # thread 0 writes back thread 1's store
    w.fence(tid=1, site=s["other_idle"])                # thread 1 flushed nothing itself
    w.fence(site=s["fence_ok"])
    w.ntstore(320, b"f" * 8, site=s["nt"])
    w.fence(site=s["fence_ok"])                         # orders the NT store
    w.fence("locked", site=s["idle"])                   # an atomic: not a persistence fence
    path = tmp_path / "perf.trace"
    w.write(path)
    return path


def test_each_useless_flush_and_fence_is_counted_at_its_site(tmp_path):
    trace = read_trace(_trace(tmp_path))
    rows, totals = useless_persistence(trace)
    got = sorted((r.kind, trace.site(r.site).func, r.sub, r.count) for r in rows)
    assert got == [("fence-idle", "idle", "sfence", 1), ("fence-idle", "other_idle", "sfence", 1),
                   ("flush-clean-line", "clean", "clflushopt", 1), ("flush-repeated", "again", "clwb", 1)]
    assert totals == {"flush-clean-line": 1, "flush-repeated": 1, "fence-idle": 2, "flushes": 8, "fences": 7}


def test_trace_perf_command(tmp_path):
    path = _trace(tmp_path)
    cmd = [sys.executable, "-m", "crashcheck.harness.cli.main", "trace", "perf", str(path)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    assert out.returncode == 0
    assert out.stdout.splitlines()[0] == ("8 flushes, 7 persistence fences; did nothing: 1 flushes of a clean line, "
                                          "1 repeated flushes, 2 fences with nothing to order")
    assert "flush-clean-line  clflushopt pm.c:12 in clean" in out.stdout
    data = json.loads(subprocess.run(cmd + ["--json"], capture_output=True, text=True).stdout)
    assert data["totals"]["fence-idle"] == 2 and {r["line"] for r in data["sites"]} == {12, 13, 15, 16}
