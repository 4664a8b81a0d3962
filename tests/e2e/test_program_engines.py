"""pmreorder's engine configuration and markers under `crashcheck run` (harness/check/engines.py):
tests/e2e/pmsections.c, a libpmem program marked in three sections, whose checker insists on
PMREORDER_MARKERS as pmreorder sets it. A NoReorderNoCheck section's inconsistent state is not
reported; NoReorderDoCheck checks only the in-order state; ReorderAccumulative's prefixes pass where
ReorderReverseAccumulative's suffixes find b without a; a bug the markers reveal is found and
replays with the same markers; bad engine options end with one line and exit 2."""
from __future__ import annotations

import contextlib
import io
import json
import subprocess
from pathlib import Path

import pytest

from cli_run import ROOT
from crashcheck.harness.check.engines import EngineConfig, Sections
from crashcheck.harness.cli.main import main

CC = ROOT / "instrument" / "bin" / "crashcheck-cc"
SOURCE = Path(__file__).with_name("pmsections.c")


def build_variants(out: Path, source: Path, variants: dict[str, list[str]], compiler=CC) -> dict[str, Path]:
    """SOURCE built once per variant (name -> extra flags) with COMPILER, against libpmem, into OUT."""
    exes = {}
    for name, flags in variants.items():
        exes[name] = out / f"{source.stem}-{name}"
        subprocess.run([str(compiler), "-O1", "-g", *flags, str(source), "-lpmem", "-o", str(exes[name])],
                       check=True, capture_output=True)
    return exes


@pytest.fixture(scope="module")
def built(tmp_path_factory, instrument_built) -> dict[str, Path]:
    return build_variants(tmp_path_factory.mktemp("pmsections"), SOURCE, {"ok": [], "bug": ["-DPUT_BUG"],
                                                                                "endbad": ["-DEND_BAD"]})


def _main(*args) -> subprocess.CompletedProcess:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def _run(built, tmp: Path, *opts, exe: str = "ok") -> tuple[subprocess.CompletedProcess, dict]:
    tmp.mkdir(parents=True, exist_ok=True)
    res = _main("run", "--quiet", "--json", tmp / "out.json", "--checker", f"{built['ok']} check {{image}}",
                *opts, "--", built[exe], "write", "pool")
    results = json.loads((tmp / "out.json").read_text()) if (tmp / "out.json").exists() else {}
    return res, results


def _details(results: dict) -> list[str]:
    return [b["detail"] for b in results["bugs"]]


def test_engines_per_section(built, tmp_path):
    # no engines: every crash point checked, the setup section's x-without-y and the pair's
    # b-without-a both reported (the checker is told the markers all the same)
    res, results = _run(built, tmp_path / "plain")
    assert res.returncode == 1, res.stdout + res.stderr
    details = " ".join(_details(results))
    assert "x 1 without y 0" in details and "b persisted without a" in details
    # setup unchecked, pair in order only, elsewhere bounded: clean
    res, results = _run(built, tmp_path / "doc", "-x", "setup=NoReorderNoCheck,pair=NoReorderDoCheck",
                        "-r", "ReorderPartial")
    assert res.returncode == 0, res.stdout + res.stderr
    assert results["stats"]["points_unchecked"] >= 2
    assert "crash points inside NoReorderNoCheck sections not checked" in res.stdout
    # prefixes (), (a), (a, b) never have b without a; suffixes (), (b) do. A JSON config file
    cfg = tmp_path / "engines.json"
    cfg.write_text(json.dumps({"setup": "NoReorderNoCheck", "pair": "ReorderAccumulative"}))
    res, results = _run(built, tmp_path / "acc", "-x", cfg, "-r", "ReorderFull")
    assert res.returncode == 0, res.stdout + res.stderr
    res, results = _run(built, tmp_path / "rev", "-x", cfg, "-x", "pair=ReorderReverseAccumulative",
                        "-r", "ReorderFull")
    assert res.returncode == 1 and _details(results) and all("b persisted without a" in d for d in _details(results))
    assert results["program"]["engines"]["markers"]["pair"] == "ReorderReverseAccumulative"
    assert results["stats"]["engine_markers_unseen"] == []
    # a marker name the program never emits is said, not silently ignored
    res, results = _run(built, tmp_path / "typo", "-x", "piar=NoReorderDoCheck", "-r", "ReorderFull")
    assert results["stats"]["engine_markers_unseen"] == ["piar"]
    assert "emitted no marker of piar (given to -x)" in res.stdout


