"""The crashcheck pytest plugin: gate CI on a structure being crash-consistent.

Installed with the package (entry point `pytest11`). It gives:

- the marker `@pytest.mark.crashcheck(STRUCTURE, model=..., seed=..., examples=... | budget=...,
  limit=..., max_ops=...)`, which sets the defaults of the fixture below for one test;
- the fixture `crashcheck`, a Gate: `crashcheck.check(structure)` fuzzes it and fails the test,
  listing every unexpected bug and the HTML report's path; `crashcheck.run(structure, bug=...)`
  returns the result for tests that assert on it (e.g. that a seeded bug is found with its class);
- the options `--crashcheck-seed`, `--crashcheck-examples`, `--crashcheck-budget` and
  `--crashcheck-report-dir` (reports default to the test's tmp_path).

    @pytest.mark.crashcheck("wort", model="adr", seed=1, examples=24)
    def test_wort_is_crash_consistent(crashcheck):
        crashcheck.check()
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

OPT_SEED = "--crashcheck-seed"
OPT_EXAMPLES = "--crashcheck-examples"
OPT_BUDGET = "--crashcheck-budget"
OPT_REPORT_DIR = "--crashcheck-report-dir"
MARKER = "crashcheck"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("crashcheck", "crash-consistency gate")
    group.addoption(OPT_SEED, type=int, default=None, help="seed for every gate (default: the marker's, else 1)")
    group.addoption(OPT_EXAMPLES, type=int, default=None, help="histories per gate (overrides markers)")
    group.addoption(OPT_BUDGET, type=float, default=None, help="seconds per gate (overrides markers)")
    group.addoption(OPT_REPORT_DIR, default=None, help="write gate reports here (default: each test's tmp_path)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}(structure, **options): defaults for the crashcheck gate fixture")


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
        opts = {"model": "adr", "seed": 1, "examples": None, "budget": None, "limit": 64, "max_ops": 10,
                "keys": "mixed", "mix": "mixed", "stop_on_class": None, "structure": None}
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
        return opts

    def run(self, structure: str | None = None, bug: str | None = None, **overrides) -> GateResult:
        # Imported here so that loading the plugin costs nothing for projects that never gate.
        from harness.cmd_fuzz import results_json
        from harness.fuzz import Config, fuzz_targets
        from harness.pipeline import Settings
        from harness.report import write_run

        opts = self._options(overrides)
        structure = structure or opts["structure"]
        if structure is None:
            raise pytest.UsageError("crashcheck gate: no structure (give one to check/run or to the marker)")
        settings = Settings(model=opts["model"], limit=opts["limit"], seed=opts["seed"])
        config = Config(examples=opts["examples"], budget=opts["budget"], max_ops=opts["max_ops"],
                        keys=opts["keys"], mix=opts["mix"], stop_on_class=opts["stop_on_class"])
        name = structure + (f"-{bug}" if bug else "")
        bugdir = self.report_dir / f"{name}.bugs"
        [result] = fuzz_targets([(structure, bug)], settings, config, None, bugdir)
        res = results_json([result], settings, f"pytest gate {name}")
        res["first_by_class"] = result.first_by_class
        report = self.report_dir / f"{name}.html"
        write_run(res, bugdir, self.report_dir / f"{name}.json", report)
        return GateResult(structure, bug, res, report,
                          [b for b in res["bugs"] if not b["expected"]],
                          [b for b in res["bugs"] if b["expected"]])

    def check(self, structure: str | None = None, **overrides) -> GateResult:
        """Fuzz STRUCTURE and fail the test if anything unexpected is found."""
        result = self.run(structure, None, **overrides)
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
