"""`crashcheck fuzz --tracer pmemcheck` (harness/target/tracers.py): the driver's runs traced by Valgrind's
pmemcheck instead of the pass. The same history traced both ways gives the same PM writes,
flushed lines, operations and objects (the differences are docs/pmemcheck.md's: a memset comes
as 8-byte stores, a clflush brings a fence); a seeded bug is found through the imported traces,
with its allocation sites; and a missing pmemcheck or a threaded run is a one-line refusal."""
from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from cli_run import ROOT, run_cli
from crashcheck.crashsim.trace import read_trace
from crashcheck.harness.run.crossing import CROSS_FIXED
from crashcheck.harness.target.tracers import wrap

WORT = ROOT / "build" / "trees" / "wort"
HISTORY = "insert 1 5\ninsert 2 6\nupdate 1 7\ndelete 2\ninsert 3 8\nlookup 1\n"


pytestmark = pytest.mark.usefixtures("trees_built")


def _per_op(trace):
    """Per operation (None before the first): the bytes written, as {offset: last byte}, the
    flushed lines, and the objects allocated and freed."""
    out, op = {}, None
    for ev in trace.events:
        if ev.kind == "op_begin":
            op = ev.addr if ev.addr is not None else len(out)
        rec = out.setdefault(op, ({}, set(), []))
        if ev.kind in ("store", "ntstore") and ev.off is not None:
            for i, b in enumerate(ev.data):
                rec[0][ev.off + i] = b
        elif ev.kind == "flush":
            rec[1].add(ev.off // 64)
        elif ev.kind in ("alloc", "free"):
            site = trace.site(ev.site)
            rec[2].append((ev.kind, ev.off, ev.size, site.line if site else None))
    return out


def test_both_tracers_see_the_same_pm_writes(pmemcheck, tmp_path, monkeypatch):
    (tmp_path / "h").write_text(HISTORY)
    run = [str(WORT / "driver"), "run", "--create", "--size", str(1 << 20), str(tmp_path / "h")]
    env = dict(os.environ, CRASHCHECK_TRACE=str(tmp_path / "pass.trace"))
    subprocess.run(run + ["--pool", str(tmp_path / "p1")], env=env, check=True, capture_output=True)
    monkeypatch.setenv("CRASHCHECK_PMEMCHECK", pmemcheck)
    env = dict(os.environ)
    env.pop("CRASHCHECK_TRACE", None)
    log = tmp_path / "run.log"
    subprocess.run(wrap(run + ["--pool", str(tmp_path / "p2")], log), env=env, check=True,
                   capture_output=True, timeout=300)
    assert run_cli("trace", "import", log, "-o", tmp_path / "pmc.trace").returncode == 0
    ours, theirs = read_trace(tmp_path / "pass.trace"), read_trace(tmp_path / "pmc.trace")
    a, b = _per_op(ours), _per_op(theirs)
    assert sorted(k for k in a if k is not None) == [0, 1, 2, 3, 4, 5]
    for op in a:
        assert a[op][0] == b[op][0], f"operation {op}: different bytes written"
        assert a[op][1] == b[op][1], f"operation {op}: different lines flushed"
        assert a[op][2] == b[op][2], f"operation {op}: different objects"
    assert any(obj[0] == "alloc" and obj[3] == 35 for op in b for obj in b[op][2])  # value_new's line
    fences = lambda t: sum(ev.kind == "fence" for ev in t.events)
    assert fences(theirs) >= fences(ours)      # pmemcheck adds one after every clflush


def test_a_seeded_bug_is_found_through_pmemcheck_traces(pmemcheck, tmp_path):
    # --shrink 4: what is checked is the finding, its site and its replay; every history tried
    # while shrinking is one more run under Valgrind
    res = run_cli("fuzz", "wort", "--bug", "no-flush-link", "--tracer", "pmemcheck", "--examples", "24",
                  "--stop-on", "lost-durable-write", "--shrink", "4", "--json", tmp_path / "r.json", "--quiet",
                  env_extra={"CRASHCHECK_PMEMCHECK": pmemcheck}, timeout=900)
    assert res.returncode == 1, res.stderr
    r = json.loads((tmp_path / "r.json").read_text())
    assert r["tracer"] == "pmemcheck"
    found = [b for b in r["bugs"] if not b["expected"]]
    assert [b["class"] for b in found] == ["lost-durable-write"]
    assert found[0]["tracer"] == "pmemcheck"
    assert found[0]["lost"][0]["site"]["file"] == "trees/wort/wort_internal.h"
    # the known-by-design leaks (the value's; a leaf's too when a history deletes) are recognised
    # by their allocation sites, which only the runtime's object markers carry into the log
    expected = [b["group"] for b in r["bugs"] if b["expected"]]
    assert "trees/wort/wort.c:35 (expected)" in expected, expected
    assert all(re.fullmatch(r"trees/wort/wort\.c:\d+ \(expected\)", g) for g in expected), expected
    rep = run_cli("replay", tmp_path / "r.bugs" / f"{found[0]['id']}.json",
                  env_extra={"CRASHCHECK_PMEMCHECK": pmemcheck}, timeout=600)
    assert rep.returncode == 1 and "reproduced" in rep.stdout, rep.stdout + rep.stderr


def test_the_correct_structure_passes_under_pmemcheck(pmemcheck, tmp_path):
    res = run_cli("fuzz", "wort", "--tracer", "pmemcheck", "--examples", "6", "--json", tmp_path / "r.json",
                  "--quiet", env_extra={"CRASHCHECK_PMEMCHECK": pmemcheck}, timeout=900)
    assert res.returncode == 0, res.stderr
    r = json.loads((tmp_path / "r.json").read_text())
    # the 6 drawn histories, then one crossing history per capacity point the probe saw (an
    # --examples run crosses each after its last batch, harness/run/crossing.py CROSS_FIXED)
    st = r["per_structure"][0]["stats"]
    assert st["capacity"] and r["stats"]["capacity_histories"] == CROSS_FIXED * len(st["capacity"])
    assert r["stats"]["histories"] == 6 + r["stats"]["capacity_histories"] and r["stats"]["crash_points"] > 100
    assert not [b for b in r["bugs"] if not b["expected"]]


@pytest.mark.parametrize("env, args, message", [
    ({"CRASHCHECK_PMEMCHECK": "/nonexistent/pmemcheck"}, [], "not an executable file"),
    ({"CRASHCHECK_PMEMCHECK": "/bin/true", "PATH": "/usr/bin:/bin"}, [], "does not run pmemcheck"),
    ({"CRASHCHECK_PMEMCHECK": "", "PATH": "/nonexistent"}, [], "needs Valgrind's pmemcheck"),
    ({}, ["--threads", "2"], "traces one thread"),
], ids=["missing", "not-pmemcheck", "not-installed", "threads"])
def test_refusals_are_one_line(env, args, message):
    res = run_cli("fuzz", "wort", "--tracer", "pmemcheck", "--examples", "1", *args, env_extra=env)
    assert res.returncode == 2
    err = res.stderr.strip().splitlines()
    assert len(err) == 1 and message in err[0], res.stderr
