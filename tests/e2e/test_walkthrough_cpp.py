"""docs/walkthrough.md part 2, run: examples/bucketmap copied to a folder outside the checkout,
built there with one --pm-malloc build, fuzzed clean with its expected leak, its seeded
link-first bug found, its record replayed down to the header's lines, the fix made, built again
and fuzzed clean; the vtable in PM found as one code-pointer-in-pm. The commands and line numbers
are the page's own (the cheap test checks the page against the header; the run is slow-marked:
two builds of the example, ~80 s)."""
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "bucketmap"
PART = (ROOT / "docs" / "walkthrough.md").read_text().split("# Part 2:", 1)[1]
LINES = (EXAMPLE / "bucketmap.hpp").read_text().splitlines()


def _line(tag: str) -> int:
    return next(i for i, text in enumerate(LINES, 1) if f"// @{tag}" in text)


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "crashcheck.harness.cli.main", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


BUILD = ("build", "bucketmap", "bucketmap.hpp", "--adapter", "adapter.cpp", "--pm-malloc")


def test_the_page_shows_the_commands_and_the_headers_lines():
    assert "crashcheck " + " ".join(BUILD) in PART
    for cmd in ("crashcheck fuzz bucketmap --examples 16",
                "crashcheck fuzz bucketmap --bug link-first --examples 16",
                "crashcheck replay crashcheck-bugs/bucketmap-link-first-invariant-violation-1.json",
                "crashcheck fuzz bucketmap --bug policy-in-pm --examples 16",
                "crashcheck init bucketmap --lang c++"):
        assert cmd in PART, cmd
    new, link = _line("insert-new"), _line("link-first")
    assert f"bucketmap.hpp:{new} in insert" in PART and f"`bucketmap.hpp:{link}`" in PART
    assert f"line {new}" in PART and f"line {link}" in PART
    assert f"Map at bucketmap.hpp:{_line('policy-new')}" in PART
    assert LINES[link - 1].strip().startswith("link->store(n")
    assert LINES[_line("policy-new") - 1].strip().startswith("table_->policy = new MixPolicy()")


@pytest.mark.slow        # two builds of the example; the page's text is checked by the test above
def test_the_page_end_to_end_outside_the_checkout(instrument_built, tmp_path):
    here = tmp_path / "bucketmap"
    shutil.copytree(EXAMPLE, here)
    assert _cli(*BUILD, cwd=here).returncode == 0
    res = _cli("fuzz", "bucketmap", "--examples", "16", "--quiet", "--json", "clean.json", cwd=here)
    assert res.returncode == 0, res.stdout
    [leak] = json.loads((here / "clean.json").read_text())["bugs"]
    assert leak["expected"] and leak["leaks"][0]["site"]["file"] == "bucketmap.hpp"
    assert leak["leaks"][0]["site"]["line"] == _line("insert-new")

    res = _cli("fuzz", "bucketmap", "--bug", "link-first", "--examples", "16", "--report", "out/link-first.html",
               cwd=here)
    assert res.returncode == 1, res.stdout
    assert f"invariant-violation: a node in the wrong bucket" in res.stdout
    record = here / "crashcheck-bugs" / "bucketmap-link-first-invariant-violation-1.json"
    bug = json.loads(record.read_text())
    assert f"bucketmap.hpp:{_line('link-first')}" in bug["cause"]
    assert {s["site"]["line"] for s in bug["lost"]} == {_line("insert-new")}
    assert any("atomic_base.h" in s["site"].get("via", [""])[0] for s in bug["lost"])
    res = _cli("replay", record, cwd=here)
    assert res.returncode == 1 and "reproduced: invariant-violation" in res.stdout
    assert len(re.findall(rf"lost .*/bucketmap\.hpp:{_line('insert-new')} in insert", res.stdout)) == 3

    # the fix: persist the node, then link it
    hpp = here / "bucketmap.hpp"
    text = hpp.read_text()
    link = LINES[_line("link-first") - 1]
    wrong = f"{link}\n\t\tpersist(link, sizeof *link);\n\t\tpersist(n, sizeof *n);"
    assert wrong in text
    hpp.write_text(text.replace(wrong, f"\t\tpersist(n, sizeof *n);\n{link}\n\t\tpersist(link, sizeof *link);"))
    assert _cli(*BUILD, cwd=here).returncode == 0
    res = _cli("fuzz", "bucketmap", "--bug", "link-first", "--examples", "16", "--quiet", cwd=here)
    assert res.returncode == 0, res.stdout
    assert _cli("replay", record, cwd=here).returncode == 2          # the build changed

    res = _cli("fuzz", "bucketmap", "--bug", "policy-in-pm", "--examples", "16", cwd=here)
    assert res.returncode == 1 and f"Map at bucketmap.hpp:{_line('policy-new')}" in res.stdout
