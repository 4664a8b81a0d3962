"""The pytest gate never checks nothing and passes: nonsense options fail the
test with one line, `check(bug=...)` fuzzes the seeded-bug variant, and the command-line options
are checked when pytest starts. Each case runs a small inner pytest session (pytester)."""
from __future__ import annotations

import subprocess

import pytest
from cli_run import ROOT

pytest_plugins = ["pytester"]


@pytest.fixture(scope="module")
def built():
    res = subprocess.run(["make", "-s", "trees"], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("marker, needle", [
    ('"wort", examples=0', "examples must be a positive integer, not 0"),
    ('"wort", examples=-3', "examples must be a positive integer, not -3"),
    ('"wort", budget=-1', "budget must be a positive number of seconds, not -1"),
    ('"wort", budget=float("nan")', "budget must be a positive number of seconds, not nan"),
    ('"wort", exampels=4', "unknown option exampels"),
    ('"wort", model="pmem9"', "model 'pmem9' does not exist"),
    ('"wort", mix="heavy"', "mix 'heavy' does not exist"),
    ('"wort", shrink=-1', "shrink must be 0 or more histories, not -1"),
    ('"wort", fix="no"', "fix must be True or False, not 'no'"),
    ('"wort", continuation="of"', 'continuation must be an integer from 0 to 64 or "off", not \'of\''),
    ('"nosuchtree", examples=2', "unknown structure 'nosuchtree'"),
    ('"wort", bug="nosuchbug", examples=2', "has no seeded bug 'nosuchbug'"),
])
def test_marker_nonsense_fails_the_test(built, pytester, marker, needle):
    pytester.makepyfile(f"""
        import pytest
        @pytest.mark.crashcheck({marker})
        def test_gate(crashcheck):
            crashcheck.check()
    """)
    res = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    res.assert_outcomes(failed=1)
    res.stdout.fnmatch_lines([f"*crashcheck gate:*{needle}*"])
    assert "During handling" not in res.stdout.str()


def test_check_with_bug_fuzzes_the_variant_and_fails(built, pytester):
    pytester.makepyfile("""
        def test_gate(crashcheck):
            crashcheck.check("wort", bug="split-header-two-stores", seed=1, examples=8)
    """)
    res = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    res.assert_outcomes(failed=1)
    res.stdout.fnmatch_lines(["*unexpected bug(s) in wort*", "*invariant-violation*"])


def test_a_budget_too_small_for_one_history_fails(built, pytester):
    pytester.makepyfile("""
        def test_gate(crashcheck):
            crashcheck.check("hart", budget=0.001)
    """)
    res = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    res.assert_outcomes(failed=1)
    res.stdout.fnmatch_lines(["*no history of hart was checked*"])


@pytest.mark.parametrize("option, needle", [
    ("--crashcheck-examples=0", "--crashcheck-examples must be a positive number"),
    ("--crashcheck-examples=-2", "--crashcheck-examples must be a positive number"),
    ("--crashcheck-budget=-1", "--crashcheck-budget must be a positive number"),
    ("--crashcheck-budget=nan", "--crashcheck-budget must be a positive number"),
])
def test_command_line_nonsense_is_a_usage_error(pytester, option, needle):
    pytester.makepyfile("def test_x(crashcheck):\n    pass\n")
    res = pytester.runpytest_subprocess(option, "-p", "no:cacheprovider")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines([f"*{needle}*"])
