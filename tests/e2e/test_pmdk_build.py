"""libpmem/libpmemobj built with the pass (instrument/build-pmdk, `crashcheck-cc --pmdk`), without
a PMDK tree: tests/fixtures/fakepmdk/fakelib.c stands in for a library compiled in library mode
(CRASHCHECK_PASS_PMDK=lib). Its own mmap of a pool makes the region (not the header page it maps
first), its stores and flushes are traced at its lines, the program's calls into it are `cc-call`
marks at the program's lines, PMEM_IS_PMEM_FORCE is set, and lazy exploration follows a checker's
reads through that mapping. Bad `--pmdk` folders and trees end with one line and exit 2.
`crashcheck build --pmdk` links an adapter (tests/fixtures/fakepmdk/adapter.c) with a fake
build-pmdk folder made of it: fuzz traces the library's pool and stores (the run-time function
pointer the library keeps in the pool is no code-pointer-in-pm) from a pool the library's create
made once, untraced (harness/check/base_pool.py), and a seeded bug's crash and stores are library
lines, each store named by its call stack (`cc-stack` marks: the adapter's call, then the
library's own call) in the trace, the record, the summary and replay."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from cli_run import ROOT, run_cli
from crashcheck.crashsim.trace import read_trace
from crashcheck.harness.target import toolchain
from crashcheck.harness.triage.pmdk_calls import Calls, stack_text
from test_program_lazy import _run

CC = ROOT / "instrument" / "bin" / "crashcheck-cc"
FIX = ROOT / "tests" / "fixtures" / "fakepmdk"
# the line of fakelib.c's pmemobj_fake_set that calls its own fake_persist_word
SET_LINE = next(i for i, x in enumerate((FIX / "fakelib.c").read_text().splitlines(), 1)
                if "fake_persist_word((long" in x)

pytestmark = pytest.mark.usefixtures("instrument_built")


def _cc(mode: str, *args):
    env = {**os.environ, "CRASHCHECK_PASS_PMDK": mode}
    subprocess.run([CC, *map(str, args)], check=True, capture_output=True, env=env)


@pytest.fixture(scope="module")
def prog(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("fakepmdk")
    _cc("lib", "-O1", "-c", FIX / "fakelib.c", "-o", out / "fakelib.o")
    _cc("program", "-O1", "-c", FIX / "prog.c", "-o", out / "prog.o")
    _cc("program", out / "prog.o", out / "fakelib.o", "-o", out / "prog")
    return out / "prog"


def test_the_library_mapping_is_the_region_and_its_stores_are_traced(prog, tmp_path):
    env = {**os.environ, "CRASHCHECK_TRACE": str(tmp_path / "t.trace")}
    env.pop("PMEM_IS_PMEM_FORCE", None)
    r = subprocess.run([prog, "write", "pool"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "PMEM_IS_PMEM_FORCE=1" in r.stdout
    trace = read_trace(tmp_path / "t.trace")
    assert [rg.size for rg in trace.regions] == [1 << 16]          # not the 4096-byte header map
    stores = [ev for ev in trace.events if ev.kind == "store"]
    assert [ev.off for ev in stores] == [(1 << 16) - 8, 0, 8]     # the run-time pointer, then the words
    assert {Path(trace.site(ev.site).file).name for ev in stores} == {"fakelib.c"}
    assert sum(ev.kind == "flush" for ev in trace.events) == 2
    marks = [(bytes(ev.data).decode(), Path(trace.site(ev.site).file).name)
             for ev in trace.events if ev.kind == "mark" and bytes(ev.data).startswith(b"cc-call")]
    assert marks == [("cc-call pmemobj_fake_open", "prog.c"), ("cc-call pmemobj_fake_set", "prog.c"),
                     ("cc-call pmemobj_fake_set", "prog.c")]
    # the shadow call stack: before each store, the program's call, then the library's own call
    calls = Calls(trace)
    named = [calls.of(ev.seq) for ev in stores]
    assert [stack_text(c) for c in named[1:]] == [
        f"pmemobj_fake_set at {FIX / 'prog.c'}:{n} > fake_persist_word at {FIX / 'fakelib.c'}:{SET_LINE}"
        for n in (22, 23)]
    assert named[0]["function"] == "pmemobj_fake_open" and len(named[0]["stack"]) == 1


def test_lazy_follows_the_checkers_reads_through_the_library_mapping(prog, tmp_path, monkeypatch):
    monkeypatch.setattr("crashcheck.harness.check.program_explore.EAGER_BELOW", 1)   # every point lazily
    code, out, err, res = _run(tmp_path, "--strategy", "lazy", "--checker", f"{prog} check {{image}}",
                               "--", prog, "write", "pool")
    assert code == 0, out + err
    assert res["stats"]["lazy_fallback"] is None and res["stats"]["lazy_points"] >= 1


def test_bad_pmdk_folders_and_trees_end_with_one_line(tmp_path):
    r = subprocess.run([CC, "--pmdk", tmp_path, "-c", FIX / "prog.c", "-o", tmp_path / "p.o"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "no instrumented PMDK build" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    r = subprocess.run([ROOT / "instrument" / "build-pmdk", tmp_path, tmp_path / "out"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "is no PMDK source tree" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.fixture(scope="module")
def fake_build(tmp_path_factory) -> tuple[Path, Path]:
    """A folder shaped as instrument/build-pmdk's output (fakelib.c compiled in library mode as
    lib/libpmemobj.a, an empty lib/libpmem.a, include/libpmemobj.h) and one with fakelib.c
    compiled natively as libpmemobj.a (the native driver's -lpmemobj, Debian's in real use)."""
    d = tmp_path_factory.mktemp("fakebuild")
    (d / "pmdk" / "lib").mkdir(parents=True)
    (d / "pmdk" / "include").mkdir()
    (d / "native").mkdir()
    _cc("lib", "-O1", "-c", FIX / "fakelib.c", "-o", d / "fakelib.o")
    subprocess.run(["ar", "rcs", d / "pmdk" / "lib" / "libpmemobj.a", d / "fakelib.o"], check=True)
    subprocess.run(["ar", "rcs", d / "pmdk" / "lib" / "libpmem.a"], check=True)
    (d / "pmdk" / "include" / "libpmemobj.h").write_text((FIX / "libpmemobj.h").read_text())
    subprocess.run([toolchain.current().clang, "-O1", "-mclwb", "-c", FIX / "fakelib.c", "-o", d / "native.o"],
                   check=True)
    subprocess.run(["ar", "rcs", d / "native" / "libpmemobj.a", d / "native.o"], check=True)
    return d / "pmdk", d / "native"


def test_build_links_an_adapter_with_the_instrumented_library_and_fuzz_traces_it(fake_build, tmp_path):
    pmdk, native = fake_build
    builds = tmp_path / "builds"
    res = run_cli("build", "fakeobj", "--adapter", FIX / "adapter.c", "--pmdk", pmdk,
                  "--ldflags", f"-L{native} -lpmemobj", "--out", builds)
    assert res.returncode == 0, res.stderr
    assert json.loads((builds / "fakeobj" / "meta.json").read_text())["pmdk"] == str(pmdk)
    env = {"CRASHCHECK_BUILDS": str(builds)}
    ok = run_cli("fuzz", "fakeobj", "--examples", "3", "--seed", "1", "--quiet", "--json", tmp_path / "ok.json",
                 cwd=tmp_path, env_extra=env)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    r = json.loads((tmp_path / "ok.json").read_text())
    assert r["bugs"] == [] and r["stats"]["crash_points"] > 5
    bad = run_cli("fuzz", "fakeobj", "--bug", "count-first", "--examples", "6", "--seed", "1", "--quiet",
                  "--json", tmp_path / "bad.json", cwd=tmp_path, env_extra=env)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    [bug] = json.loads((tmp_path / "bad.json").read_text())["bugs"]
    # the count persisted before the entry: the crash and the store are the library's lines
    assert bug["class"] == "wrong-value" and bug["crash"]["site"]["file"].endswith("fakepmdk/fakelib.c")
    assert bug["persisted"] and {Path(st["site"]["file"]).name for st in bug["persisted"]} == {"fakelib.c"}
    # named by their calls: the adapter's call of the library, then the library's own call
    # (pmemobj_fake_open_pool's run-time pointer, or the words pmemobj_fake_set persisted)
    assert {st["call"]["function"] for st in bug["persisted"]} <= {"pmemobj_fake_open_pool", "pmemobj_fake_set"}
    sets = [st["call"]["stack"] for st in bug["persisted"] if st["call"]["function"] == "pmemobj_fake_set"]
    assert sets
    for outer, inner in sets:
        assert Path(outer["file"]).name == "adapter.c" and outer["via"] == ["pmemobj_fake_set()"]
        assert inner["line"] == SET_LINE and inner["via"] == ["fake_persist_word()"]
    said = " ".join(bad.stdout.split())      # the console wraps long lines
    assert "inside the library, called from: " in said and "> fake_persist_word at " in said, said
    assert "tests/fixtures/fakepmdk/fakelib.c:" in bug["group"], bug["group"]   # by the library line
    # each history opened a copy of one pool made untraced beside its driver: the library's
    # create (its random identifier, its magic word not yet drained) is in no trace, so the
    # correct map is clean, and the record replays the same run
    assert len(list((builds / "fakeobj").glob(".driver-bug-count-first.pool-*"))) == 1
    rep = run_cli("replay", tmp_path / "bad.bugs" / f"{bug['id']}.json", cwd=tmp_path, env_extra=env)
    assert rep.returncode == 1 and "reproduced" in rep.stdout, rep.stdout + rep.stderr
    # a lost library store: the record and the replay name it by its stack
    lost = run_cli("fuzz", "fakeobj", "--bug", "count-unflushed", "--examples", "3", "--seed", "1", "--quiet",
                   "--json", tmp_path / "lost.json", cwd=tmp_path, env_extra=env)
    assert lost.returncode == 1, lost.stdout + lost.stderr
    [bug] = json.loads((tmp_path / "lost.json").read_text())["bugs"]
    assert bug["class"] == "lost-durable-write"
    [st] = bug["lost"]
    assert [(Path(f["file"]).name, f["via"]) for f in st["call"]["stack"]] == [
        ("adapter.c", ["pmemobj_fake_store()"]), ("fakelib.c", ["fake_store_word()"])]
    rep = run_cli("replay", tmp_path / "lost.bugs" / f"{bug['id']}.json", cwd=tmp_path, env_extra=env)
    assert rep.returncode == 1 and "called from: pmemobj_fake_store at " in rep.stdout, rep.stdout + rep.stderr


def test_build_with_a_bad_pmdk_folder_ends_with_one_line(tmp_path):
    res = run_cli("build", "fakeobj", "--adapter", FIX / "adapter.c", "--pmdk", tmp_path, "--out", tmp_path)
    assert res.returncode == 2 and "no instrumented PMDK build" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
