"""Quirks that only show after recovery or across runs are findings of their own class.

Uses a user structure built with `crashcheck build` (tests/fixtures/quirk_tree): a small crash-
consistent table whose seeded "bugs" are a recovery that leaves a right state but a broken
volatile cursor (the next insert dies) and an insert that stamps slots with the clock. Each is
fuzzed end to end through the CLI (and the nondeterministic one through the pytest plugin) with a
fixed seed and a few histories; the structure itself passes. A failure that does not reproduce
when Hypothesis replays it is a nondeterminism finding, and Hypothesis's own Flaky errors are
warnings, never silence; what was found is kept either way.
"""
import json
from pathlib import Path

import pytest
from cli_run import run_cli

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "quirk_tree"


@pytest.fixture(scope="module")
def quirk(instrument_built):
    res = run_cli("build", "quirk", "--adapter", FIXTURE / "quirk.c")
    assert res.returncode == 0, res.stderr
    return "quirk"


def fuzz(tmp_path: Path, structure: str, *args: str) -> tuple[int, list[dict], str]:
    out = tmp_path / "out.json"
    res = run_cli("fuzz", structure, "--examples", "4", "--max-ops", "5", "--limit", "2", "--seed", "1",
                  "--json", out, "--quiet", *args, timeout=300)
    assert "Traceback" not in res.stderr, res.stderr
    bugs = [b for b in json.loads(out.read_text())["bugs"] if not b["expected"]]
    return res.returncode, bugs, res.stdout


def test_the_structure_itself_passes(quirk, tmp_path):
    code, bugs, out = fuzz(tmp_path, quirk)
    assert code == 0 and bugs == [], out


def test_followup_operation_that_dies_after_recovery(quirk, tmp_path):
    # Recovery after a crash inside an insert leaves the right state but no cursor: the first
    # follow-up insert dies. A post-recovery finding naming that operation, with the outputs of
    # the follow-up operations before it kept (before: an operation-crash, outputs dropped).
    code, bugs, out = fuzz(tmp_path, quirk, "--bug", "recover-no-cursor", "--recovery-crashes", "0")
    assert code == 1, out
    assert [(b["class"], b["group"]) for b in bugs] == [
        ("post-recovery-divergence", "follow-up: insert: SIGSEGV (signal 11)")], bugs
    [bug] = bugs
    n = len(bug["followup_outputs"])
    assert bug["followup"][n].startswith("insert ")
    assert f"follow-up operation {n} `{bug['followup'][n]}` died of SIGSEGV" in bug["detail"]
    assert all(out in bug["detail"] for out in bug["followup_outputs"][-4:])
    assert bug["actual"] is not None and bug["crash"]["index"] is not None
    replay = run_cli("replay", tmp_path / "out.bugs" / f"{bug['id']}.json")
    assert replay.returncode == 1 and "reproduced: post-recovery-divergence" in replay.stdout, replay.stdout


def test_nondeterministic_structure_is_a_finding(quirk, tmp_path):
    # Insert stores the time of day: two runs of one history write different bytes. Before, the
    # run passed (exit 0, no bug), and every replay and shrink silently used another trace.
    code, bugs, out = fuzz(tmp_path, quirk, "--bug", "insert-clock", "--examples", "8",
                           "--recovery-crashes", "0")
    assert code == 1, out
    assert [b["class"] for b in bugs] == ["nondeterminism"], bugs
    [bug] = bugs
    line = next(i for i, text in enumerate((FIXTURE / "quirk.c").read_text().splitlines(), 1)
                if "s->stamp = stamp();" in text)
    assert bug["group"] == f"store at tests/fixtures/quirk_tree/quirk.c:{line}"      # relative to the project
    assert f"quirk.c:{line} in qk_insert, stored " in bug["detail"] and "in the second" in bug["detail"]
    assert bug["history"] and bug["crash"]["index"] is None
    assert "nondeterminism" in out
    replay = run_cli("replay", tmp_path / "out.bugs" / f"{bug['id']}.json")
    assert replay.returncode == 1 and "reproduced: nondeterminism" in replay.stdout, replay.stdout


