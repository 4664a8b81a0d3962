"""The console summary of a fuzz run (`crashcheck fuzz`, `crashcheck campaign`) on stdout.

Owns what a finished run prints: the assumptions, per target its counts, coverage, warnings and
why nothing is known when no history was checked, then each bug with its history and replay
command. Reads only the results file's dict (docs/bug-record.md), so it says what the file says;
never decides the exit status (harness/cli/cmd_fuzz.py) and never writes a file.
"""
from __future__ import annotations

import signal
from typing import TYPE_CHECKING

from crashcheck.harness.core import defaults
from crashcheck.harness.core.counts import big
from crashcheck.harness.check.perf_tally import perf_line
from crashcheck.harness.triage.pmdk_calls import library_calls
from crashcheck.harness.triage.fix_record import fix_line

if TYPE_CHECKING:        # `crashcheck run` prints without rich: its import is start-up time
    from rich.console import Console


def why_none(res: dict, row: dict) -> str:
    """Why ROW (of results RES) checked no history, as far as the results tell."""
    if row.get("error"):
        return f"an internal error ended it first: {row['error']}"
    stopped = res.get("interrupted")
    if stopped in signal.Signals.__members__:
        return f"{stopped} stopped the run before its first history was checked"
    if stopped:
        return f"the run ended early: {stopped}"
    if row.get("budget_s"):
        return "the budget ran out first: give a larger --budget"
    return "the run ended before its first history was checked"


def speed_text(st: dict) -> str:
    """A run's two speeds (results stats): checker executions and crash states covered per second
    (lazy covers a class of states per execution, so the second may pass 10^12)."""
    return (f"{big(st['executions_per_s'])} executions/s, "
            f"{big(st.get('states_covered_per_s', st.get('states_per_s', 0)))} crash states covered/s")


def capacity_text(st: dict) -> str:
    """A target's capacity points (its results `stats`), each with its crossings or why it has none,
    then the cost of the histories drawn to cross them."""
    why = st.get("capacity_why") or {}
    text = "; ".join(f"{label} crossed in {n} checked histor{'y' if n == 1 else 'ies'}" if n else
                     f"{label} not crossed" + (f": {why[label]}" if label in why else "")
                     for label, n in st["capacity"].items())
    n = st.get("capacity_histories", 0)
    if n:
        text += f" ({n} crossing histories, {st.get('capacity_s', 0) / n:.2f} s each)"
    return text


