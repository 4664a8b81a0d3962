"""The crashcheck pytest plugin: gate CI on a structure being crash-consistent.

Installed with the package (entry point `pytest11`). It gives:

- the marker `@pytest.mark.crashcheck(STRUCTURE, model=..., seed=..., examples=... | budget=...,
  limit=..., max_ops=..., shrink=...)` (shrink: histories tried while shrinking a batch's
  failures, as `crashcheck fuzz --shrink`; a gate that only asks whether a bug is found can
  take fewer), which sets the defaults of the fixture below for one test;
- the fixture `crashcheck`, a Gate: `crashcheck.check(structure)` fuzzes it and fails the test,
  listing every unexpected bug and the HTML report's path; `crashcheck.run(structure, bug=...)`
  returns the result for tests that assert on it (e.g. that a seeded bug is found with its class);
- `crashcheck.check_history(HISTORY, structure, ...)`: crash-check exactly one history (a file,
  `"insert 1 2; delete 1"`, or a list of lines, as `crashcheck check --history` takes) and fail
  the test on anything unexpected, so a fixed bug's history stays fixed;
- the options `--crashcheck-seed`, `--crashcheck-examples`, `--crashcheck-budget` and
  `--crashcheck-report-dir` (reports default to the test's tmp_path).

A structure that does not do the same twice on the same history fails the gate like any bug (a
`nondeterminism` finding, harness/check/determinism.py); Hypothesis's own complaints about a batch
become pytest warnings, and what was found is kept.

A gate never checks nothing and passes: nonsense options (examples <= 0, a budget that is not a
positive number, unknown marker keywords, a model that does not exist or that the structure is
not meant for) fail the test with one line saying why, and so does a run that checked no
history at all (a budget too small for one).

    @pytest.mark.crashcheck("wort", model="adr", seed=1, examples=24)
    def test_wort_is_crash_consistent(crashcheck):
        crashcheck.check()
"""
from __future__ import annotations

import math
import os
import warnings as _warnings
from dataclasses import dataclass, field
from pathlib import Path

import pytest

OPT_SEED = "--crashcheck-seed"
OPT_EXAMPLES = "--crashcheck-examples"
OPT_BUDGET = "--crashcheck-budget"
OPT_REPORT_DIR = "--crashcheck-report-dir"
MARKER = "crashcheck"
# What a marker or run()/check() may set, with a one-line description for the error message.
OPTIONS = ("structure", "bug", "model", "seed", "examples", "budget", "limit", "max_ops", "keys", "mix",
           "stop_on_class", "strategy", "recovery_crashes", "threads", "shrink",
           "continuation", "fix")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("crashcheck", "crash-consistency gate")
    group.addoption(OPT_SEED, type=int, default=None, help="seed for every gate (default: the marker's, else 1)")
    group.addoption(OPT_EXAMPLES, type=int, default=None, help="histories per gate (overrides markers)")
    group.addoption(OPT_BUDGET, type=float, default=None, help="seconds per gate (overrides markers)")
    group.addoption(OPT_REPORT_DIR, default=None, help="write gate reports here (default: each test's tmp_path)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}(structure, **options): defaults for the crashcheck gate fixture")
    examples = config.getoption(OPT_EXAMPLES)
    budget = config.getoption(OPT_BUDGET)
    if examples is not None and examples <= 0:
        raise pytest.UsageError(f"{OPT_EXAMPLES} must be a positive number of histories, not {examples}")
    if budget is not None and not (math.isfinite(budget) and budget > 0):
        raise pytest.UsageError(f"{OPT_BUDGET} must be a positive number of seconds, not {budget}")


def _refuse(message: str) -> None:
    pytest.fail(f"crashcheck gate: {message}", pytrace=False)