def test_nondeterministic_structure_fails_the_gate(quirk, crashcheck):
    result = crashcheck.run(quirk, bug="insert-clock", seed=1, examples=8, max_ops=5, limit=2,
                            recovery_crashes=0)
    assert result.classes == {"nondeterminism"}
    with pytest.raises(pytest.fail.Exception, match="nondeterminism: the same history, run twice"):
        crashcheck.check(quirk, bug="insert-clock", seed=1, examples=8, max_ops=5, limit=2,
                         recovery_crashes=0)


def test_failure_that_vanishes_on_replay_is_reported_and_kept(quirk, monkeypatch):
    # A structure whose failure does not come back when the same history is checked again (here
    # simulated: the second check of any history finds nothing). Before, Hypothesis's replay raised
    # FlakyFailure, which fuzz swallowed: no word of it. Now the property checks the replayed
    # history again, reports the difference and keeps the finding of the first check.
    from crashcheck.harness.run.config import Config
    from crashcheck.harness.run.plan import fuzz_target
    from crashcheck.harness.check.pipeline import Checker, Settings

    real = Checker.check
    checks: dict[str, int] = {}

    def forgetful(self, ops, *args, **kw):
        outcome = real(self, ops, *args, **kw)
        key = "; ".join(op.text() for op in ops)
        checks[key] = checks.get(key, 0) + 1
        if checks[key] > 1:
            outcome.findings = []
        return outcome
    monkeypatch.setattr(Checker, "check", forgetful)
    r = fuzz_target(quirk, "recover-no-cursor", Settings(seed=1, limit=2, recovery_crashes=0),
                    Config(examples=4, budget=None, max_ops=5))
    classes = sorted(b["class"] for b in r.records if not b["expected"])
    assert classes == ["nondeterminism", "post-recovery-divergence"], classes
    [nd] = [b for b in r.records if b["class"] == "nondeterminism"]
    assert nd["group"] == "findings: post-recovery-divergence"
    assert "the first check of it found post-recovery-divergence (follow-up: insert: SIGSEGV" in nd["detail"]
    assert r.warnings == [] and r.error is None


def test_hypothesis_flaky_errors_are_warnings_never_silence():
    from hypothesis.errors import FlakyFailure, FlakyStrategyDefinition

    from crashcheck.harness.run.found import FOUND, batch_end
    found = FOUND["lost-durable-write"]("key 1 is missing")
    assert batch_end(found).warnings == []
    assert batch_end(ExceptionGroup("two bugs", [found, FOUND["leak"]("leaked")])).warnings == []
    [warning] = batch_end(FlakyFailure("Hypothesis test_x produces unreliable results: Failed on the "
                                        "first call but did not on a subsequent one", [found])).warnings
    assert warning.startswith("Hypothesis found a history that did not behave the same")
    assert "FlakyFailure: Hypothesis test_x produces unreliable results" in warning
    assert "what was found is kept" in warning
    assert "FlakyStrategyDefinition" in batch_end(FlakyStrategyDefinition("inconsistent data generation")).warnings[0]
    # a Flaky around anything but our own findings is an internal error: the error itself, raised again
    with pytest.raises(ValueError, match="an internal error, once"):
        batch_end(FlakyFailure("unreliable", [ValueError("an internal error, once")]))


def test_nondeterminism_that_does_not_show_again_is_never_called_fixed(quirk, tmp_path):
    # issue 49 point 6: a nondeterminism record whose history runs the same in every check of the
    # replay, by the very driver the record was made with, was "not reproduced" with exit 0, which
    # the docs call fixed; nondeterminism comes and goes, so that is exit 3. The record of
    # insert-clock, pointed at the structure's own (deterministic) driver, stands for it.
    code, bugs, _ = fuzz(tmp_path, quirk, "--bug", "insert-clock", "--examples", "8", "--recovery-crashes", "0")
    [bug] = bugs
    from crashcheck.harness.check.trace_digest import file_digest
    from crashcheck.harness.target import structures
    driver = structures.get(quirk).driver(None)
    for binary, status, words in ((file_digest(driver), 3, "not reproducible: nondeterministic"),
                                  ("0" * 32, 0, "the driver was rebuilt since the record")):
        rec = dict(bug, bug=None, trace_digest=dict(bug["trace_digest"], binary=binary))
        path = tmp_path / f"as-{status}.json"
        path.write_text(json.dumps(rec))
        replay = run_cli("replay", path)
        assert replay.returncode == status and words in replay.stdout, replay.stdout + replay.stderr
