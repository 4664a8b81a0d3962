"""Every reader of the CLI on hostile input: traces, bug records, results files,
catalogs and numeric options. The cases are data (tests/hostile.py); each runs in-process through
`crashcheck.harness.cli.main.main` and must end with exactly one `crashcheck: error:` line naming the cause, exit
status 2 (or, for a trace with a cleanly cut tail, a warning and a normal read)."""
from __future__ import annotations

import os

import pytest

import hostile
from crashcheck.harness.target import structures
from crashcheck.harness.cli.main import main


@pytest.fixture
def base(readers_base):
    return readers_base


def run_main(argv: list[str], capsys) -> tuple[int, list[str], str]:
    try:
        status = main(argv)
    except SystemExit as exc:            # argparse usage errors
        status = exc.code
    captured = capsys.readouterr()
    return status, captured.err.splitlines(), captured.out


def check(case: hostile.Case, tmp_path, base, capsys) -> list[str]:
    argv, status, needle = case.build(tmp_path, base)
    got, err, _ = run_main(argv, capsys)
    assert got == status, (case.id, err)
    if status == 2:
        assert len(err) == 1 and err[0].startswith("crashcheck: error: "), (case.id, err)
        assert needle in err[0], (case.id, err[0])
        assert err[0].isprintable(), err[0]
    else:
        assert [line for line in err if needle in line], (case.id, err)
    return err


@pytest.mark.parametrize("case", hostile.TRACE_CASES, ids=lambda c: c.name)
def test_trace(case, tmp_path, base, capsys):
    check(case, tmp_path, base, capsys)


@pytest.mark.parametrize("case", hostile.RECORD_CASES, ids=lambda c: c.name)
def test_record(case, tmp_path, base, capsys):
    check(case, tmp_path, base, capsys)


@pytest.mark.parametrize("case", hostile.RESULTS_CASES, ids=lambda c: c.name)
def test_results(case, tmp_path, base, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    check(case, tmp_path, base, capsys)
    assert base.results.stat().st_size > 0


@pytest.mark.parametrize("case", hostile.CATALOG_CASES, ids=lambda c: c.name)
def test_catalog(case, tmp_path, base, capsys, monkeypatch):
    monkeypatch.setattr(structures, "BUILD", tmp_path / "build")
    err = check(case, tmp_path, base, capsys)
    # `list` still lists every other structure and shows the broken one with the same reason
    status, lerr, out = run_main(["list"], capsys)
    assert status == 0
    assert "wort  (built-in" in out and "hart  (built-in" in out
    reason = err[0].removeprefix("crashcheck: error: ")
    assert f"broken  (broken: {reason})" in out
    assert lerr == [f"crashcheck: warning: broken cannot be used: {reason}"]


@pytest.mark.parametrize("case", hostile.OPTION_CASES, ids=lambda c: c.name)
def test_option(case, tmp_path, base, capsys):
    check(case, tmp_path, base, capsys)


def test_builtin_catalog_broken(tmp_path, capsys, monkeypatch):
    """A built-in tree's bugs.json / expect.json broken: listed with the reason, the others usable."""
    root = tmp_path / "root"
    for name in ("good", "bad"):
        (root / "trees" / name).mkdir(parents=True)
        (root / "trees" / name / "adapter.c").write_text("")
    (root / "trees" / "bad" / "expect.json").write_text('{"known": [{"reason": "x"}]}')
    monkeypatch.setattr(structures, "ROOT", root)
    status, err, out = run_main(["list"], capsys)
    assert status == 0
    assert "good  (built-in; not built; persistency models: adr, eadr; 0 seeded bugs)" in out
    assert "bad  (broken: " in out and "expect.json: known[0].class is missing" in out
    status, err, _ = run_main(["fuzz", "bad", "--examples", "1"], capsys)
    assert status == 2 and len(err) == 1 and "known[0].class is missing" in err[0]


def test_replay_exit_0_means_fixed(tmp_path, base, capsys):
    """The unchanged record reproduces (1); only a record that replays and no longer fails is 0."""
    status, err, out = run_main(["replay", str(base.record)], capsys)
    assert status == 1 and "reproduced: lost-durable-write" in out, (err, out)


def test_report_writes_a_page(tmp_path, base, capsys):
    status, err, out = run_main(["report", str(base.results), "-o", str(tmp_path / "r.html")], capsys)
    assert status == 0 and err == [] and (tmp_path / "r.html").stat().st_size > 1000


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_trace(tmp_path, base, capsys):
    path = hostile.copy_trace(tmp_path, base)
    path.chmod(0)
    status, err, _ = run_main(["trace", "stats", str(path)], capsys)
    assert status == 2 and err == [f"crashcheck: error: {path}: permission denied (cannot read this trace file)"]
