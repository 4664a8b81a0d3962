"""`crashcheck run` (program mode, harness/run/program_run.py): a user's own libpmem program and its
own checker, no adapter. examples/pmlog's seeded ordering bug is found, named by its pmreorder
marker operation, shrunk to the one lost store that matters, written as a results file, records
and a report, and replays; the correct build passes; `--recover` runs before the checker on the
same image; a checker that crashes, hangs or prints megabytes is a finding, not a stall; bad
commands end with one line and exit 2."""
from __future__ import annotations

import contextlib
import io
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli_run import ROOT, run_cli
from crashcheck.harness.target import toolchain
from crashcheck.harness.cli.main import main

CC = ROOT / "instrument" / "bin" / "crashcheck-cc"
SOURCE = ROOT / "examples" / "pmlog" / "pmlog.c"

pytestmark = pytest.mark.usefixtures("instrument_built")


@pytest.fixture(scope="module")
def pmlog(tmp_path_factory) -> dict[str, Path]:
    """examples/pmlog built with crashcheck-cc, correct and with its seeded bug."""
    return _build_both(tmp_path_factory.mktemp("pmlog"), SOURCE, "pmlog", "PMLOG_BUG", "-lpmem")


def _build_both(out: Path, src: Path, name: str, bug_macro: str, lib: str) -> dict[str, Path]:
    """SRC built with crashcheck-cc into OUT as NAME (correct) and NAME-bug (-DBUG_MACRO)."""
    built = {}
    for exe, flags in ((name, []), (f"{name}-bug", [f"-D{bug_macro}"])):
        built[exe] = out / exe
        subprocess.run([CC, "-O1", *flags, src, lib, "-o", built[exe]], check=True, capture_output=True)
    return built


def _run(tmp: Path, *args, timeout: float = 120) -> subprocess.CompletedProcess:
    """`crashcheck run --quiet --json TMP/out.json ARGS`, in this process: main() is what the
    command runs, and the interpreter's start-up would be most of each call's time."""
    return _main("run", "--quiet", "--json", tmp / "out.json", *args)


def _main(*args) -> subprocess.CompletedProcess:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def test_seeded_bug_found_shrunk_recorded_and_replayed(pmlog, tmp_path):
    exe = pmlog["pmlog-bug"]
    # the one call through the `crashcheck` command line itself (the others call main())
    res = run_cli("run", "--quiet", "--json", tmp_path / "out.json", "--report", tmp_path / "out.html",
                  "--checker", f"{pmlog['pmlog']} check {{image}}", "--", exe, "append", "pool", "3", timeout=120)
    assert res.returncode == 1, res.stdout + res.stderr
    results = json.loads((tmp_path / "out.json").read_text())
    [bug] = results["bugs"]
    assert bug["class"] == "checker-failure"
    # the pmreorder markers (EMIT_LOG append.BEGIN/END) name the operation the crash hit
    assert bug["program"]["operation"].startswith("append (operation ")
    assert bug["history"][:2] == ["create", "append"]
    # shrunk: of the record's stores, losing one is enough, and it is a store of the record
    assert len(bug["lost"]) == 1
    assert bug["lost"][0]["site"]["func"] == "append"
    assert bug["group"].startswith("lost: examples/pmlog/pmlog.c:")
    assert "is not whole" in bug["output"] and "is not whole" in bug["detail"]
    assert bug["occurrences"] > 1
    assert results["stats"]["points_sampled"] == 0 and results["stats"]["crash_points"] > 5
    assert "checker-failure" in (tmp_path / "out.html").read_text()
    record = tmp_path / "out.bugs" / f"{bug['id']}.json"
    rep = _main("replay", record)
    assert rep.returncode == 1, rep.stdout + rep.stderr
    assert "reproduced: checker-failure" in rep.stdout
    # the correct build passes the same check, every legal state covered
    ok = _run(tmp_path, "--checker", f"{pmlog['pmlog']} check {{image}}", "--", pmlog["pmlog"], "append", "pool", "3")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert json.loads((tmp_path / "out.json").read_text())["bugs"] == []
    assert "every legal crash state of every crash point was checked" in ok.stdout


