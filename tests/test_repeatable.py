"""A seed gives the same histories, in the same order, whether the run is bounded by --examples or
by --budget: the budget only decides where the run stops. Checked by recording every history the
checker is given (first checks, Hypothesis's shrinking tries and re-checks alike) in a `crashcheck
fuzz` run of each kind, run in-process through the CLI."""
import time

import pytest

from harness import cli, cmd_fuzz
from harness.pipeline import Checker
from harness.session import history_text


def _checked(monkeypatch, tmp_path, structure, bug, bound):
    seen = []
    check = Checker.check

    def spy(self, ops, *args, **kw):
        seen.append((getattr(ops, "load", 0), history_text(self.model, ops)))
        return check(self, ops, *args, **kw)

    monkeypatch.setattr(Checker, "check", spy)
    # the budget counts from the process start: in-process, from now
    monkeypatch.setattr(cmd_fuzz, "PROCESS_START", time.monotonic())
    out = tmp_path / f"{bound[0].strip('-')}.json"
    args = ["fuzz", structure, "--seed", "11", "--limit", "4", "--recovery-crashes", "0", "--quiet",
            "--json", str(out), *bound] + (["--bug", bug] if bug else [])
    assert cli.main(args) in (0, 1)
    monkeypatch.undo()
    return seen


@pytest.mark.parametrize("structure,bug", [("wort", None), ("wort", "no-flush-link")])
def test_budget_and_examples_check_the_same_histories_in_order(trees_built, monkeypatch, tmp_path,
                                                                structure, bug):
    by_examples = _checked(monkeypatch, tmp_path, structure, bug, ["--examples", "16"])
    by_budget = _checked(monkeypatch, tmp_path, structure, bug, ["--budget", "25"])
    n = min(len(by_examples), len(by_budget))
    assert n >= 8, (len(by_examples), len(by_budget))
    assert by_budget[:n] == by_examples[:n]
    if bug:    # the seeded bug's batch shrank: Hypothesis's tries are in the sequence too
        assert len(by_examples) > 16
