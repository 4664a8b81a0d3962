"""The continuation aimed at the crash is fuzz's default (issue 33): `fuzz` without --continuation
runs it with 6 neighbours, `--continuation off` the short fixed follow-up of before, and the pytest
gate takes "off" the same way."""
from crashcheck.harness.cli.main import build_parser
from crashcheck.harness.cli.cmd_fuzz import plan_of
from crashcheck.harness.core import defaults
from crashcheck.harness.core.settings import Settings


def settings_of(*argv: str) -> Settings:
    args = build_parser().parse_args(["fuzz", "wort", *argv])
    [(_, _, settings, _)] = plan_of(args)
    return settings


def test_fuzz_runs_the_continuation_by_default():
    assert defaults.CONTINUATION == 6
    assert Settings().continuation == 6
    assert settings_of().continuation == 6


def test_off_is_the_fixed_follow_up_and_a_number_its_neighbours():
    assert settings_of("--continuation", "off").continuation is None
    assert settings_of("--continuation", "0").continuation == 0
    assert settings_of("--continuation", "12").continuation == 12