def test_recover_runs_on_the_image_before_the_checker(pmlog, tmp_path):
    good = pmlog["pmlog"]
    # pmlog's recovery cuts the count back to the whole records: the seeded bug then loses appends
    # but leaves a consistent log
    res = _run(tmp_path, "--recover", f"{good} recover {{image}}", "--checker", f"{good} check {{image}}",
               "--", pmlog["pmlog-bug"], "append", "pool", "2")
    assert res.returncode == 0, res.stdout + res.stderr
    # a recovery that dies on a bad image is a finding of its own class (the checker never runs)
    crash = _run(tmp_path, "--recover", f"sh -c '{good} check \"$1\" 2>/dev/null || kill -SEGV $$' sh {{image}}",
                 "--checker", "false {image}", "--", pmlog["pmlog-bug"], "append", "pool", "1")
    assert crash.returncode == 2 and "the checker exited with status 1 on the crash-free image" in crash.stderr
    crash = _run(tmp_path, "--recover", f"sh -c '{good} check \"$1\" 2>/dev/null || kill -SEGV $$' sh {{image}}",
                 "--checker", "true {image}", "--", pmlog["pmlog-bug"], "append", "pool", "1")
    assert crash.returncode == 1, crash.stdout + crash.stderr
    bugs = json.loads((tmp_path / "out.json").read_text())["bugs"]
    assert {b["class"] for b in bugs} == {"recovery-crash"}
    assert "recovery died of SIGSEGV" in bugs[0]["detail"]


@pytest.mark.parametrize("how, cls", [
    ("sleep 30", "checker-hang"),
    ("kill -SEGV $$", "checker-crash"),
    ("head -c 3000000 /dev/zero | tr '\\0' x; exit 3", "checker-failure"),
])
def test_checker_that_hangs_crashes_or_floods_is_a_finding(pmlog, tmp_path, how, cls):
    script = tmp_path / "checker.sh"
    script.write_text(f"#!/bin/sh\n{pmlog['pmlog']} check \"$1\" 2>/dev/null && exit 0\n{how}\n")
    script.chmod(0o755)
    res = _run(tmp_path, "--timeout", "1", "--limit", "2", "--checker", f"{script} {{image}}",
               "--", pmlog["pmlog-bug"], "append", "pool", "1", timeout=300)
    assert res.returncode == 1, res.stdout + res.stderr
    bugs = json.loads((tmp_path / "out.json").read_text())["bugs"]
    assert {b["class"] for b in bugs} == {cls}
    assert all(len(b["output"]) <= 4096 for b in bugs)


def test_after_repeated_hangs_the_timeout_is_shorter(pmlog, tmp_path):
    """A checker that hangs on every bad image costs the whole timeout twice, then the shorter
    limit (a hang the same way as the full-timeout ones), and the run says so."""
    script = tmp_path / "checker.sh"
    script.write_text(f"#!/bin/sh\n{pmlog['pmlog']} check \"$1\" 2>/dev/null && exit 0\necho stuck\nsleep 30\n")
    script.chmod(0o755)
    res = _run(tmp_path, "--timeout", "3", "--limit", "2", "--checker", f"{script} {{image}}",
               "--", pmlog["pmlog-bug"], "append", "pool", "2")
    assert res.returncode == 1, res.stdout + res.stderr
    results = json.loads((tmp_path / "out.json").read_text())
    assert {b["class"] for b in results["bugs"]} == {"checker-hang"}
    st = results["stats"]
    # (a hang under the shorter limit that had not printed its line yet is checked again in full)
    assert st["hung_short"] >= 2 and st["runs_timeout_shortened"] == 1, st
    assert "got a shorter one" in res.stdout and f"{st['hung_short']} hangs answered under it" in res.stdout


@pytest.mark.parametrize("checker, program, words", [
    ("{pmlog} check pool", "{pmlog}", "has no {image}"),
    ("{pmlog} check {image}", "/no/such/program", "does not exist"),
    ("false {image}", "{pmlog}", "on the crash-free image"),
    ("{pmlog} check {image2}", "{pmlog}", "names {image2}, but the program mapped 1 PM region"),
    ("'unclosed {image}", "{pmlog}", "No closing quotation"),
    ("/no/such/checker {image}", "{pmlog}", "'/no/such/checker' is not an executable file"),
    ("no-such-checker-on-path {image}", "{pmlog}", "is not an executable file on PATH"),
])
def test_bad_commands_end_with_one_line(pmlog, tmp_path, checker, program, words):
    exe = str(pmlog["pmlog"])
    res = _run(tmp_path, "--checker", checker.replace("{pmlog}", exe),
               "--", program.replace("{pmlog}", exe), "append", "pool", "1")
    err = res.stderr
    assert res.returncode == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("crashcheck: error:") and words in lines[0], err


