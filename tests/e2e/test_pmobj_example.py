"""examples/pmobj_hash: a libpmemobj hash map (transactions, a non-transactional fast path). Its
pool is mapped by libpmemobj itself (the adapter's create_file / open_file), and post-crash images
are opened with pmemobj_open so libpmemobj's own transaction recovery runs first. The pass traces
it (the runtime makes the pool a region and logs libpmemobj's own stores: tests/unit/test_pmemobj_pass.py)
and so does pmemcheck. Without its seeded bug it passes; with it (the fast path taken for a
two-word change) the torn value is found (slow: shrinking checks thousands of states, each a
pmemobj_open, and under pmemcheck each traced run is a run under Valgrind). A structure that maps
its pool some other way than libpmemobj is refused under the pass."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cli_run import ROOT, run_cli
from userbuild import build_once

EXAMPLE = ROOT / "examples" / "pmobj_hash"


@pytest.fixture(scope="module")
def pmobj_built(instrument_built):
    if not Path("/usr/include/libpmemobj.h").exists():
        pytest.skip("libpmemobj-dev not installed (scripts/setup installs it)")
    build_once("pmobj_hash", EXAMPLE / "pmobj_hash.c", "--adapter", EXAMPLE / "adapter.c",
               "--ldflags", "-lpmemobj")


@pytest.fixture(scope="module")
def pmobj(pmobj_built, pmemcheck):
    return {"CRASHCHECK_PMEMCHECK": pmemcheck}


def test_the_pass_traces_it(pmobj_built, tmp_path):
    res = run_cli("fuzz", "pmobj_hash", "--examples", "2", "--limit", "8", "--json", tmp_path / "r.json",
                  "--quiet", timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    r = json.loads((tmp_path / "r.json").read_text())
    assert r["tracer"] == "pass" and r["strategy"] == "bounded"
    st = r["stats"]
    assert st["histories"] == 2 and st["crash_points"] > 30 and st["states_checked"] > 50
    assert r["bugs"] == []


def test_lazy_is_refused(pmobj_built):
    """Lazy exploration branches on what recovery reads, and libpmemobj's reads are not instrumented."""
    lazy = run_cli("fuzz", "pmobj_hash", "--strategy", "lazy", "--examples", "1")
    assert lazy.returncode == 2 and "cannot tell its states apart" in lazy.stderr


def test_callers_in_process_get_bounded_too(pmobj_built, tmp_path):
    """fuzz_target (bench/detection, the pytest plugin) takes Settings whose strategy defaults to
    lazy; for a libpmemobj structure it must be bounded as under `fuzz`, or records are named by
    states the library's unseen reads tell apart from the one judged (they did not replay)."""
    from crashcheck.harness.core.budget import Budget
    from crashcheck.harness.core.settings import Settings
    from crashcheck.harness.run.config import Config
    from crashcheck.harness.run.search import Search
    lazy = Settings(seed=1)
    assert lazy.strategy == "lazy"
    s = Search("pmobj_hash", None, lazy, Config(examples=1, budget=None), 0, Budget(None), bugdir=tmp_path)
    assert s.settings.strategy == "bounded" and lazy.strategy == "lazy"
    assert Search("wort", None, lazy, Config(examples=1, budget=None), 0, Budget(None),
                  bugdir=tmp_path).settings.strategy == "lazy"


