"""One place for each default (harness/core/defaults.py): the CLI, the pytest gate, Settings, the
record reader and crashsim all give the same numbers. Before, the bounded limit was 100 in
crashsim and 64 in harness."""
from crashcheck.crashsim import states
from crashcheck.harness.core import defaults
from crashcheck.harness.cli.cmd_fuzz import plan_of
from crashcheck.harness.cli.main import build_parser
from crashcheck.harness.core.settings import Settings


def test_settings_take_the_defaults(monkeypatch):
    for var, _ in defaults.ENVIRONMENT.values():
        monkeypatch.delenv(var, raising=False)
    s = Settings()
    assert (s.strategy, s.limit, s.model, s.pool_size, s.recovery_crashes) == (
        defaults.STRATEGY, defaults.LIMIT, defaults.PERSISTENCY_MODEL, defaults.POOL_SIZE, defaults.RECOVERY_CRASHES)
    assert (s.timeout_ms, s.mem_mb, s.run_timeout_ms, s.op_timeout_ms) == (
        defaults.TIMEOUT_MS, defaults.MEM_MB, defaults.RUN_TIMEOUT_MS, defaults.OP_TIMEOUT_MS)
    monkeypatch.setenv("CRASHCHECK_TIMEOUT_MS", "250")
    assert Settings().timeout_ms == 250


def test_bounded_limit_is_one_number():
    assert states.DEFAULT_LIMIT == defaults.LIMIT
    import inspect
    from crashcheck.crashsim.explore import explore
    assert inspect.signature(explore).parameters["limit"].default == defaults.LIMIT
    assert inspect.signature(states.select).parameters["limit"].default == defaults.LIMIT


def test_cli_and_gate_defaults():
    parser = build_parser()
    args = parser.parse_args(["fuzz", "wort"])
    assert (args.limit, args.seed, args.jobs, args.keys, args.mix,
            args.recovery_crashes) == (defaults.LIMIT, defaults.SEED, defaults.JOBS,
                                       defaults.KEYS, defaults.MIX, defaults.RECOVERY_CRASHES)
    # the strategy is the structure's: lazy, or bounded for one that maps its pool itself
    assert args.strategy is None and plan_of(args)[0][2].strategy == defaults.STRATEGY
    # --max-ops not given: the default, which threaded runs may grow (harness/run/lane_ops.py)
    [(_, _, _, config)] = plan_of(parser.parse_args(["fuzz", "wort"]))
    assert (args.max_ops, config.max_ops, config.adaptive_ops) == (None, defaults.MAX_OPS, True)
    [(_, _, _, config)] = plan_of(parser.parse_args(["fuzz", "wort", "--max-ops", "10"]))
    assert (config.max_ops, config.adaptive_ops) == (10, False)
    states_args = parser.parse_args(["states", "x.trace"])
    assert states_args.limit == defaults.LIMIT
    # fuzz covers every state by default; `states` lists the bounded sample unless asked (lazy
    # needs a driver to run recovery)
    assert (defaults.STRATEGY, states_args.strategy) == ("lazy", "bounded")
    from crashcheck.harness.cli.pytest_plugin import Gate

    class Config:
        def getoption(self, name):
            return None
    opts = Gate({}, Config(), None)._options({})
    assert (opts["limit"], opts["seed"], opts["max_ops"], opts["strategy"], opts["recovery_crashes"]) == (
        defaults.LIMIT, defaults.SEED, defaults.MAX_OPS, defaults.STRATEGY, defaults.RECOVERY_CRASHES)
    assert opts["adaptive_ops"] is True


def test_record_reader_fills_in_the_same_limit():
    from crashcheck.harness.triage.record_formats import RECORD
    assert RECORD.fields["limit"][1] == defaults.LIMIT


def test_runner_header_repeats_the_check_limits():
    """`driver serve` run by hand uses CC_RUNNER_DEFAULT_LIMITS: the same limits as harness (it
    was 10 s and 1 GiB while harness used 2 s and 512 MiB)."""
    import re
    from pathlib import Path
    header = (Path(__file__).resolve().parents[2] / "crashsim" / "runner" / "runner.h").read_text()
    m = re.search(r"#define CC_RUNNER_DEFAULT_LIMITS \{ (\d+)u, \(size_t\)(\d+) << (\d+), (\d+)u \}", header)
    assert m, "CC_RUNNER_DEFAULT_LIMITS not in the expected form"
    timeout, mem, shift, cpu = map(int, m.groups())
    assert (timeout, mem << shift, cpu) == (defaults.TIMEOUT_MS, defaults.MEM_MB << 20, defaults.CPU_S)
