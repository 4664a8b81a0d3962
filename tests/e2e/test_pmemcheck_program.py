"""`crashcheck run --tracer pmemcheck` on a program built by a plain compiler (tests/e2e/vgdetect.c,
harness/target/program.py, tracers.py, crashsim/pmemcheck_import.py): the traced run and every
crash image start from the pool a --setup command left (its bytes copied before the run: the
store log has none); Valgrind follows exec, so a `sh -c '... exec prog'` wrapper traces prog;
stores libpmem makes are named by the user's call (a deeper stack, the first frame outside
libpmem and libc); one cause is one bug (a settled point repeating a failing image is that bug)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pmemcheck_tool import find_pmemcheck
from test_program_engines import _main, build_variants

SOURCE = Path(__file__).with_name("vgdetect.c")
SETUP = "truncate -s 1024 pool && printf 'TAG!' >> pool && truncate -s 4096 pool"


@pytest.fixture(scope="module")
def plain(tmp_path_factory, monkeypatch_module) -> dict[str, Path]:
    pmemcheck = find_pmemcheck()
    if pmemcheck is None:
        pytest.skip("no pmemcheck ($CRASHCHECK_PMEMCHECK, PATH, ../shared/tools/pmemcheck)")
    monkeypatch_module.setenv("CRASHCHECK_PMEMCHECK", pmemcheck)
    return build_variants(tmp_path_factory.mktemp("vgplain"), SOURCE, {"bug": [], "good": ["-DVG_GOOD"]},
                          compiler=shutil.which("cc") or shutil.which("clang-16"))


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def _run(plain, tmp: Path, *argv, checker="check-tag"):
    tmp.mkdir(parents=True, exist_ok=True)
    res = _main("run", "--quiet", "--tracer", "pmemcheck", "--json", tmp / "r.json",
                "--checker", f"{plain['good']} {checker} {{image}}", *argv)
    return res, (json.loads((tmp / "r.json").read_text()) if (tmp / "r.json").exists() else {})


def test_starts_from_the_setup_pool_and_follows_exec(plain, tmp_path):
    res, _ = _run(plain, tmp_path / "good", "--setup", SETUP, "--", plain["good"], "write", "pool")
    assert res.returncode == 0, res.stdout + res.stderr            # the tag kept in every image
    # through a shell that execs the program: pmemcheck's log is the program's, not sh's
    res, results = _run(plain, tmp_path / "sh", "--setup", SETUP, "--", "/bin/sh", "-c",
                        f"exec {plain['bug']} write pool")
    assert res.returncode == 1, res.stdout + res.stderr
    [bug] = results["bugs"]                  # one cause, one bug
    assert "flag without data" in bug["detail"] and "vgdetect.c:" in bug["group"], bug


def test_libpmem_stores_named_by_the_users_call(plain, tmp_path):
    res, results = _run(plain, tmp_path, "--", plain["good"], "scratch", "pool", checker="check")
    assert res.returncode == 1, res.stdout + res.stderr
    sites = [s for b in results["bugs"] for s in b["lost"] + b.get("persisted", [])]
    assert sites and all(s["site"]["file"].endswith("vgdetect.c") for s in sites), sites
