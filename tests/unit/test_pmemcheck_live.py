"""pmemcheck itself: a tiny C program (tests/fixtures/pmemcheck/live.c) run under pmemcheck, its
store log imported. pmemcheck is found as crashcheck would find it ($CRASHCHECK_PMEMCHECK, then
`pmemcheck` on PATH) and, for the tests only, in ../shared/tools/pmemcheck next to the repository."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from cli_run import ROOT, run_cli
from pmemcheck_tool import find_pmemcheck
from crashcheck.harness.target import toolchain
from crashcheck.crashsim.trace import read_trace

FIXTURE = ROOT / "tests" / "fixtures" / "pmemcheck" / "live.c"


def headers() -> list[str] | None:
    """Include folders for pmemcheck.h (from pmemcheck) and valgrind.h (Debian's valgrind)."""
    tool = find_pmemcheck()
    if tool is None:
        return None
    candidates = [Path(tool).resolve().parent / "include", Path(tool).resolve().parent.parent / "include",
                  Path("/usr/include")]
    pmc = next((c for c in candidates if (c / "valgrind" / "pmemcheck.h").exists()), None)
    if pmc is None or not Path("/usr/include/valgrind/valgrind.h").exists():
        return None
    return [f"-I{pmc}", "-I/usr/include/valgrind"]


@pytest.fixture(scope="module")
def live_log(tmp_path_factory, pmemcheck):
    inc = headers()
    if inc is None:
        pytest.skip("pmemcheck.h or valgrind.h missing (Debian package valgrind; scripts/setup installs it)")
    clang = toolchain.current().clang      # the clang the pass was built for
    if shutil.which(clang) is None:
        pytest.skip(f"{clang} not installed (scripts/setup installs it)")
    work = tmp_path_factory.mktemp("pmc-live")
    exe = work / "live"
    subprocess.run([clang, "-O1", "-g", *inc, str(FIXTURE), "-o", str(exe)], check=True)
    log = work / "live.log"
    res = subprocess.run([pmemcheck, "--log-stores=yes", "--log-stores-stacktraces=yes", f"--log-file={log}",
                          str(exe), str(work / "pool.img")], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    return log


def test_live_log_imports(live_log, tmp_path):
    trace_path = tmp_path / "live.trace"
    res = run_cli("trace", "import", live_log, "-o", trace_path)
    assert res.returncode == 0, res.stderr
    trace = read_trace(trace_path)
    assert trace.complete and trace.pid > 0
    assert [e.kind for e in trace.events] == ["op_begin", "store", "flush", "fence", "store", "op_end"]
    first, second = trace.events[1], trace.events[4]
    assert (first.off, first.data) == (8, bytes.fromhex("8877665544332211"))
    assert (second.off, second.data) == (64, bytes.fromhex("feca0000"))
    site = trace.site(first.site)
    assert (site.file, site.line, site.func) == ("live.c", 24, "main")
    assert trace.site(second.site).line == 26
    states = run_cli("states", trace_path)
    assert states.returncode == 0, states.stderr
    # op_begin 1 state; before the fence the flushed store is pending (2); at op_end and at the
    # end the unflushed one (2 each)
    assert states.stdout.splitlines()[-1].startswith("total: 4 crash points, 7 legal states")