def test_a_pool_mapped_some_other_way_is_refused_under_the_pass(instrument_built):
    build_once("ownfile", "--adapter", ROOT / "tests" / "fixtures" / "ownfile" / "adapter.c")
    res = run_cli("fuzz", "ownfile", "--examples", "1")
    assert res.returncode == 2
    assert "maps its pool itself" in res.stderr and "other than through libpmemobj" in res.stderr
    assert "--tracer pmemcheck" in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_a_pool_libpmem_maps_is_traced_by_the_pass(instrument_built, tmp_path):
    """tests/fixtures/pmemfile maps its own pool with pmem_map_file: the pass traces it (the
    mapping is a region), the correct map passes and its seeded bug is found with its class."""
    if not Path("/usr/include/libpmem.h").exists():
        pytest.skip("libpmem-dev not installed (scripts/setup installs it)")
    fixture = ROOT / "tests" / "fixtures" / "pmemfile"
    build_once("pmemfile", "--adapter", fixture / "adapter.c", "--ldflags", "-lpmem")
    ok = run_cli("fuzz", "pmemfile", "--examples", "4", "--json", tmp_path / "ok.json", "--quiet")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    r = json.loads((tmp_path / "ok.json").read_text())
    assert r["bugs"] == [] and r["stats"]["crash_points"] > 20
    bad = run_cli("fuzz", "pmemfile", "--bug", "count-first", "--examples", "8", "--json", tmp_path / "bad.json",
                  "--quiet")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    [bug] = json.loads((tmp_path / "bad.json").read_text())["bugs"]
    assert bug["class"] == "wrong-value" and bug["lost"][0]["site"]["func"] == "a_insert"


@pytest.mark.slow
def test_the_fast_path_bug_is_found_under_the_pass(pmobj_built, tmp_path):
    res = run_cli("fuzz", "pmobj_hash", "--bug", "fast-two-words", "--examples", "4", "--limit", "8",
                  "--stop-on", "torn-update", "--json", tmp_path / "r.json", "--quiet", timeout=1200)
    assert res.returncode == 1, res.stdout + res.stderr
    r = json.loads((tmp_path / "r.json").read_text())
    [bug] = r["bugs"]
    assert bug["class"] == "torn-update" and bug["tracer"] == "pass"
    assert bug["lost"][0]["site"]["file"] == "examples/pmobj_hash/pmobj_hash.c"
    assert bug["lost"][0]["site"]["func"] == "ph_update"
    assert any(op.startswith("update") for op in bug["history"])
    replay = run_cli("replay", tmp_path / "r.bugs" / f"{bug['id']}.json", timeout=300)
    assert replay.returncode == 1, replay.stdout + replay.stderr


def test_the_correct_map_passes(pmobj, tmp_path):
    # one history: each run under pmemcheck (the history's, its probe's, recoveries') is seconds (CI time)
    res = run_cli("fuzz", "pmobj_hash", "--tracer", "pmemcheck", "--examples", "1", "--limit", "8",
                  "--json", tmp_path / "r.json", "--quiet", env_extra=pmobj, timeout=900)
    assert res.returncode == 0, res.stdout + res.stderr
    r = json.loads((tmp_path / "r.json").read_text())
    assert r["strategy"] == "bounded"          # its default: lazy cannot see libpmemobj's reads
    st = r["stats"]
    assert st["histories"] == 1 and st["crash_points"] > 10 and st["states_checked"] > 20
    assert r["bugs"] == []


@pytest.mark.slow
def test_the_fast_path_bug_is_found(pmobj, tmp_path):
    res = run_cli("fuzz", "pmobj_hash", "--bug", "fast-two-words", "--tracer", "pmemcheck", "--examples", "12",
                  "--limit", "8", "--stop-on", "torn-update", "--json", tmp_path / "r.json", "--quiet",
                  env_extra=pmobj, timeout=1800)
    assert res.returncode == 1, res.stdout + res.stderr
    r = json.loads((tmp_path / "r.json").read_text())
    [bug] = r["bugs"]
    assert bug["class"] == "torn-update" and bug["tracer"] == "pmemcheck"
    assert bug["lost"][0]["site"]["file"] == "examples/pmobj_hash/pmobj_hash.c"
    assert any(op.startswith("update") for op in bug["history"])


