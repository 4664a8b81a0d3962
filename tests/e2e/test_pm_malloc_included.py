"""--pm-malloc reaches a `new` in a .cpp file that a given source #includes (issue 49.5): only
incmap.cpp is given to `crashcheck build`, and the node is made in incmap_nodes.cpp, which it
#includes; the node must be a pool object named by that file's line (without: it landed in DRAM,
and the run reported a node outside the pool and nondeterminism)."""
import json
import subprocess
from pathlib import Path

from cli_run import run_cli
from userbuild import build_once

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "incmap"
NODES = FIXTURE / "incmap_nodes.cpp"


def test_new_in_an_included_source_is_in_the_pool(instrument_built, tmp_path):
    build = build_once("incmap", FIXTURE / "incmap.cpp", "--adapter", FIXTURE / "adapter.cpp", "--pm-malloc")
    trace = tmp_path / "t"
    res = subprocess.run([build / "driver", "run", "--pool", tmp_path / "p", "--size", "8m", "--create", "-"],
                         input="insert 5 7\ninsert 6 8\nlookup 5\n", capture_output=True, text=True,
                         env={"CRASHCHECK_TRACE": str(trace), "PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.stderr
    shown = run_cli("trace", "show", trace, "--json")
    allocs = [e for e in map(json.loads, shown.stdout.splitlines()) if e["kind"] == "alloc"]
    line = next(i for i, text in enumerate(NODES.read_text().splitlines(), 1) if "// @new" in text)
    assert [(Path(e["file"]).name, e["line"], e["region"]) for e in allocs] == [("incmap_nodes.cpp", line, 0)] * 2
