"""Source paths for people on other machines (harness/core/paths.py, crashsim/trace.py, the pass's site
table): records name files relative to the project root or the folder crashcheck ran in, and a
file compiled as `dir/../dir/x.c` is named `dir/x.c` in the trace."""
import os
import subprocess
from pathlib import Path

from corpus import corpuslib
from crashcheck.crashsim.trace import read_trace
from crashcheck.harness.core.paths import ROOT, display, relative_record, source

HERE = Path(__file__).resolve().parents[1]      # tests/


def test_names_under_a_root_become_relative_and_lose_dot_dot():
    roots = [str(ROOT), "/home/u/proj"]
    assert display(f"{ROOT}/trees/artcow/../woart/woart.c", roots) == "trees/woart/woart.c"
    assert display("/home/u/proj/src/./map.c", roots) == "src/map.c"
    assert display("/usr/include/stdlib.h", roots) == "/usr/include/stdlib.h"
    assert display("", roots) == ""


def test_record_fields_and_texts_are_relative_but_replay_is_kept():
    site = {"file": f"{ROOT}/trees/wort/wort.c", "line": 81, "func": "link",
            "inlined_at": {"file": f"{ROOT}/trees/wort/wort.c", "line": 250, "func": "wort_insert"}}
    rec = {"group": f"{ROOT}/trees/wort/wort.c:81", "sites": [f"{ROOT}/trees/wort/wort.c:81"],
           "lost": [{"site": site}], "detail": f"store at {ROOT}/trees/wort/wort.c:81 was lost",
           "sources": {f"{ROOT}/trees/wort/wort.c:81": {"file": f"{ROOT}/trees/wort/wort.c", "line": 81}},
           "replay": f"crashcheck replay {ROOT}/out/x.json"}
    out = relative_record(rec, [str(ROOT)])
    assert out["group"] == "trees/wort/wort.c:81" and out["sites"] == ["trees/wort/wort.c:81"]
    assert out["lost"][0]["site"]["file"] == "trees/wort/wort.c"
    assert out["lost"][0]["site"]["inlined_at"]["file"] == "trees/wort/wort.c"
    assert out["detail"] == "store at trees/wort/wort.c:81 was lost"
    assert list(out["sources"]) == ["trees/wort/wort.c:81"]
    assert out["sources"]["trees/wort/wort.c:81"]["file"] == "trees/wort/wort.c"
    assert out["replay"] == rec["replay"]                    # a command for this machine
    assert rec["group"].startswith(str(ROOT))                # the input is left alone


def test_a_file_compiled_through_dot_dot_is_named_once(instrument_built, tmp_path):
    """`crashcheck-cc a/../a/prog.c`: the debug info says `a/../a/prog.c`; the trace says
    `.../a/prog.c`."""
    (tmp_path / "a").mkdir()
    src = (HERE / "corpus" / "store_widths.c").read_text()
    (tmp_path / "a" / "prog.c").write_text(src)
    exe = tmp_path / "prog"
    res = subprocess.run([str(corpuslib.CC), "-O2", "-g", f"-I{HERE / 'corpus'}", "a/../a/prog.c",
                          "-o", str(exe)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    run, tr = corpuslib.run(exe, tmp_path / "run")
    assert run.returncode == 0, run.stderr
    trace = read_trace(tr)
    files = {trace.site(ev.site).file for ev in trace.events if ev.kind == "store"}
    assert files == {os.path.join(str(tmp_path), "a", "prog.c")}, files


def test_a_relative_source_name_is_read_under_the_root_when_the_current_folder_lacks_it(tmp_path, monkeypatch):
    """(A pip-installed crashcheck's built-in drivers name their sources relative to the folder
    they were built in, CMakeLists.txt; the installed root holds the same files.)"""
    monkeypatch.chdir(tmp_path)
    assert source("trees/wort/wort.c") == ROOT / "trees" / "wort" / "wort.c"
    (tmp_path / "trees" / "wort").mkdir(parents=True)
    (tmp_path / "trees" / "wort" / "wort.c").write_text("/* the user's own */\n")
    assert source("trees/wort/wort.c") == Path("trees/wort/wort.c")        # the current folder's first
    assert source("src/nowhere.c") == Path("src/nowhere.c")                # neither: as it is
    assert source(f"{tmp_path}/x.c") == Path(f"{tmp_path}/x.c")             # absolute: as it is
