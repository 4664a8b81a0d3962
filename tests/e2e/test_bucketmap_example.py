"""examples/bucketmap (issue 34): a header-only C++ structure of our own, brought in as it is. One
`crashcheck build ... --pm-malloc` from a folder outside the checkout (no hook header, no operator
new in the adapter) leaves the checkout untouched; the correct map passes; each seeded bug is found
as one bug of the class bugs.json names, named by the header's own lines (never libstdc++'s);
the policy object put in PM (an object with a virtual method) is one `code-pointer-in-pm` bug
naming the `new` that put it there, not a recovery crash per crash state, and replays.

The default suite builds only the policy-in-pm variant (its define, no catalog); the whole
example is slow-marked (about 40 s of builds and fuzzing)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from treeutil import seeded_bugs

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "bucketmap"
HEADER = EXAMPLE / "bucketmap.hpp"
CATALOG = {b["name"]: b for b in seeded_bugs(EXAMPLE / "bugs.json")}


def _line(tag: str) -> int:
    return next(i for i, text in enumerate(HEADER.read_text().splitlines(), 1) if f"// @{tag}" in text)


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "crashcheck.harness.cli.main", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def _status() -> str:
    return subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout


def _build(here: Path, name: str, *extra) -> None:
    here.mkdir(parents=True, exist_ok=True)
    res = _cli("build", name, HEADER, "--adapter", EXAMPLE / "adapter.cpp", "--pm-malloc", *extra, cwd=here)
    assert res.returncode == 0, res.stderr


def _fuzz(here: Path, name: str, tag: str, *args) -> tuple[subprocess.CompletedProcess, dict]:
    out = here / f"{tag}.json"
    res = _cli("fuzz", name, "--seed", "1", "--quiet", "--json", out, *args, cwd=here)
    assert res.returncode in (0, 1), res.stdout + res.stderr
    return res, json.loads(out.read_text())


def _own_sites(bug: dict) -> list[dict]:
    """The sites BUG names in the structure's code (crashcheck's own pool allocator aside)."""
    sites = [s["site"] for s in bug["lost"] + bug["persisted"] + bug["code_pointers"] if s.get("site")]
    sites += [leak["site"] for leak in bug["leaks"] if leak.get("site")]
    return [s for s in sites if not s["file"].startswith("trees/common/")]


def test_the_policy_in_pm_is_one_code_pointer_bug_at_its_new(instrument_built, tmp_path):
    # built as that variant itself (its define, no catalog): two drivers instead of three to compile
    here, name = tmp_path / "work", f"bucketmap-cp-{os.getpid()}"
    empty = tmp_path / "bugs.json"
    empty.write_text("[]")
    _build(here, name, "--bugs", empty, "--cflags", f"-D{CATALOG['policy-in-pm']['define']}")
    res, data = _fuzz(here, name, "cp", "--examples", "4", "--shrink", "0", "--report", here / "r.html")
    assert res.returncode == 1
    [bug] = data["bugs"]
    assert bug["class"] == "code-pointer-in-pm" == CATALOG["policy-in-pm"]["class"]
    assert bug["crash"]["index"] is None and "invalid after a restart" in bug["detail"]
    [store] = bug["code_pointers"]
    site = store["site"]
    # the vtable pointer MixPolicy's constructor writes, inlined at the header's `new MixPolicy()`
    assert site["file"] == "examples/bucketmap/bucketmap.hpp" and site["code_pointer"] and site["own"]
    assert site["inlined_at"]["line"] == _line("policy-new")
    assert f"bucketmap.hpp:{_line('policy-new')}" in bug["detail"]
    assert "examples/bucketmap/bucketmap.hpp:" + str(_line("policy-new")) in bug["sources"]
    # no crash state of it was checked, so nothing else was made of it
    assert data["stats"]["crash_points"] == 0
    [record] = (here / "cp.bugs").glob("*.json")
    replay = _cli("replay", record, cwd=here)
    assert replay.returncode == 1 and "reproduced without any crash: code-pointer-in-pm" in replay.stdout
    assert "Code addresses stored in PM" in (here / "r.html").read_text()


@pytest.fixture(scope="module")
def whole(instrument_built, tmp_path_factory):
    here = tmp_path_factory.mktemp("bucketmap") / "work"
    before = _status()
    name = f"bucketmap-{os.getpid()}"
    _build(here, name)
    assert _status() == before, "the build wrote into the checkout"
    assert not (ROOT / "crashcheck-builds" / name).exists() and not (ROOT / "build" / "user" / name).exists()
    return here, name


@pytest.mark.slow        # the whole example's build (~40 s); the default suite has the policy-in-pm test above
def test_the_correct_map_passes_with_its_expected_leak(whole):
    here, name = whole
    res, data = _fuzz(here, name, "correct", "--examples", "16")
    assert res.returncode == 0, res.stdout
    assert data["stats"]["crash_points"] > 0
    assert [(b["class"], b["expected"]) for b in data["bugs"]] in ([], [("leak", True)])
    for b in data["bugs"]:
        assert all(s["file"] == "examples/bucketmap/bucketmap.hpp" for s in _own_sites(b)), _own_sites(b)
        assert {leak["site"]["line"] for leak in b["leaks"]} == {_line("insert-new")}


@pytest.mark.slow        # see above
@pytest.mark.parametrize("bug, tag", [("link-first", "insert-new"), ("update-no-persist", "update")])
def test_each_seeded_ordering_bug_is_found_at_the_headers_lines(whole, bug, tag):
    here, name = whole
    cls = CATALOG[bug]["class"]
    res, data = _fuzz(here, name, bug, "--bug", bug, "--examples", "40", "--stop-on", cls)
    assert res.returncode == 1, res.stdout
    unexpected = [b for b in data["bugs"] if not b["expected"]]
    assert [b["class"] for b in unexpected] == [cls], [b["detail"] for b in unexpected]
    sites = _own_sites(unexpected[0])
    assert sites and all(s["file"] == "examples/bucketmap/bucketmap.hpp" for s in sites), sites
    assert not any("/include/c++/" in s["file"] or "atomic_base" in s["file"] for s in sites)
    assert _line(tag) in {s["line"] for s in sites}