def test_a_program_without_the_pass_or_failing_is_refused(tmp_path):
    res = _run(tmp_path, "--checker", "true {image}", "--", "/bin/true")
    assert res.returncode == 2 and "wrote no trace: build it with crashcheck-cc" in res.stderr
    res = _run(tmp_path, "--checker", "true {image}", "--", "/bin/false")
    assert res.returncode == 2 and "exited with status 1 in its traced run" in res.stderr


def test_plain_clang_binary_under_pmemcheck(pmlog, pmemcheck, tmp_path, monkeypatch):
    """The same program built by plain clang, traced by Valgrind's pmemcheck: the pmreorder markers
    come from its store log, and the bug is found, named and replayed the same way."""
    exe = tmp_path / "pmlog-plain-bug"
    subprocess.run([toolchain.current().clang, "-O1", "-g", "-DPMLOG_BUG", SOURCE, "-lpmem", "-o", exe], check=True)
    monkeypatch.setenv("CRASHCHECK_PMEMCHECK", pmemcheck)
    res = _run(tmp_path, "--tracer", "pmemcheck", "--checker", f"{pmlog['pmlog']} check {{image}}",
               "--", exe, "append", "pool", "2")
    assert res.returncode == 1, res.stdout + res.stderr
    [bug] = json.loads((tmp_path / "out.json").read_text())["bugs"]
    assert bug["class"] == "checker-failure" and bug["tracer"] == "pmemcheck"
    assert bug["program"]["operation"].startswith("append (operation ")
    # Valgrind names the source cwd//abs/path: the record names the file itself
    assert bug["group"].startswith("lost: examples/pmlog/pmlog.c:"), bug["group"]
    rep = _main("replay", tmp_path / "out.bugs" / f"{bug['id']}.json")
    assert rep.returncode == 1 and "reproduced: checker-failure" in rep.stdout, rep.stdout + rep.stderr


def test_runs_replace_seed_and_merge_into_one_results_file(pmlog, tmp_path):
    res = _run(tmp_path, "--seed", "1", "--runs", "3", "--report", tmp_path / "out.html",
               "--checker", f"{pmlog['pmlog']} check {{image}}", "--", pmlog["pmlog-bug"], "append", "pool", "{seed}")
    assert res.returncode == 1, res.stdout + res.stderr
    results = json.loads((tmp_path / "out.json").read_text())
    assert results["stats"]["histories"] == 3
    [bug] = results["bugs"]               # the same lost store in every run: one bug
    assert bug["program"]["run_seed"] in (1, 2, 3)
    assert bug["program"]["argv"][-1] == str(bug["program"]["run_seed"])
    assert bug["occurrences"] > 3


def test_schedules_find_a_bug_that_needs_an_interleaving(tmp_path):
    """examples/pmpair: two threads publish their records through one count; the seeded bug covers
    a slot the other thread has not written yet, which only an interleaving (and a crash) shows.
    The finding records its schedule, and replay runs that very interleaving again."""
    src = ROOT / "examples" / "pmpair" / "pmpair.c"
    built = _build_both(tmp_path, src, "pair", "PMPAIR_BUG", "-lpmem")
    checker = f"{built['pair']} check {{image}}"
    res = _run(tmp_path, "--schedules", "4", "--checker", checker, "--", built["pair-bug"], "append", "pool", "2")
    assert res.returncode == 1, res.stdout + res.stderr
    results = json.loads((tmp_path / "out.json").read_text())
    assert results["stats"]["histories"] == 4
    [bug] = results["bugs"]
    assert bug["class"] == "checker-failure" and bug["threads"] == 3
    assert bug["sched"].startswith("random:") and bug["schedule"].startswith("# crashcheck-schedule")
    rep = _main("replay", tmp_path / "out.bugs" / f"{bug['id']}.json")
    assert rep.returncode == 1 and "reproduced: checker-failure" in rep.stdout, rep.stdout + rep.stderr
    ok = _run(tmp_path, "--schedules", "4", "--checker", checker, "--", built["pair"], "append", "pool", "2")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    refused = _run(tmp_path, "--schedules", "2", "--tracer", "pmemcheck", "--checker", checker, "--", built["pair"])
    assert refused.returncode == 2 and "--schedules needs the deterministic scheduler" in refused.stderr


