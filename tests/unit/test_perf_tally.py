"""`fuzz --perf` (harness/check/perf_tally.py): one history's useless flushes and fences per
source site and per kind of operation, tallies added over histories and shares (Stats), the
results file's per-structure `perf`, the summary line and the report section; never a bug."""
from crashcheck.crashsim.trace import read_trace
from crashcheck.crashsim.trace_writer import TraceWriter
from crashcheck.harness.check.findings import HistoryOutcome
from crashcheck.harness.check.perf_tally import PerfTally, perf_line
from crashcheck.harness.core.settings import Settings
from crashcheck.harness.render.perf_view import perf_view
from crashcheck.harness.run.results import Results, Stats, TargetResult


def _trace(tmp_path):
    w = TraceWriter(pool_size=4096)
    put = w.site("pm.c", 10, "put")
    flush = w.site("pm.c", 11, "put")
    again = w.site("pm.c", 12, "put")
    fence = w.site("pm.c", 13, "put")
    w.fence(site=fence)                        # set-up: a fence with nothing to order
    w.op_begin(0)
    w.store(0, b"a" * 8, site=put)
    w.flush(0, site=flush)
    w.flush(0, site=again)                     # repeated
    w.fence(site=fence)
    w.op_end(0)
    w.op_begin(1)
    w.flush(0, site=flush)                     # a clean line
    w.fence(site=fence)
    w.op_end(1)
    path = tmp_path / "t.trace"
    w.write(path)
    return read_trace(path)


def test_tally_per_site_and_operation_and_added_up(tmp_path):
    one = PerfTally.of(_trace(tmp_path), ["insert", "lookup"])
    j = one.as_json()
    assert j["totals"] == {"flushes": 3, "fences": 3, "flush-clean-line": 1, "flush-repeated": 1, "fence-idle": 1}
    assert {(s["kind"], s["where"], s["count"]) for s in j["sites"]} == {
        ("flush-clean-line", "pm.c:11", 1), ("flush-repeated", "pm.c:12", 1), ("fence-idle", "pm.c:13", 1)}
    assert j["by_operation"]["insert"]["per_op"]["flush-repeated"] == 1.0
    assert j["by_operation"]["lookup"]["flush-clean-line"] == 1 and j["by_operation"]["set-up"]["fence-idle"] == 1
    # over histories (Stats.count) and over the shares of a target (Stats.add)
    stats, share = Stats(), Stats()
    for s in (stats, share):
        s.count(HistoryOutcome([], [], None, [], perf=one))
    stats.add(share)
    assert stats.perf.histories == 2 and stats.perf.totals["flush-repeated"] == 2
    assert one.histories == 1                  # the history's own tally is left as it was
    row = Results([TargetResult("t", None, stats)], Settings()).as_json("crashcheck fuzz t --perf")["per_structure"][0]
    assert row["perf"]["totals"]["fence-idle"] == 2 and "perf" not in row["stats"]
    assert perf_line(row["perf"]) == ("perf: 6 flushes, 6 persistence fences in 2 histories; did nothing: 2 flushes "
                                      "of a clean line, 2 repeated flushes, 2 fences with nothing to order "
                                      "(1.50 per operation) (not bugs)")
    html = str(perf_view("t", row["perf"]))
    assert "Useless persistence: t" in html and "pm.c:12" in html and "repeated flush" in html
    # without --perf there is no section and no line
    plain = Results([TargetResult("t", None, Stats())], Settings()).as_json("x")["per_structure"][0]
    assert "perf" not in plain and str(perf_view("t", None)) == ""
