"""A user's flags and hooks against crashcheck's own code.

`--cflags` reach the structure's sources and adapter only: a header forced in to send malloc to the
pool (tests/fixtures/poolhook) must not rewrite crashcheck's own allocator, which would then call
itself. `--common-cflags` is the separate way to give trees/common a flag. A crash whose fault lies
in crashcheck's own code (a hook that still reaches it: --common-cflags, --ldflags -Wl,--wrap) is a
set-up error: one line naming the frame and the likely cause, exit 2, no bug record, whether it
happens in the crash-free run or in a crash-state check of the runner. A crash inside crashcheck's
code that the structure caused by calling it with a bad pointer stays the structure's bug."""
import json
from pathlib import Path

import pytest
from cli_run import run_cli
from userbuild import build_once

ROOT = Path(__file__).resolve().parents[2]
MINIKV = ROOT / "examples" / "minikv"
HOOK = ROOT / "tests" / "fixtures" / "poolhook"
WRAP = ROOT / "tests" / "fixtures" / "wraphook"
SETUP_LINE = "crashcheck: error: "


def minikv_args(*extra) -> list:
    return [MINIKV / "minikv.c", *extra, "--adapter", MINIKV / "adapter.c", "--bugs", MINIKV / "bugs.json"]


def assert_setup_error(res, who: str, function: str, bugdir: Path) -> str:
    """RES ended with one set-up error line naming WHO and crashcheck's FUNCTION; nothing recorded."""
    assert res.returncode == 2, res.stdout + res.stderr
    assert "Traceback" not in res.stderr
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith(SETUP_LINE + who + " died of SIGSEGV (signal 11) in crashcheck's own code"), last
    assert f"{function} (trees/common/pm_malloc.c:" in last and "likely cause: a hook" in last, last
    assert "no bug recorded" in last
    assert not bugdir.exists() or not any(bugdir.iterdir())
    return last


@pytest.fixture(scope="module")
def poolhook(instrument_built):
    return build_once("flags-poolhook", *minikv_args(HOOK / "hook.c"), "--cflags", f"-include {HOOK / 'hook.h'}")


def test_cflags_hook_reaches_the_structure_not_crashcheck(poolhook, tmp_path):
    """hook.h sends malloc, posix_memalign and free to the pool (asm labels: no #undef undoes
    them). In minikv it does; had it reached trees/common, pm_malloc.c's own malloc (before a pool
    exists) would come back into it until the stack ran out, in every run's set-up."""
    out = tmp_path / "r.json"
    res = run_cli("fuzz", "flags-poolhook", "--bug", "update-no-flush", "--examples", "30", "--quiet",
                  "--stop-on", "lost-durable-write", "--json", out, "--bugdir", tmp_path / "bugs")
    assert res.returncode == 1, res.stdout + res.stderr
    classes = {b["class"] for b in json.loads(out.read_text())["bugs"]}
    assert "lost-durable-write" in classes, classes
    assert not classes & {"operation-crash", "operation-hang"}, classes
    meta = json.loads((poolhook / "meta.json").read_text())
    assert "-include" in meta["cflags"] and meta["common_cflags"] == ""


def test_common_cflags_reach_crashcheck_code_and_its_crash_is_a_setup_error(instrument_built, tmp_path):
    """The same hook given to trees/common on purpose (--common-cflags): the pool allocator calls
    itself, and the run ends with one line naming it, not with an operation-crash of minikv."""
    build_once("flags-commonhook", *minikv_args(HOOK / "hook.c"), "--cflags", f"-include {HOOK / 'hook.h'}",
               "--common-cflags", f"-include {HOOK / 'hook.h'}")
    bugs = tmp_path / "bugs"
    res = run_cli("fuzz", "flags-commonhook", "--examples", "3", "--bugdir", bugs, "--json", tmp_path / "r.json")
    assert_setup_error(res, "the driver of flags-commonhook", "cc_pm_malloc_at", bugs)


def test_wrapped_malloc_reentering_crashcheck_in_the_crash_free_run(instrument_built, tmp_path):
    """--ldflags -Wl,--wrap=malloc reaches every object of the one link, crashcheck's too: the pool
    allocator's malloc comes back into it. The traced run dies before its set-up ends."""
    build_once("flags-wrapmalloc", *minikv_args(WRAP / "wrapmalloc.c"), "--pm-malloc",
               "--ldflags", "-Wl,--wrap=malloc")
    bugs = tmp_path / "bugs"
    res = run_cli("fuzz", "flags-wrapmalloc", "--examples", "3", "--bugdir", bugs, "--json", tmp_path / "r.json")
    last = assert_setup_error(res, "the driver of flags-wrapmalloc", "cc_pm_malloc_at", bugs)
    assert "was entered again while it ran" in last


def test_hook_reentering_crashcheck_in_crash_state_checks(instrument_built, tmp_path):
    """A hook active only once a pool image is attached: the crash-free run is clean, every check of
    a crash state (the runner's forked or reused check process) dies in crashcheck's cc_pm_free."""
    build_once("flags-wrapfree", *minikv_args(WRAP / "wrapfree.c"), "--pm-malloc",
               "--ldflags", "-Wl,--wrap=free -Wl,--wrap=pm_pool_attach")
    bugs = tmp_path / "bugs"
    res = run_cli("fuzz", "flags-wrapfree", "--examples", "3", "--recovery-crashes", "0", "--bugdir", bugs,
                  "--json", tmp_path / "r.json")
    assert_setup_error(res, "a crash-state check of flags-wrapfree", "cc_pm_free", bugs)


def test_a_bad_pointer_the_structure_hands_crashcheck_is_the_structures_bug(instrument_built, tmp_path):
    """pm_free aborts inside crashcheck's allocator, but the structure's insert is on the stack and
    called it: an operation-crash of the structure, as before."""
    build_once("flags-badcall", "--adapter", ROOT / "tests" / "fixtures" / "badcall" / "adapter.c")
    out = tmp_path / "r.json"
    res = run_cli("fuzz", "flags-badcall", "--examples", "5", "--quiet", "--json", out, "--bugdir", tmp_path / "b")
    assert res.returncode == 1, res.stdout + res.stderr
    bugs = json.loads(out.read_text())["bugs"]
    assert [b["class"] for b in bugs] == ["operation-crash"]
    assert "SIGABRT" in bugs[0]["detail"] and "crashcheck-fault" not in res.stderr
