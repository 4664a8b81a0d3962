"""`crashcheck run --strategy lazy` (harness/check/program_lazy.py): a checker built with
crashcheck-cc logs what it reads of the image (instrument/runtime/rt_readlog.c), and crash states
it cannot tell apart are judged once. examples/pmlog's seeded bug is found with every legal state
of every crash point covered and fewer checker runs than exhaustive; a checker built without the
pass falls back to bounded, saying why in one line."""
from __future__ import annotations

import contextlib
import io
import json
import subprocess
from pathlib import Path

import pytest

from cli_run import ROOT
from crashcheck.harness.target import toolchain
from crashcheck.harness.cli.main import main

CC = ROOT / "instrument" / "bin" / "crashcheck-cc"
SOURCE = ROOT / "examples" / "pmlog" / "pmlog.c"

pytestmark = pytest.mark.usefixtures("instrument_built")


@pytest.fixture(scope="module")
def pmlog(tmp_path_factory) -> dict[str, Path]:
    """examples/pmlog with its seeded bug (crashcheck-cc), and its checker built with the pass and
    with plain clang."""
    out = tmp_path_factory.mktemp("pmlog-lazy")
    built = {"bug": out / "pmlog-bug", "good": out / "pmlog", "plain": out / "pmlog-plain"}
    for exe, cmd in (("bug", [CC, "-DPMLOG_BUG"]), ("good", [CC]), ("plain", [toolchain.current().clang])):
        subprocess.run([*cmd, "-O1", SOURCE, "-lpmem", "-o", built[exe]], check=True, capture_output=True)
    return built


def _run(tmp: Path, *args) -> tuple[int, str, str, dict]:
    """`crashcheck run --quiet --json ...` in this process: (exit, stdout, stderr, results)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["run", "--quiet", "--json", str(tmp / "out.json"), *map(str, args)])
    return code, out.getvalue(), err.getvalue(), json.loads((tmp / "out.json").read_text())


def _bugs(res: dict) -> set[tuple[str, str]]:
    return {(b["class"], b["group"]) for b in res["bugs"]}


def test_lazy_covers_every_state_with_fewer_runs_and_finds_the_same_bug(pmlog, tmp_path, monkeypatch):
    # every point with more than one legal state searched lazily (by default points of up to 4
    # go state by state), so the seeded bug's point is one
    monkeypatch.setattr("crashcheck.harness.check.program_explore.EAGER_BELOW", 1)
    checker = f"{pmlog['good']} check {{image}}"
    prog = ["--", pmlog["bug"], "append", "pool", "2"]
    code_x, _, _, ex = _run(tmp_path, "--strategy", "exhaustive", "--checker", checker, *prog)
    code_l, out, _, lz = _run(tmp_path, "--strategy", "lazy", "--checker", checker, *prog)
    assert code_x == code_l == 1
    assert _bugs(lz) == _bugs(ex) and lz["bugs"]
    # a failing class counts all its states: as many failing states as exhaustive saw
    assert [b["occurrences"] for b in lz["bugs"]] == [b["occurrences"] for b in ex["bugs"]]
    st, sx = lz["stats"], ex["stats"]
    assert st["lazy_fallback"] is None and st["lazy_points"] > 0
    # the points searched lazily: fewer runs than they have legal states, and fewer images overall
    assert st["lazy_executions"] < st["lazy_states_legal"], st
    # every legal state of every crash point, by classes: none sampled
    assert st["points_sampled"] == 0 and st["states_explored"] == st["states_legal"] == sx["states_legal"]
    assert st["executions"] < sx["executions"], (st, sx)
    assert "crash points searched by what the commands read" in out
    # the correct build: no bug, still complete
    code, out, _, ok = _run(tmp_path, "--strategy", "lazy", "--checker", checker,
                            "--", pmlog["good"], "append", "pool", "2")
    assert code == 0 and ok["bugs"] == [] and ok["stats"]["points_sampled"] == 0
    assert "every legal crash state of every crash point was checked" in out


def test_recovery_writes_are_its_own_and_the_checker_reads_them(pmlog, tmp_path):
    """Both commands logged: recovery's repair of the count is read by the checker as recovery
    wrote it, so the seeded bug repaired passes everywhere, as it does exhaustively."""
    good = pmlog["good"]
    code, _, _, res = _run(tmp_path, "--strategy", "lazy", "--recover", f"{good} recover {{image}}",
                           "--checker", f"{good} check {{image}}", "--", pmlog["bug"], "append", "pool", "2")
    assert code == 0 and res["bugs"] == []
    assert res["stats"]["lazy_fallback"] is None and res["stats"]["points_sampled"] == 0


def test_a_checker_without_the_pass_falls_back_to_bounded_saying_why(pmlog, tmp_path):
    code, out, _, res = _run(tmp_path, "--strategy", "lazy", "--checker", f"{pmlog['plain']} check {{image}}",
                             "--", pmlog["bug"], "append", "pool", "2")
    assert code == 1 and {b["class"] for b in res["bugs"]} == {"checker-failure"}
    why = "the checker is not built with crashcheck-cc: it logged no reads"
    assert res["stats"]["lazy_fallback"] == why and res["stats"]["lazy_points"] == 0
    assert res["strategy"] == "bounded"      # what was done (the report's coverage line says so)
    assert [ln for ln in out.splitlines() if ln.startswith("lazy:")] == [f"lazy: not used, checked with bounded: {why}"]


def test_reads_dropped_by_the_bound_are_judged_again_with_the_same_results(pmlog, tmp_path, monkeypatch):
    """CRASHCHECK_READS_CACHE_MB=0 keeps only the last image's reads (harness/check/reads_cache.py):
    a search that meets an image judged before judges it again for its reads, so the bugs, their
    occurrences and the coverage are those of the default bound, with more executions."""
    monkeypatch.setattr("crashcheck.harness.check.program_explore.EAGER_BELOW", 1)
    checker = f"{pmlog['good']} check {{image}}"
    prog = ["--", pmlog["bug"], "append", "pool", "3"]
    code, _, _, kept = _run(tmp_path, "--strategy", "lazy", "--checker", checker, *prog)
    monkeypatch.setenv("CRASHCHECK_READS_CACHE_MB", "0")
    code0, _, _, dropped = _run(tmp_path, "--strategy", "lazy", "--checker", checker, *prog)
    assert code == code0 == 1
    assert _bugs(dropped) == _bugs(kept) and kept["bugs"]
    assert [b["occurrences"] for b in dropped["bugs"]] == [b["occurrences"] for b in kept["bugs"]]
    for name in ("crash_points", "states_legal", "states_explored", "points_sampled", "lazy_points", "lazy_states_legal"):
        assert dropped["stats"][name] == kept["stats"][name], name
    assert dropped["stats"]["executions"] > kept["stats"]["executions"], (dropped["stats"], kept["stats"])
