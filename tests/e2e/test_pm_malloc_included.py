"""--pm-malloc reaches a `new` in a .cpp file that a given source #includes (issue 49.5): only
incmap.cpp is given to `crashcheck build`, and the node is made in incmap_nodes.cpp, which it
#includes; the node must be a pool object named by that file's line (without: it landed in DRAM,
and the run reported a node outside the pool and nondeterminism)."""
import shutil
from pathlib import Path

import pytest

from cli_run import run_cli
from userbuild import build_once, traced_events

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "incmap"
NODES = FIXTURE / "incmap_nodes.cpp"


def test_new_in_an_included_source_is_in_the_pool(instrument_built, tmp_path):
    build = build_once("incmap", FIXTURE / "incmap.cpp", "--adapter", FIXTURE / "adapter.cpp", "--pm-malloc")
    allocs = [e for e in traced_events(build / "driver", tmp_path, "insert 5 7\ninsert 6 8\nlookup 5\n")
              if e["kind"] == "alloc"]
    line = next(i for i, text in enumerate(NODES.read_text().splitlines(), 1) if "// @new" in text)
    assert [(Path(e["file"]).name, e["line"], e["region"]) for e in allocs] == [("incmap_nodes.cpp", line, 0)] * 2


@pytest.mark.slow        # a second C++ build; the included .cpp above is the gate's case
def test_new_in_a_header_not_given_is_a_build_warning(instrument_built, tmp_path):
    """The node maker in a header that is not among the files given: --pm-malloc cannot know it is
    the structure's, and the build says so, naming its line, instead of the run finding DRAM nodes."""
    for f in ("incmap.hpp", "adapter.cpp"):
        shutil.copy(FIXTURE / f, tmp_path / f)
    (tmp_path / "incmap_nodes.h").write_text(NODES.read_text())
    (tmp_path / "incmap.cpp").write_text(
        (FIXTURE / "incmap.cpp").read_text().replace('"incmap_nodes.cpp"', '"incmap_nodes.h"'))
    res = run_cli("build", "incmap-hdr", tmp_path / "incmap.cpp", "--adapter", tmp_path / "adapter.cpp",
                  "--pm-malloc", "--out", tmp_path / "builds", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    line = next(i for i, text in enumerate(NODES.read_text().splitlines(), 1) if "// @new" in text)
    assert res.stderr.splitlines() == [
        f"crashcheck: warning: --pm-malloc: `new` at incmap_nodes.h:{line} stays in DRAM: incmap_nodes.h "
        "is not one of the structure's files; give it to crashcheck build with the sources (FILES take "
        "headers too)"], res.stderr
