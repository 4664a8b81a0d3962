"""User mistakes end with one line on stderr and exit status 2, never a traceback."""
from pathlib import Path

import pytest
from cli_run import run_cli

ROOT = Path(__file__).resolve().parents[2]


def write(tmp, name, text):
    p = tmp / name
    p.write_text(text)
    return str(p)


CASES = [
    (["fuzz", "no-such-tree"], "unknown structure 'no-such-tree'"),
    (["fuzz", "wort", "--bug", "no-such-bug", "--examples", "1"], "wort has no seeded bug 'no-such-bug'"),
    (["fuzz", "wort", "woart", "--bug", "leak-old-value"], "give exactly one STRUCTURE"),
    (["fuzz", "wort", "--examples", "0"], "--examples must be positive"),
    (["fuzz", "wort", "--continuation", "-1"], "--continuation must be between 0 and 64 or off, not -1"),
    (["fuzz", "wort", "--continuation", "65"], "--continuation must be between 0 and 64 or off, not 65"),
    (["fuzz", "wort", "--continuation", "of"], "--continuation must be between 0 and 64 or off, not of"),
    (["replay", "{tmp}/missing.json"], "no such bug record"),
    (["replay", "{notjson}"], "not a bug record"),
    (["report", "{notjson}", "-o", "{tmp}/x.html"], "not a results file"),
    (["report", "{emptyobj}", "-o", "{tmp}/x.html"], "not a crashcheck results file"),
    (["trace", "show", "{notjson}"], "not a crashcheck trace"),
    (["states", "{tmp}/missing.trace"], "no such trace file"),
    (["build", "Bad Name!", "x.c", "--adapter", "a.c"], "use ASCII letters, digits"),
    # a name becomes a folder name: 300 characters was an OSError (File name too long) traceback
    (["build", "a" * 300, "x.c", "--adapter", "a.c"], "at most 64 characters"),
    (["build", "tr\u00e9e", "x.c", "--adapter", "a.c"], "use ASCII letters"),
    (["build", "_x", "x.c", "--adapter", "a.c"], "starting with a letter or digit"),
    (["build", "mine", "{tmp}/nope.c", "--adapter", "{tmp}/nope.c"], "no such source file"),
    (["build", "wort", "{tmp}/nope.c", "--adapter", "{tmp}/nope.c"], "is a built-in structure"),
]


@pytest.mark.parametrize("argv, message", CASES, ids=[" ".join(c[0][:2])[:30] + f"-{i}" for i, c in enumerate(CASES)])
def test_user_error_is_one_line(tmp_path, argv, message):
    subs = {"tmp": str(tmp_path), "notjson": write(tmp_path, "bad.json", "not json {"),
            "emptyobj": write(tmp_path, "empty.json", "{}")}
    argv = [a.format(**subs) for a in argv]
    res = run_cli(*argv)
    assert res.returncode == 2, res.stdout + res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    assert message in lines[0]


@pytest.mark.parametrize("value", ["soon", "0", "-1", "inf"])
def test_a_bad_give_up_wait_is_one_line(value):
    # $CRASHCHECK_GIVE_UP_S: how long a stopped run waits for its units (harness/run/executors.py)
    res = run_cli("fuzz", "wort", "--examples", "1", "--jobs", "2", "--quiet", env_extra={"CRASHCHECK_GIVE_UP_S": value})
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stdout + res.stderr
    assert res.stderr.strip() == f"crashcheck: error: CRASHCHECK_GIVE_UP_S={value}: give a positive number of seconds"