def validate(opts: dict) -> None:
    """Fail the test on options that would make the gate check nothing or something else."""
    from crashcheck.crashsim.persistency import MODELS
    from crashcheck.crashsim.states import STRATEGIES
    from crashcheck.harness.core import defaults
    from crashcheck.harness.run.strategies import KEY_DISTRIBUTIONS, MIXES
    from crashcheck.specs.oracle import CLASSES, CONCURRENT_CLASSES

    unknown = sorted(set(opts) - set(OPTIONS))
    if unknown:
        _refuse(f"unknown option{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} "
                f"(known: {', '.join(OPTIONS)})")
    ex, budget = opts.get("examples"), opts.get("budget")
    if ex is not None and (isinstance(ex, bool) or not isinstance(ex, int) or ex <= 0):
        _refuse(f"examples must be a positive integer, not {ex!r}")
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, (int, float))
                               or not math.isfinite(budget) or budget <= 0):
        _refuse(f"budget must be a positive number of seconds, not {budget!r}")
    for name in ("seed", "limit", "max_ops", "recovery_crashes"):
        v = opts.get(name)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
            _refuse(f"{name} must be an integer, not {v!r}")
    v = opts.get("threads")
    if v is not None and (isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 4):
        _refuse(f"threads must be an integer from 1 to 4, not {v!r}")
    v = opts.get("continuation")
    if v is not None and v != "off" and (isinstance(v, bool) or not isinstance(v, int)
                                         or not 0 <= v <= defaults.MAX_CONTINUATION):
        _refuse(f"continuation must be an integer from 0 to {defaults.MAX_CONTINUATION} or \"off\", not {v!r}")
    v = opts.get("fix")
    if v is not None and not isinstance(v, bool):
        _refuse(f"fix must be True or False, not {v!r}")
    v = opts.get("shrink")
    if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
        _refuse(f"shrink must be 0 or more histories, not {v!r}")
    for name in ("limit", "max_ops"):
        if opts.get(name) is not None and opts[name] < 1:
            _refuse(f"{name} must be positive, not {opts[name]}")
    if opts.get("recovery_crashes") is not None and opts["recovery_crashes"] < 0:
        _refuse(f"recovery_crashes must be 0 or more, not {opts['recovery_crashes']}")
    for name, known in (("model", MODELS), ("strategy", STRATEGIES), ("keys", KEY_DISTRIBUTIONS),
                        ("mix", MIXES), ("stop_on_class", CLASSES + CONCURRENT_CLASSES)):
        v = opts.get(name)
        if v is not None and v not in known:
            _refuse(f"{name} {v!r} does not exist (known: {', '.join(known)})")


@dataclass
class GateResult:
    structure: str
    bug: str | None
    results: dict
    report: Path
    unexpected: list[dict] = field(default_factory=list)
    expected: list[dict] = field(default_factory=list)

    @property
    def classes(self) -> set[str]:
        """Classes of the unexpected bugs."""
        return {b["class"] for b in self.unexpected}