def test_libpmemobj_program_with_transactions(tmp_path):
    """examples/pmbank: transfers in libpmemobj transactions, the checker opens the pool (libpmemobj
    rolls back an unfinished transaction) and adds the money up. The seeded bug changes the
    destination outside the transaction's undo log; nothing need be lost for it to fail, so the
    bug is named by the kept store it needs: the unlogged change."""
    src = ROOT / "examples" / "pmbank" / "pmbank.c"
    built = _build_both(tmp_path, src, "bank", "PMBANK_BUG", "-lpmemobj")
    checker = f"{built['bank']} check {{image}}"
    res = _run(tmp_path, "--limit", "8", "--checker", checker, "--", built["bank-bug"], "run", "pool", "1")
    assert res.returncode == 1, res.stdout + res.stderr
    [bug] = json.loads((tmp_path / "out.json").read_text())["bugs"]
    assert bug["class"] == "checker-failure" and "the accounts hold" in bug["detail"]
    assert bug["program"]["operation"].startswith("transfer (operation ")
    line = next(n for n, text in enumerate(src.read_text().splitlines(), 1) if "never added, never flushed" in text)
    assert bug["group"] == f"persisted: examples/pmbank/pmbank.c:{line}", bug["group"]
    ok = _run(tmp_path, "--limit", "8", "--checker", checker, "--", built["bank"], "run", "pool", "1")
    assert ok.returncode == 0, ok.stdout + ok.stderr


def test_bad_timeout_and_a_checker_that_wrecks_the_image_file(pmlog, tmp_path):
    res = _run(tmp_path, "--timeout", "inf", "--checker", f"{pmlog['pmlog']} check {{image}}",
               "--", pmlog["pmlog"], "append", "pool", "1")
    assert res.returncode == 2 and "--timeout must be more than 0 and at most" in res.stderr
    # a checker that leaves a read-only file or a folder where the image was: the next state's
    # image is a new file all the same
    script = tmp_path / "wreck.sh"
    script.write_text(f"#!/bin/sh\n{pmlog['pmlog']} check \"$1\" || exit 1\n"
                      "if [ -n \"$(ls -d \"$1\".seen 2>/dev/null)\" ]; then rm -f \"$1\"; mkdir \"$1\"; "
                      "else touch \"$1\".seen; chmod 0 \"$1\"; fi\n")
    script.chmod(0o755)
    res = _run(tmp_path, "--checker", f"{script} {{image}}", "--", pmlog["pmlog-bug"], "append", "pool", "1")
    assert res.returncode == 1, res.stdout + res.stderr
    assert {b["class"] for b in json.loads((tmp_path / "out.json").read_text())["bugs"]} == {"checker-failure"}