@pytest.mark.slow
def test_a_change_the_transaction_never_added_is_lost_under_the_pass(pmobj_built, tmp_path):
    """insert-no-add: the chain head changed inside a transaction without pmemobj_tx_add_range is
    not flushed at the commit (the runtime flushes only what the transaction added), so the entry
    can be lost after the insert returned."""
    res = run_cli("fuzz", "pmobj_hash", "--bug", "insert-no-add", "--examples", "4", "--limit", "8",
                  "--stop-on", "lost-durable-write", "--json", tmp_path / "r.json", "--quiet", timeout=1200)
    assert res.returncode == 1, res.stdout + res.stderr
    r = json.loads((tmp_path / "r.json").read_text())
    [bug] = r["bugs"]
    assert bug["class"] == "lost-durable-write" and bug["tracer"] == "pass"
    lost = bug["lost"][0]["site"]
    assert lost["file"] == "examples/pmobj_hash/pmobj_hash.c" and lost["func"] == "ph_insert"


def test_build_without_the_library_shows_the_linker(pmobj_built, tmp_path):
    """--ldflags is what brings libpmemobj in: without it the link fails with the linker's words."""
    src = tmp_path / "src"
    shutil.copytree(EXAMPLE, src)
    (src / "bugs.json").unlink()
    res = run_cli("build", "pmobj_nolib", src / "pmobj_hash.c", "--adapter", src / "adapter.c")
    assert res.returncode == 2
    assert "undefined reference to `pmemobj_" in res.stderr or "undefined symbol: pmemobj_" in res.stderr


def _check_states(native: Path, trace: Path, copy: bool) -> tuple[list, float]:
    """Every state of TRACE (bounded, no image cache) checked by NATIVE's runner: their answers
    in order, and the CPU seconds of the runner and its check processes."""
    import os
    import resource
    from crashcheck.crashsim.explore import explore
    from crashcheck.crashsim.runner_client import Runner
    from crashcheck.crashsim.trace import read_trace
    t = read_trace(trace)
    region = t.regions[0]
    env = {k: v for k, v in os.environ.items() if k not in ("CRASHCHECK_TRACE", "CRASHCHECK_OWN_POOL_COPY")}
    env["PMEM_IS_PMEM_FORCE"] = "1"      # as fuzz runs checks (harness/check/session.py)
    if copy:
        env["CRASHCHECK_OWN_POOL_COPY"] = "1"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    runner = Runner([str(native), "serve", "--size", str(region.size)], pool_size=region.size, env=env)
    answers = [(o.result.status, o.result.result) for o in
               explore(t, strategy="bounded", limit=12, seed=1, runner=runner, cache=False, relocatable=True)]
    runner.close()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return answers, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def test_states_are_checked_in_place_at_a_fraction_of_a_file_each(pmobj_built, tmp_path):
    """The check process hands libpmemobj the image it already holds (trees/common/own_image.c)
    instead of a file written per state: the same answers for every state, at well under the CPU
    (the file was written, faulted in through libpmemobj's mapping, closed and freed per state)."""
    import subprocess
    folder = ROOT / "build" / "user" / "pmobj_hash"
    value = lambda i: "x:" + (i.to_bytes(8, "little") * 2).hex()   # noqa: E731
    (tmp_path / "history").write_text("".join(f"insert {k} {value(k)}\n" for k in (5, 9, 2, 7)) +
                                      f"update 9 {value(11)}\n")
    env = {"CRASHCHECK_TRACE": str(tmp_path / "t.trace"), "PATH": "/usr/bin:/bin"}
    subprocess.run([str(folder / "driver"), "run", "--pool", str(tmp_path / "pool"), "--create",
                    str(tmp_path / "history")], check=True, env=env, stdout=subprocess.DEVNULL)
    copied, copy_cpu = _check_states(folder / "driver-native", tmp_path / "t.trace", copy=True)
    in_place, cpu = _check_states(folder / "driver-native", tmp_path / "t.trace", copy=False)
    assert len(in_place) > 40 and in_place == copied
    assert all(status == "ok" and res["recovered"] for status, res in in_place)
    assert cpu * 1.5 < copy_cpu, (cpu, copy_cpu)
