"""`crashcheck doctor`: one line per part crashcheck uses, what is missing and how to get it.

A missing part crashcheck cannot check anything without (the pass, a usable work folder) makes
it exit 1 and name the part; a missing optional one (pmemcheck) is shown and still exits 0.
Never a traceback.
"""
import json

from cli_run import run_cli
from crashcheck.harness.target import toolchain


def _probes(res) -> dict:
    return {p["name"]: p for p in json.loads(res.stdout)}


def test_this_machine_is_ready_and_every_part_is_reported():
    res = run_cli("doctor", "--json", timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    probes = _probes(res)
    tc = toolchain.current()      # the clang the pass was built for (clang-16 by default)
    for name in (tc.clang, tc.clangxx, "crashcheck pass", "crashcheck runtime and runner", "built-in structures",
                 "libpmem", "libpmemobj", "pmemcheck", "hypothesis", "jinja2", "distributed",
                 "PAGEMAP_SCAN", "memfd_create", "/proc/self/pagemap", "work folder", "users' builds"):
        assert name in probes, name
    assert probes["crashcheck pass"]["ok"] and f"clang version {tc.major}." in probes[tc.clang]["detail"].lower()
    assert probes["libpmem"]["ok"]


def test_a_missing_pass_is_named_with_how_to_get_it_and_exit_1(tmp_path):
    res = run_cli("doctor", timeout=120, env_extra={"CRASHCHECK_BUILD": str(tmp_path)})
    assert res.returncode == 1 and "Traceback" not in res.stderr
    lines = res.stdout.splitlines()
    [pass_line] = [ln for ln in lines if "crashcheck pass" in ln and not ln.startswith("crashcheck")]
    assert pass_line.startswith("MISSING") and str(tmp_path) in pass_line and "scripts/setup" in pass_line
    assert lines[-1].startswith("crashcheck cannot check anything until these are fixed: crashcheck pass")


def test_optional_parts_missing_still_exit_0_and_a_bad_work_folder_exits_1(tmp_path):
    res = run_cli("doctor", "--json", timeout=120, env_extra={"CRASHCHECK_PMEMCHECK": "/bin/false"})
    assert res.returncode == 0
    pm = _probes(res)["pmemcheck"]
    assert not pm["ok"] and not pm["required"] and "/bin/false" in pm["detail"] and "CRASHCHECK_PMEMCHECK" in pm["fix"]
    afile = tmp_path / "afile"
    afile.write_text("x")
    res = run_cli("doctor", timeout=120, env_extra={"CRASHCHECK_WORKDIR": str(afile)})
    assert res.returncode == 1 and "Traceback" not in res.stderr
    [line] = [ln for ln in res.stdout.splitlines() if " work folder " in ln and not ln.startswith("crashcheck")]
    assert line.startswith("MISSING") and "is a file, not a folder" in line


def test_a_clang_of_another_llvm_than_the_pass_is_named_with_the_fix():
    import shutil

    import pytest
    tc = toolchain.current()
    other = next((f"clang-{v}" for v in ("19", "14", "16") if int(v) != tc.major and shutil.which(f"clang-{v}")), None)
    if other is None:
        pytest.skip("only one clang installed")
    res = run_cli("doctor", timeout=120, env_extra={"CRASHCHECK_CLANG": other})
    assert res.returncode == 1 and "Traceback" not in res.stderr
    [line] = [ln for ln in res.stdout.splitlines() if ln.split()[1:2] == [other]]
    assert line.startswith("MISSING") and f"but the pass was built for LLVM {tc.major}" in line
    assert "make LLVM=N" in line