def test_sigterm_stops_the_run_and_its_commands(pmlog, tmp_path):
    marker = "47.125"           # the hanging checker's sleep, a duration nothing else uses
    cmd = f"sh -c '{pmlog['pmlog']} check \"$1\" || exec sleep {marker}' sh {{image}}"
    p = subprocess.Popen([sys.executable, "-m", "crashcheck.harness.cli.main", "run", "--quiet", "--checker", cmd,
                          "--", str(pmlog["pmlog-bug"]), "append", "pool", "1"],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not _sleeping(marker):
        time.sleep(0.1)
    assert _sleeping(marker), "the hanging checker never started"
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 128 + signal.SIGTERM and err.strip() == "crashcheck: interrupted (SIGTERM); nothing written"
    time.sleep(0.2)
    assert not _sleeping(marker), "the checker outlived the run"


def _sleeping(marker: str) -> bool:
    """A process `sleep MARKER` is running (not one whose arguments merely name it: crashcheck's)."""
    want = b"sleep\x00" + marker.encode() + b"\x00"
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and (proc / "cmdline").read_bytes() == want:
                return True
        except OSError:
            continue
    return False


def test_a_program_mapping_two_files_gets_one_placeholder_each(tmp_path):
    """tests/fixtures/twofiles keeps a value in one file and its flag in another: {image} and
    {image1} are the two post-crash files, and the bug is the flag (second file) persisted
    before the value (first file)."""
    src = ROOT / "tests" / "fixtures" / "twofiles" / "twofiles.c"
    built = _build_both(tmp_path, src, "two", "TWOFILES_BUG", "-lpmem")
    checker = f"{built['two']} check {{image}} {{image1}}"
    res = _run(tmp_path, "--checker", checker, "--", built["two-bug"], "write", "a", "b")
    assert res.returncode == 1, res.stdout + res.stderr
    [bug] = json.loads((tmp_path / "out.json").read_text())["bugs"]
    assert "flag set, value 0" in bug["detail"]
    lines = src.read_text().splitlines()
    value = next(n for n, t in enumerate(lines, 1) if t.strip() == "a[0] = 42;")
    flag = next(n for n, t in enumerate(lines, 1) if t.strip() == "b[0] = 1;")
    assert [s.get("region", 0) for s in bug["lost"]] == [0] and bug["lost"][0]["site"]["line"] == value
    assert bug["cause"] == [f"tests/fixtures/twofiles/twofiles.c:{n}" for n in (value, flag)]
    ok = _run(tmp_path, "--checker", checker, "--", built["two"], "write", "a", "b")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = _run(tmp_path, "--checker", f"{built['two']} check {{image}} {{image2}}", "--", built["two"], "write", "a", "b")
    assert bad.returncode == 2 and "mapped 2 PM regions ({image}, {image1})" in bad.stderr


@pytest.mark.parametrize("edit, words", [
    (lambda r: r["program"].update(argv=[]), "program argv names no program"),
    (lambda r: r["program"].update(timeout_s=0), "timeout_s must be more than 0"),
    (lambda r: r["program"].update(argv=["./no-such-program"]), "does not exist"),
    (lambda r: r["program"].update(checker="true"), "has no {image}"),
    (lambda r: r["crash"].update(choice=[7, 7, 7]), "no longer has crash point"),
    (lambda r: r["crash"].update(index=999), "no longer has crash point 999"),
])
def test_an_edited_program_record_does_not_replay(pmlog, tmp_path, edit, words):
    res = _run(tmp_path, "--limit", "2", "--checker", f"{pmlog['pmlog']} check {{image}}", "--",
               pmlog["pmlog-bug"], "append", "pool", "1")
    assert res.returncode == 1, res.stdout + res.stderr
    [bug] = json.loads((tmp_path / "out.json").read_text())["bugs"]
    edit(bug)
    (tmp_path / "edited.json").write_text(json.dumps(bug))
    rep = _main("replay", tmp_path / "edited.json")
    lines = rep.stderr.strip().splitlines()
    assert rep.returncode == 2 and len(lines) == 1 and words in lines[0], rep.stdout + rep.stderr


def test_a_daemon_the_checker_starts_dies_with_the_run(pmlog, tmp_path):
    # setsid leaves the run's process group and session, so the group's SIGKILL misses it; the
    # run token in its environment finds it when the command ends (harness/core/strays.py)
    marker = "47.375"
    script = tmp_path / "checker.sh"
    script.write_text(f"#!/bin/sh\nsetsid -f sleep {marker} >/dev/null 2>&1 </dev/null\n"
                      f"exec {pmlog['pmlog']} check \"$1\"\n")
    script.chmod(0o755)
    res = _run(tmp_path, "--limit", "2", "--checker", f"{script} {{image}}", "--", pmlog["pmlog"], "append", "pool", "1")
    assert res.returncode == 0, res.stdout + res.stderr
    time.sleep(0.2)
    assert not _sleeping(marker), "the checker's daemon outlived the run"


def test_finding_line_shows_the_stderr_error_not_the_closing_banner(pmlog, tmp_path):
    # issue 49 point 10: a checker that prints its error on stderr and a banner on stdout last;
    # the finding's line shows how it ended and the stderr error, never the banner
    script = tmp_path / "checker.sh"
    script.write_text(f"#!/bin/sh\necho 'checker v1 starting'\n"
                      f"{pmlog['pmlog']} check \"$1\" >/dev/null 2>&1 && exit 0\n"
                      "echo 'progress: 3 entries read' >&2\necho 'checker: entry 2 is corrupt' >&2\n"
                      "echo '== checker finished =='\nexit 4\n")
    script.chmod(0o755)
    res = _run(tmp_path, "--limit", "2", "--checker", f"{script} {{image}}",
               "--", pmlog["pmlog-bug"], "append", "pool", "1")
    assert res.returncode == 1, res.stdout + res.stderr
    [bug] = json.loads((tmp_path / "out.json").read_text())["bugs"]
    assert bug["detail"].startswith("the checker exited with status 4 after a crash during ")
    assert bug["detail"].endswith(": checker: entry 2 is corrupt"), bug["detail"]
    assert "== checker finished ==" in bug["output"]        # the output's tail keeps both streams