def test_markers_told_to_checker_and_replayed(built, tmp_path):
    # v persists only after put.END: a crash then, with the markers saying put ended, is a bug
    res, results = _run(built, tmp_path, "-x", "setup=NoReorderNoCheck,pair=NoReorderDoCheck", "-r",
                        "ReorderPartial", exe="bug")
    assert res.returncode == 1, res.stdout + res.stderr
    [bug] = results["bugs"]
    assert "put ended but v did not persist" in bug["detail"]
    rep = _main("replay", tmp_path / "out.bugs" / f"{bug['id']}.json")
    assert rep.returncode == 1 and "reproduced" in rep.stdout, rep.stdout + rep.stderr


def test_failing_end_judged_only_where_engines_check(built, tmp_path):
    # the run ends inconsistent (x set alone, past every section): without engines the commands
    # cannot judge (exit 2); under -x, as under pmreorder, only the put section's states are
    # judged (consistent), and the crash-free failure is reported
    res, _ = _run(built, tmp_path / "plain", exe="endbad")
    assert res.returncode == 2 and "on the crash-free image" in res.stderr
    res, results = _run(built, tmp_path / "x", "-x", "put=ReorderAccumulative", exe="endbad")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "x 2 without y 1" in results["stats"]["crash_free_failed"]
    assert "engines: the commands fail on the crash-free image" in res.stdout
    res, results = _run(built, tmp_path / "ok", "-x", "put=ReorderAccumulative")
    assert res.returncode == 0 and results["stats"]["crash_free_failed"] is None


@pytest.mark.parametrize("opts, words", [
    (["-x", "pair=Sideways"], "unknown engine 'Sideways'"),
    (["-x", "pair"], "MARKER=ENGINE"),
    (["-r", "Full"], "-r: unknown engine 'Full'"),
])
def test_bad_engine_options(built, tmp_path, opts, words):
    res, _ = _run(built, tmp_path, *opts)
    assert res.returncode == 2 and words in res.stderr and "Traceback" not in res.stderr, res.stderr


def test_bad_config_file(built, tmp_path):
    cfg = tmp_path / "bad.json"
    cfg.write_text('{"pair": ')
    res, _ = _run(built, tmp_path, "-x", cfg)
    assert res.returncode == 2 and "not a JSON config file" in res.stderr, res.stderr


def test_sections_nest_as_pmreorder_stacks_them():
    # an unconfigured section keeps its enclosing engine; its END restores the enclosing one
    markers = [(2, "outer.BEGIN"), (4, "inner.BEGIN"), (6, "inner.END"), (8, "outer.END"), (10, "solo.BEGIN")]
    s = Sections(markers, EngineConfig({"outer": "ReorderAccumulative", "solo": "NoReorderNoCheck"}, "ReorderFull"))
    assert [s.engine_at(e) for e in (0, 3, 5, 7, 9, 11)] == [
        "ReorderFull", "ReorderAccumulative", "ReorderAccumulative", "ReorderAccumulative", "ReorderFull",
        "NoReorderNoCheck"]
    assert s.env(0) == {"PMREORDER_MARKERS": ""}
    assert s.env(5) == {"PMREORDER_MARKERS": "outer.BEGIN|inner.BEGIN"}
    assert Sections([], None).env(5) == {} and Sections(markers, None).engine_at(5) is None


def test_stop_on_failure_ends_at_the_first_failing_state(built, tmp_path):
    # the whole run finds two bugs (the setup section's x without y, the pair's b without a); the
    # verdict alone (a pmreorder TEST's pmreorder_expect_failure) needs the first: one record,
    # shrunk and replayable, and the crash points after it not judged, said so
    res, whole = _run(built, tmp_path / "whole")
    assert res.returncode == 1 and len(whole["bugs"]) == 2
    assert whole["stats"]["stopped_at_failure"] is False and whole["stats"]["points_left_by_stop"] == 0
    res, first = _run(built, tmp_path / "first", "--stop-on-failure")
    assert res.returncode == 1, res.stdout + res.stderr
    [bug] = first["bugs"]
    assert "x 1 without y 0" in bug["detail"]
    st = first["stats"]
    assert st["stopped_at_failure"] is True and st["points_left_by_stop"] > 0
    assert st["executions"] < whole["stats"]["executions"]
    assert st["crash_points"] + st["points_left_by_stop"] == whole["stats"]["crash_points"]
    assert "stopped at the first failing crash state (--stop-on-failure)" in res.stdout
    rep = _main("replay", tmp_path / "first" / "out.bugs" / f"{bug['id']}.json")
    assert rep.returncode == 1 and "reproduced" in rep.stdout, rep.stdout + rep.stderr
