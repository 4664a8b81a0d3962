"""`crashcheck build --pm-malloc`: code that allocates with malloc/posix_memalign, pointed at the
pool without editing it (examples/minikv, the worked example of docs/walkthrough.md).

minikv.c takes its nodes from posix_memalign (after <immintrin.h>, whose mm_malloc.h declares
posix_memalign itself) and frees them with free. Built with --pm-malloc, every node is a pool
object recorded with the line of the posix_memalign call, so the leak check sees it: an
allocation in flight at a crash is the expected leak of expect.json, a node a delete forgets to
free (seeded bug delete-no-free) an unexpected one. The rest of the walk-through (first fuzz,
reading the report, the lost update) is tests/e2e/test_walkthrough.py."""
import json
import subprocess
from pathlib import Path

import pytest
from cli_run import run_cli
from userbuild import build_once

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "minikv"
ALLOC_LINE = next(i for i, line in enumerate((EXAMPLE / "minikv.c").read_text().splitlines(), 1)
                  if "posix_memalign(&mem" in line)


@pytest.fixture(scope="module")
def minikv(instrument_built):
    return build_once("minikv", EXAMPLE / "minikv.c", "--adapter", EXAMPLE / "adapter.c", "--pm-malloc")


def test_allocations_go_to_the_pool_with_the_callers_line(minikv, tmp_path):
    trace = tmp_path / "t"
    res = subprocess.run([minikv / "driver", "run", "--pool", tmp_path / "p", "--size", "8m", "--create", "-"],
                         input="insert 5 7\ninsert 6 8\ndelete 5\n", capture_output=True, text=True,
                         env={"CRASHCHECK_TRACE": str(trace), "PATH": "/usr/bin:/bin"})
    assert res.returncode == 0 and res.stdout.split() == ["ok", "ok", "ok"], res.stderr
    shown = run_cli("trace", "show", trace, "--json")
    events = [json.loads(line) for line in shown.stdout.splitlines()]
    allocs = [e for e in events if e["kind"] == "alloc"]
    frees = [e for e in events if e["kind"] == "free"]
    assert len(allocs) == 2 and len(frees) == 1
    for e in allocs:
        assert e["region"] == 0 and e["size"] == 64          # a pool object, 64-byte aligned class
        assert (Path(e["file"]).name, e["line"], e["func"]) == ("minikv.c", ALLOC_LINE, "minikv_insert")
        assert e["addr"] % 64 == 0
    assert frees[0]["off"] == allocs[0]["off"]


def test_the_redirected_objects_count_for_leak_checks(minikv, tmp_path):
    out = tmp_path / "r.json"
    res = run_cli("fuzz", "minikv", "--bug", "delete-no-free", "--examples", "16", "--seed", "1", "--quiet",
                  "--stop-on", "leak", "--json", out)
    assert res.returncode == 1, res.stdout + res.stderr
    bugs = json.loads(out.read_text())["bugs"]
    leak = next(b for b in bugs if b["class"] == "leak" and not b["expected"])
    site = leak["leaks"][0]["site"]
    assert (Path(site["file"]).name, site["line"], site["func"]) == ("minikv.c", ALLOC_LINE, "minikv_insert")
    assert any(op.startswith("delete") for op in leak["history"])


def test_the_adapter_may_free_what_the_structure_allocated(instrument_built, tmp_path):
    # pmhash's scan mallocs its result array and the adapter frees it. Built with --pm-malloc the
    # array is a pool object; the adapter's free went to the C library and aborted the driver
    # ("free(): invalid pointer"). pm_free.h, forced into the adapter, gives it back to the pool.
    pmhash = ROOT / "examples" / "pmhash"
    built = build_once("pmhash_pm", pmhash / "pmhash.c", "--adapter", pmhash / "adapter.c", "--pm-malloc")
    trace = tmp_path / "t"
    res = subprocess.run([built / "driver", "run", "--pool", tmp_path / "p", "--size", "8m", "--create", "-"],
                         input="insert 5 7\ninsert 6 8\nscan 0 10\nscan 0 10\n", capture_output=True, text=True,
                         env={"CRASHCHECK_TRACE": str(trace), "PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.stderr
    assert res.stdout.split()[:2] == ["ok", "ok"], res.stdout
    shown = run_cli("trace", "show", trace, "--json")
    events = [json.loads(line) for line in shown.stdout.splitlines()]
    allocs = {e["off"] for e in events if e["kind"] == "alloc"}
    frees = [e["off"] for e in events if e["kind"] == "free"]
    assert len(frees) >= 2 and set(frees) <= allocs        # each scan's array went back to the pool
