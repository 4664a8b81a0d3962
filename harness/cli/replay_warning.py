"""`crashcheck replay RESULTS --warning N`: run an unconfirmed persistency race again.

Owns replaying a results file's Nth race warning (its `race_warnings`, numbered across its
structures in order, as the HTML report numbers them; docs/bug-record.md): the warning's history
with its threads, under the schedule its writer aim took (replayed from the record), the pair
looked for in that run's trace and confirmed or not by the crash that loses the store
(harness/check/race_confirm.py judge). Exit status 1 when the race is confirmed now (a bug, as
`replay` exits 1 on a bug that reproduces), 0 when it is still not, with why; 2 on bad input.
"""
from __future__ import annotations

from crashcheck.harness.check import race_confirm
from crashcheck.harness.check.checker_races import first_op_event
from crashcheck.harness.check.pipeline import Checker
from crashcheck.harness.check.threads import make_threaded
from crashcheck.harness.check.traced_run import RunFailure
from crashcheck.harness.check import user_history
from crashcheck.harness.core import defaults
from crashcheck.harness.core.errors import UsageError
from crashcheck.harness.core.settings import Settings
from crashcheck.harness.render.report import load_results
from crashcheck.harness.target import structures


def warnings_of(results: dict) -> list[tuple[dict, dict]]:
    """Every (structure row, race warning) of RESULTS, in the order they are numbered (from 1)."""
    return [(row, w) for row in results.get("per_structure") or [] for w in row.get("race_warnings") or []]


def replay(path: str, n: int) -> int:
    try:
        results = load_results(path)
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: not a results file: {exc}") from None
    if not isinstance(results, dict):
        raise UsageError(f"{path}: not a results file")
    found = warnings_of(results)
    if not 1 <= n <= len(found):
        raise UsageError(f"{path}: no race warning {n} (the file has {len(found)})")
    row, w = found[n - 1]
    if "candidate" not in w:
        raise UsageError(f"{path}: race warning {n} was written by an older crashcheck and names no "
                         "candidate; run fuzz again to have one to replay")
    s = structures.get(row["structure"])
    s.driver(row["bug"])                    # an unknown seeded bug or an unbuilt driver: UsageError
    model = s.model()
    settings = Settings(model=results["model"], seed=results["seed"], tracer=results.get("tracer") or defaults.TRACER,
                        atomic_unit=(results.get("assumptions") or {}).get("atomic_unit", defaults.ATOMIC_UNIT))
    ops = user_history.parse_lines(path, w["history"], "history", s, model)
    thread_of = list(w["thread_of"])
    if len(thread_of) != len(ops):
        raise UsageError(f"{path}: race warning {n}: {len(ops)} operations but {len(thread_of)} thread numbers")
    threads = max(thread_of, default=0)
    ops = make_threaded([op for op, t in zip(ops, thread_of) if t == 0],
                        [[op for op, t in zip(ops, thread_of) if t == k] for k in range(1, threads + 1)],
                        w["sched"], w["schedule"])
    print(f"replaying race warning {n} of {row['structure']}"
          f"{' (seeded bug ' + row['bug'] + ')' if row.get('bug') else ''}: store at {w['store']['where']} "
          f"(thread {w['store']['thread']}), load at {w['load']['where']} (thread {w['load']['thread']})")
    print(f"history: {threads} threads, writer aim {w['sched']}" + (" (replayed from the record)" if w["schedule"] else ""))
    for i, line in enumerate(w["history"]):
        print(f"  {i:>3}  t{thread_of[i]}  {line}")
    print(f"recorded: {w['why']}")
    c = race_confirm.candidate_of(w)
    with Checker(s, row["bug"], settings) as checker:
        try:
            trace, lines = checker.trace(ops)
        except RunFailure as exc:
            print(f"a bug now, without any crash: {exc.finding.cls}: {exc.finding.detail}")
            return 1
        oracle = checker.oracle(ops, trace, lines, checker.followup(ops), aimed=False)
        v = race_confirm.judge(checker.session, trace, oracle, settings.options(), first_op_event(ops, trace),
                               c, w["sched"])
    if v.findings:
        print(f"confirmed now: persistency-race: {v.findings[0].detail}")
        return 1
    print(f"still not confirmed: {v.why}")
    return 0


__all__ = ["replay", "warnings_of"]
