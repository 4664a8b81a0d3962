"""`crashcheck build NAME HEADER.hpp --adapter A.cpp --pm-malloc` on a header-only C++ structure
(tests/fixtures/hdrmap, issue 34): the header's `new` and `delete` reach the pool with the
header's line as the allocation site, though its code is compiled inside the adapter; the
adapter's own `new` (its handle) stays in DRAM; a std::atomic store of the header is named by
the header's line, the libstdc++ frames in its `via`."""
import subprocess
from pathlib import Path

import pytest
from userbuild import build_once, traced_events

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "hdrmap"
HEADER = FIXTURE / "hdrmap.hpp"


def _line(tag: str) -> int:
    return next(i for i, line in enumerate(HEADER.read_text().splitlines(), 1) if f"// {tag}" in line)


@pytest.fixture(scope="module")
def hdrmap(instrument_built):
    return build_once("hdrmap", HEADER, "--adapter", FIXTURE / "adapter.cpp", "--pm-malloc")


def _events(driver: Path, tmp_path: Path, ops: str) -> list[dict]:
    return traced_events(driver, tmp_path, ops)


def test_new_in_the_structure_is_in_the_pool_new_in_the_adapter_is_not(hdrmap, tmp_path):
    events = _events(hdrmap / "driver", tmp_path, "insert 5 7\ninsert 6 8\ndelete 5\n")
    allocs = [e for e in events if e["kind"] == "alloc"]
    frees = [e for e in events if e["kind"] == "free"]
    # the two nodes, each named by the `new` line of the header (not the adapter's call)
    assert [(Path(e["file"]).name, e["line"], e["func"], e["region"]) for e in allocs] == \
        [("hdrmap.hpp", _line("@new"), "insert", 0)] * 2
    # nothing allocated at a line of the adapter: its handle (`new hdrmap::Map`) is in DRAM
    assert not [e for e in events if e["kind"] == "alloc" and e["file"].endswith("adapter.cpp")]
    # `delete n` gave the first node back to the pool
    assert [e["off"] for e in frees] == [allocs[0]["off"]]


def test_a_std_atomic_store_of_the_header_is_named_by_the_headers_line(hdrmap, tmp_path):
    events = _events(hdrmap / "driver", tmp_path, "insert 5 7\n")
    [publish] = [e for e in events if e["kind"] == "store" and e.get("sub") == "atomic"]
    assert (Path(publish["file"]).name, publish["line"]) == ("hdrmap.hpp", _line("@publish"))
    assert "atomic_base.h:" in publish["via"][0]
    assert publish["own"] is True


def test_the_untraced_driver_allocates_where_the_traced_one_does(hdrmap, tmp_path):
    res = subprocess.run([hdrmap / "driver-native", "run", "--pool", tmp_path / "p", "--size", "8m",
                          "--create", "-"], input="insert 5 7\ninsert 6 8\ndelete 5\nlookup 6\n",
                         capture_output=True, text=True)
    assert res.returncode == 0 and res.stdout.split() == ["ok", "ok", "ok", "value", "8"], res.stderr