class Gate:
    """Runs crashcheck from a test; see the module note."""

    def __init__(self, defaults: dict, config: pytest.Config, report_dir: Path) -> None:
        self.defaults = defaults
        self.config = config
        self.report_dir = report_dir

    def _options(self, overrides: dict) -> dict:
        validate(self.defaults)
        validate(overrides)
        from crashcheck.harness.core import defaults
        opts = {"model": None, "seed": defaults.SEED, "examples": None, "budget": None, "limit": defaults.LIMIT,
                "max_ops": None, "keys": defaults.KEYS, "mix": defaults.MIX, "stop_on_class": None,
                "structure": None, "bug": None, "strategy": defaults.STRATEGY,
                "recovery_crashes": defaults.RECOVERY_CRASHES, "threads": None,
                "shrink": defaults.SHRINK, "continuation": defaults.CONTINUATION, "fix": True}
        opts.update(self.defaults)
        opts.update({k: v for k, v in overrides.items() if v is not None})
        cli_seed = self.config.getoption(OPT_SEED)
        cli_examples = self.config.getoption(OPT_EXAMPLES)
        cli_budget = self.config.getoption(OPT_BUDGET)
        if cli_seed is not None:
            opts["seed"] = cli_seed
        if cli_examples is not None:
            opts["examples"], opts["budget"] = cli_examples, None
        elif cli_budget is not None:
            opts["examples"], opts["budget"] = None, cli_budget
        if opts["examples"] is None and opts["budget"] is None:
            opts["examples"] = 24
        # threaded histories grow while their threads meet on nothing new, unless max_ops is given
        opts["adaptive_ops"] = opts["max_ops"] is None
        opts["max_ops"] = opts["max_ops"] or defaults.MAX_OPS
        return opts

    def run(self, structure: str | None = None, bug: str | None = None, *, history=None, load: int = 0,
            **overrides) -> GateResult:
        """Fuzz STRUCTURE (or its seeded-bug variant BUG), or with HISTORY check exactly that history
        (check_history), and return what was found."""
        # Imported here so that loading the plugin costs nothing for projects that never gate.
        from crashcheck.harness.check import user_history
        from crashcheck.harness.run.config import Config, one_history
        from crashcheck.harness.run.plan import fuzz_targets
        from crashcheck.harness.core.settings import Settings
        from crashcheck.harness.render.report import write_run

        from crashcheck.harness.target import structures
        from crashcheck.harness.core.errors import UsageError

        opts = self._options(overrides)
        structure = structure or opts["structure"]
        bug = bug or opts["bug"]
        if structure is None:
            _refuse("no structure (give one to check/run or to the marker)")
        problem = None
        try:
            s = structures.get(structure)
            if bug is not None:
                s.bug(bug)
            s.driver(bug)
        except UsageError as exc:
            problem = str(exc)
        if problem:
            _refuse(problem)
        if opts["model"] is None:
            opts["model"] = s.designed_for       # Heart: eadr
        if opts["model"] not in s.models:
            _refuse(f"{structure} is not meant for the {opts['model']} model (models: {', '.join(s.models)})")
        settings = Settings(model=opts["model"], strategy=opts["strategy"], limit=opts["limit"],
                            seed=opts["seed"], recovery_crashes=opts["recovery_crashes"],
                            continuation=None if opts["continuation"] == "off" else opts["continuation"],
                            fixes=opts["fix"])
        # threads per history: as given, else what the seeded bug's catalog entry needs, else 1
        threads = opts["threads"] or (s.bug(bug).threads if bug is not None and history is None else 1)
        if threads > 1 and not s.thread_safe:
            _refuse(f"{structure} is not thread-safe, so it cannot be checked with {threads} threads")
        config = Config(examples=opts["examples"], budget=opts["budget"],
                        max_ops=opts["max_ops"], adaptive_ops=opts["adaptive_ops"],
                        keys=opts["keys"], mix=opts["mix"], stop_on_class=opts["stop_on_class"],
                        threads=threads, shrink_calls=opts["shrink"])
        name = structure + (f"-{bug}" if bug else "")
        bugdir = self.report_dir / f"{name}.bugs"
        try:
            if history is not None:
                text = os.fspath(history) if isinstance(history, (str, os.PathLike)) else "\n".join(map(str, history))
                config = one_history(config, user_history.read_history(text, s, s.model(), load))
            results = fuzz_targets([(structure, bug)], settings, config, None, bugdir)
        except UsageError as exc:
            problem = str(exc)
        if problem:
            _refuse(problem)
        [result] = results.targets
        if result.error:
            pytest.fail(f"crashcheck gate: internal error while fuzzing {name}:\n{result.error}", pytrace=False)
        if result.interrupted:
            raise KeyboardInterrupt
        if result.stats.histories == 0:
            _refuse(f"no history of {name} was checked (the budget ran out first); nothing is known "
                    "about it: give a larger budget")
        for warning in result.warnings:
            _warnings.warn(f"crashcheck gate {name}: {warning}", stacklevel=2)
        res = results.as_json(f"pytest gate {name}")
        res["first_by_class"] = result.first_by_class
        report = self.report_dir / f"{name}.html"
        write_run(res, bugdir, self.report_dir / f"{name}.json", report)
        return GateResult(structure, bug, res, report,
                          [b for b in res["bugs"] if not b["expected"]],
                          [b for b in res["bugs"] if b["expected"]])

    def check_history(self, history, structure: str | None = None, bug: str | None = None, *, load: int = 0,
                      **overrides) -> GateResult:
        """Crash-check exactly HISTORY on STRUCTURE (or its seeded-bug variant BUG), as `crashcheck
        check --history` does, and fail the test if anything unexpected is found. HISTORY: a file's
        path, the operations as text (`insert 1 2; delete 1`, or one a line), or a list of lines;
        its first LOAD operations are set-up, never crash-checked. A fixed bug's history becomes a
        regression test."""
        return self.check(structure, bug, history=history, load=load, **overrides)

    def check(self, structure: str | None = None, bug: str | None = None, **overrides) -> GateResult:
        """Fuzz STRUCTURE (or its seeded-bug variant BUG) and fail the test if anything
        unexpected is found."""
        result = self.run(structure, bug, **overrides)
        if result.unexpected:
            lines = [f"crashcheck gate: {len(result.unexpected)} unexpected bug(s) in {result.structure} "
                     f"(report: {result.report})"]
            for b in result.unexpected:
                where = f" [lost store at {b['sites'][0]}]" if b["sites"] else ""
                lines.append(f"  {b['class']}: {b['detail']}{where}")
                lines.append(f"    history: {'; '.join(b['history'])}")
                lines.append(f"    replay:  {b['replay']}")
            pytest.fail("\n".join(lines), pytrace=False)
        return result


@pytest.fixture
def crashcheck(request: pytest.FixtureRequest, tmp_path: Path) -> Gate:
    marker = request.node.get_closest_marker(MARKER)
    defaults: dict = {}
    if marker is not None:
        defaults.update(marker.kwargs)
        if marker.args:
            defaults["structure"] = marker.args[0]
    opt_dir = request.config.getoption(OPT_REPORT_DIR)
    report_dir = Path(opt_dir) if opt_dir else tmp_path
    report_dir.mkdir(parents=True, exist_ok=True)
    return Gate(defaults, request.config, report_dir)
