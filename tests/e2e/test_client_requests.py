"""Valgrind client requests in code built with crashcheck-cc (instrument/runtime/rt_valgrind.c):
tests/e2e/vgdetect.c looks for pmemcheck as PMDK does and marks its sections only when it finds
it. Under the pass, in a traced run, the runtime answers as pmemcheck would (RUNNING_ON_VALGRIND,
the registered-mapping check), so the program's markers reach the trace and `crashcheck run`
names and configures its sections; outside a traced run every request gives its default, as
natively; a request no tool knows gives its default always; pmemcheck's DO_FLUSH / DO_FENCE are
a flush and a fence; under a real pmemcheck the requests reach it unchanged. With
PMREORDER_EMIT_LOG=1 a call of one of libpmem's memset/memcpy functions is marked as PMDK's libpmem
marks it under pmemcheck, so `-x pmem_memset_persist=NoReorderNoCheck` skips a set-up that passes
through inconsistent states, the settled states between two such calls included."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from pmemcheck_tool import find_pmemcheck
from test_program_engines import _main, build_variants

SOURCE = Path(__file__).with_name("vgdetect.c")


@pytest.fixture(scope="module")
def vgdetect(tmp_path_factory, instrument_built) -> dict[str, Path]:
    return build_variants(tmp_path_factory.mktemp("vgdetect"), SOURCE, {"bug": [], "good": ["-DVG_GOOD"]})


def _write(exe: Path, cwd: Path, **env) -> str:
    cwd.mkdir(parents=True, exist_ok=True)
    run_env = {k: v for k, v in os.environ.items() if not k.startswith("CRASHCHECK_")}
    run_env.update(PMEM_IS_PMEM_FORCE="1", **env)
    res = subprocess.run([exe, "write", "pool"], cwd=cwd, env=run_env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout.strip()


def test_requests_answered_as_pmemcheck_in_a_traced_run(vgdetect, tmp_path):
    # natively: no Valgrind, so no markers; the unknown request's default either way
    assert _write(vgdetect["bug"], tmp_path / "native") == "valgrind=0 pmemcheck=0 other=77"
    trace = tmp_path / "run.trace"
    assert _write(vgdetect["bug"], tmp_path / "traced", CRASHCHECK_TRACE=str(trace)) == \
        "valgrind=1 pmemcheck=1 other=77"
    shown = _main("trace", "show", trace, "--json")
    assert shown.returncode == 0, shown.stderr
    events = [json.loads(line) for line in shown.stdout.splitlines() if line.startswith("{")]
    kinds = [e["kind"] for e in events]
    marks = [e["label"] for e in events if e["kind"] == "mark"]
    assert marks == ["put.BEGIN", "put.END", "note.BEGIN", "note.END"], events
    # the note persists through DO_FLUSH then DO_FENCE alone: a flush of its line, then a fence
    note = kinds.index("mark", len(kinds) - 4 - 1)
    tail = events[note:]
    assert [e["kind"] for e in tail] == ["mark", "store", "flush", "fence", "mark"], tail
    assert tail[1]["off"] == 128 and tail[2]["off"] == 128 and tail[2]["line"] + 1 == tail[3]["line"]


def test_markers_name_and_configure_the_sections(vgdetect, tmp_path):
    def run(name, *opts, exe="bug"):
        out = tmp_path / name
        out.mkdir()
        res = _main("run", "--quiet", "--json", out / "r.json", "--checker", f"{vgdetect['good']} check {{image}}",
                    *opts, "--", vgdetect[exe], "write", "pool")
        return res, (json.loads((out / "r.json").read_text()) if (out / "r.json").exists() else {})

    res, results = run("plain")
    assert res.returncode == 1, res.stdout + res.stderr
    assert results["bugs"] and all("during put" in b["detail"] for b in results["bugs"])  # not "the whole run"
    # the marked section configured away: pmreorder's engines key on the program's own markers
    res, results = run("skipped", "-r", "NoReorderDoCheck", "-x", "put=NoReorderNoCheck")
    assert res.returncode == 0 and results["stats"]["points_unchecked"] > 0, res.stdout + res.stderr
    res, _ = run("good", exe="good")
    assert res.returncode == 0, res.stdout + res.stderr


def test_libpmem_markers_skip_a_scratch_setup(vgdetect, tmp_path, monkeypatch):
    def run(name, emit):
        out = tmp_path / name
        out.mkdir()
        monkeypatch.setenv("PMREORDER_EMIT_LOG", emit)
        res = _main("run", "--quiet", "--json", out / "r.json", "--checker", f"{vgdetect['good']} check {{image}}",
                    "-r", "ReorderFull", "-x", "pmem_memset_persist=NoReorderNoCheck",
                    "--", vgdetect["good"], "scratch", "pool")
        return res, (json.loads((out / "r.json").read_text()) if (out / "r.json").exists() else {})

    # without the library's markers the flag-without-data state after the second memset is checked
    res, results = run("unmarked", "0")
    assert res.returncode == 1 and "flag without data" in results["bugs"][0]["detail"], res.stdout + res.stderr
    res, results = run("marked", "1")
    assert res.returncode == 0 and results["stats"]["points_unchecked"] > 0, res.stdout + res.stderr
    # FUNC.BEGIN then libpmem.BEGIN: the first boundary has the next one's states, fewer markers
    assert results["stats"]["points_repeated"] > 0
    assert "pmem_memset_persist" not in res.stdout + res.stderr     # the marker was seen (no "never applied")


def test_requests_reach_a_real_pmemcheck(vgdetect, tmp_path):
    pmemcheck = find_pmemcheck()
    if pmemcheck is None:
        pytest.skip("no pmemcheck ($CRASHCHECK_PMEMCHECK, PATH, ../shared/tools/pmemcheck)")
    tmp_path.mkdir(exist_ok=True)
    res = subprocess.run([pmemcheck, "-q", "--log-stores=yes", f"--log-file={tmp_path / 'vg.log'}",
                          vgdetect["bug"], "write", "pool"], cwd=tmp_path, capture_output=True, text=True,
                         env=dict(os.environ, PMEM_IS_PMEM_FORCE="1"), timeout=120)
    assert res.returncode == 0 and res.stdout.strip() == "valgrind=1 pmemcheck=1 other=77", res.stdout + res.stderr
    log = (tmp_path / "vg.log").read_text()
    assert "|put.BEGIN|" in log and "|note.END" in log