def print_summary(console: Console, res: dict) -> None:
    """What RES (a results file, harness/run/results.py Results.as_json) found, per target and per bug."""
    assumed = res.get("assumptions")
    if assumed:
        console.print(f"assumed: persistency model {assumed['model']}, failure-atomic unit "
                      f"{assumed['atomic_unit']} bytes (wider stores persist in pieces; --atomic-unit)",
                      highlight=False)
    for row in res["per_structure"]:
        st = row["stats"]
        name = row["structure"] + (f" --bug {row['bug']}" if row["bug"] else "")
        expected = f", {row['expected']} expected" if row["expected"] else ""
        partial = (f" ({st['partial_histories']} cut short by {res.get('interrupted') or 'the budget'})"
                   if st.get("partial_histories") else "")
        console.print(f"{name}: {st['histories']} histories{partial}, {st['crash_points']} crash points, "
                      f"{big(st['states_explored'])} states explored of {big(st['states_legal'])} legal "
                      f"({big(st['states_checked'])} recovered), {st['elapsed_s']:.1f} s: "
                      f"{row['unexpected']} bug{'s' if row['unexpected'] != 1 else ''}{expected}",
                      highlight=False)
        if st.get("executions_per_s") is not None and st["crash_points"]:
            console.print(f"  speed: {speed_text(st)}", highlight=False)
        if st.get("threads", 1) > 1:
            crash = ("crash states judged by durable linearizability, with the follow-up workload, the "
                     "leak check and crashes inside recovery" if st["crash_points"] else
                     "no crash states explored")
            console.print(f"  threads: {st['threads']} per history under the deterministic scheduler: "
                          f"linearizability, deadlock, livelock and invariants checked; {crash}",
                          highlight=False)
            if st.get("max_ops", 0) > defaults.MAX_OPS:
                console.print(f"  longer histories: up to {st['max_ops']} operations (the threads met on nothing new "
                              f"in {defaults.MAX_OPS}; --max-ops fixes it)", highlight=False)
            if st.get("aimed_runs"):
                console.print(f"  aimed runs: {st['aimed_runs']} crash-free runs holding a thread right before a load "
                              "of a word another thread stored (docs/scheduler.md)", highlight=False)
            if st.get("race_candidates"):
                console.print(f"  race candidates: {st['race_candidates']} from single runs "
                              f"({st.get('race_s', 0.0):.1f} s of analysis), {st.get('race_aims', 0)} writer aims, "
                              f"{st.get('race_confirmed', 0)} confirmed by a crash, {st.get('race_unreachable', 0)} "
                              "pairs not reached (warnings)", highlight=False)
        if st.get("not_checked"):
            console.print(f"  not checked: {st['not_checked']} histories whose linearizability search ran "
                          "out of budget (neither pass nor failure)", highlight=False)
        if st["crash_points"]:
            sampled = st.get("points_sampled", 0)
            how = (f"lazy: {st.get('executions', 0)} executions" if res["strategy"] == "lazy"
                   else f"{res['strategy']}, limit {res['limit']}")
            if sampled:
                console.print(f"  coverage: {st['crash_points'] - sampled} of {st['crash_points']} crash points "
                              f"covered completely ({how}); {sampled} partial: no bug among the states "
                              "checked there, which is not all legal states", highlight=False)
            elif not st.get("partial_histories"):
                console.print(f"  coverage: every legal state of every crash point reached was covered "
                              f"({st['crash_points']} of {st['crash_points']} crash points complete, {how})",
                              highlight=False)
        if st.get("states_pruned") or st.get("explained_states"):
            # (harness/check/unmask.py: what the bugs the run had learnt explain; big: counts.big)
            console.print(f"  known bugs: {big(st.get('states_pruned') or 0)} crash states not executed (each "
                          "loses a store of a known bug of one source line, or one its proven fix makes "
                          f"durable), {st.get('explained_states') or 0} failing states explained and not "
                          "judged again", highlight=False)
        if st.get("hung_short"):
            console.print(f"  hangs: {st['hung_short']} checks counted as hung after a shorter time limit: "
                          "checks of their history had hung the same way with the whole check timeout "
                          "(CRASHCHECK_HANG_AFTER=0 gives every state all of it)", highlight=False)
        if st.get("capacity"):
            # capacity points declared or observed by a probe run (harness/check/capacity.py),
            # crossed or not (and why not), and what the histories drawn to cross them cost
            console.print("  capacity: " + capacity_text(st), highlight=False, markup=False)
        if row.get("designed_for") and row["designed_for"] != res["model"]:
            console.print(f"  note: {row['structure']} is built for the {row['designed_for']} model and was "
                          f"checked under {res['model']}: findings may be by design", highlight=False)
        if row.get("perf"):
            console.print(f"  {perf_line(row['perf'])}", highlight=False, markup=False)
        for warning in row.get("warnings") or []:
            console.print(f"  warning: {warning}", highlight=False, markup=False)
        mine = [b for b in res["bugs"] if b.get("structure") == row["structure"] and b.get("bug") == row["bug"]
                and not b["expected"]]
        folded = sum(len(b.get("symptoms") or []) for b in mine)
        if folded:
            by_fix = sum(b.get("folded_by_fix", 0) for b in mine)
            console.print(f"  {len(mine)} bug{'s' if len(mine) != 1 else ''} ({folded} symptom"
                          f"{'s' if folded != 1 else ''} folded: {by_fix} of other lost stores, each removed by "
                          "its bug's proven fix; the others of the same cause: the same crash state, lost stores "
                          "or published store, or losing none of their own)", highlight=False)
        if row.get("unshrunk"):
            console.print(f"  {row['unshrunk']} bug(s) not shrunk, reported as first seen: no time was left to "
                          "shrink their crash states (named by what those states lost)", highlight=False)
        long = [b for b in mine if (b.get("shrink") or {}).get("history") not in (None, "done")
                and len(b["history"]) > 1 and (b.get("threads") or 1) == 1]
        if long:
            console.print(f"  {len(long)} bug(s) whose history was not shrunk to the end: no time was left in "
                          "their share of the shrinking reserve (their records' `shrink.history`)", highlight=False)
        if st["histories"] == 0 and not row["unexpected"]:
            console.print(f"  warning: no history of {name} was checked ({why_none(res, row)}); "
                          "nothing is known about it", highlight=False)
    for b in res["bugs"]:
        tag = "expected " if b["expected"] else ""
        where = f" (lost store at {b['sites'][0]})" if b["sites"] else ""
        console.print(f"  {tag}{b['class']}: {b['detail']}{where}", highlight=False, markup=False)
        inside = library_calls(b)
        if inside:
            console.print(f"      inside the library, called from: {inside}", highlight=False, markup=False)
        console.print(f"      history: {'; '.join(b['history'])}", highlight=False, markup=False)
        shrink = b.get("shrink")
        if shrink:
            console.print(f"      shrunk:  history {shrink['history']}, crash state {shrink['crash_state']}",
                          highlight=False, markup=False)
        if b.get("without_crash"):
            console.print(f"      no crash needed: {b['without_crash']}", highlight=False, markup=False)
        if b.get("symptoms"):
            also = b["classes"][1:] if len(b.get("classes") or []) > 1 else sorted({s["class"] for s in b["symptoms"]})
            console.print(f"      also:    {', '.join(also)} ({len(b['symptoms'])} other symptom"
                          f"{'s' if len(b['symptoms']) != 1 else ''} of this bug)", highlight=False, markup=False)
        if b.get("fix"):
            console.print(f"      {fix_line(b['fix'])}", highlight=False, markup=False)
        console.print(f"      replay:  {b['replay']}", highlight=False, markup=False)


__all__ = ["capacity_text", "print_summary", "speed_text", "why_none"]
