"""`crashcheck run --setup 'CMD'` (harness/target/program.py run_setup): a shell command run
untraced in the program's folder before its traced run, so the pool it leaves is where the traced
run and every crash image start; records carry the program's own name and replay runs the set-up
again; a failing set-up ends with one line and exit 2."""
from __future__ import annotations

import json

from test_program_engines import _main, built  # noqa: F401  (the fixture)

# a 4 KiB pool with "TAG!" at offset 1024, which the program never writes
SETUP = "printf '%1024s' '' > pool && printf 'TAG!' >> pool && truncate -s 4096 pool"


def _run(built, tmp, *opts, exe="ok"):  # noqa: F811
    tmp.mkdir(parents=True, exist_ok=True)
    return _main("run", "--quiet", "--json", tmp / "out.json", "--checker", f"{built['ok']} check-tag {{image}}",
                 "-x", "setup=NoReorderNoCheck,pair=NoReorderDoCheck", "-r", "ReorderPartial",
                 *opts, "--", built[exe], "write", "pool")


def test_setup_pool_is_the_start(built, tmp_path):  # noqa: F811
    # without the set-up the program makes an empty pool: the checker rejects the crash-free image
    res = _run(built, tmp_path / "none")
    assert res.returncode == 2 and "no tag from the set-up command" in res.stderr, res.stdout + res.stderr
    res = _run(built, tmp_path, "--setup", SETUP)
    assert res.returncode == 0, res.stdout + res.stderr
    res = _run(built, tmp_path / "bug", "--setup", SETUP, exe="bug")
    assert res.returncode == 1, res.stdout + res.stderr
    results = json.loads((tmp_path / "bug" / "out.json").read_text())
    [bug] = results["bugs"]
    assert bug["id"].startswith("pmsections-bug-") and bug["program"]["setup"] == SETUP
    rep = _main("replay", tmp_path / "bug" / "out.bugs" / f"{bug['id']}.json")
    assert rep.returncode == 1 and "put ended but v did not persist" in rep.stdout, rep.stdout + rep.stderr


def test_setup_failing(built, tmp_path):  # noqa: F811
    res = _run(built, tmp_path, "--setup", "echo no room >&2; exit 3")
    assert res.returncode == 2 and "the set-up command exited with status 3" in res.stderr
    assert "no room" in res.stderr and "Traceback" not in res.stderr
