"""The one merge: what the shares of a target found, as one TargetResult with its bug records.

Owns joining shares (`merge_target`: stats, warnings, ends, and per group the example --jobs 1
would have kept, `merge_entries`) and turning a target's entries into its bugs (`finish`: groups
that turned out alike once shrunk are one, a follow-up death is its operation's bug, each proven
fix is tried on the other examples' failing states (harness/run/fold_proofs.py fold_by_states),
groups that are one root cause are one bug, harness/triage/bugs.py; each bug's record is built
by harness/triage/records.py). Whoever ran the shares (this process, local workers, Dask), this is
how they are merged. Never runs a search and never writes a file.
"""
from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from crashcheck.harness.check.findings import plainest
from crashcheck.harness.core.settings import Settings
from crashcheck.harness.run.after_batches import SHRUNK
from crashcheck.harness.run.fold_proofs import STATE_FOLD_S, fold_by_states
from crashcheck.harness.run.results import Entry, Stats, TargetResult
from crashcheck.harness.triage import bugs
from crashcheck.harness.triage.records import build_record


def merge_target(structure: str, bug: str | None, target: int, parts: list[TargetResult], expected: int,
                 interrupted: str | None, error: str | None) -> TargetResult:
    """Target TARGET (STRUCTURE, BUG) from the results of its shares that came back (PARTS, of
    EXPECTED shares), unfinished (finish makes its records). INTERRUPTED and ERROR: how the run
    ended, as its executor tells it: a signal stopped every share; shares that gave nothing
    carry the executor's error (a share failed, its worker died for good, silence), or, without
    one, were lost after a stop."""
    out = TargetResult(structure, bug, Stats(), target=target)
    for p in parts:
        out.stats.add(p.stats)
        out.interrupted = out.interrupted or p.interrupted
        out.error = out.error or p.error
        out.warnings += p.warnings
        out.race_warnings += [r for r in p.race_warnings if r not in out.race_warnings]
        if p.first_unexpected_s is not None:
            out.first_unexpected_s = min(out.first_unexpected_s or p.first_unexpected_s, p.first_unexpected_s)
    if interrupted:
        out.interrupted = out.interrupted or interrupted
    if len(parts) < expected:
        if error:
            out.error = out.error or error
        else:
            out.interrupted = out.interrupted or "worker lost"
    out.warnings.sort(key=lambda w: int(w.split()[1].rstrip(":")) if w.startswith("batch ") else -1)
    out.entries = merge_entries(parts)
    return out


def merge_entries(parts: list[TargetResult]) -> list[Entry]:
    """The entries of one target's shares as --jobs 1 would have kept them: per group as found,
    the example of the lowest rank (a leak the code left first: findings.plainest), with every share's occurrences."""
    best: dict[tuple[str, str], Entry] = {}
    for part in parts:
        for e in part.entries:
            have = best.get(e.key)
            if have is None:
                best[e.key] = e
                continue
            keep = e if (plainest(e.finding), e.rank) < (plainest(have.finding), have.rank) else have
            best[e.key] = replace(keep, occurrences=have.occurrences + e.occurrences,
                                  first_seen=min(have.first_seen, e.first_seen),
                                  found_at=min(have.found_at, e.found_at))
    return list(best.values())


def finish(result: TargetResult, settings: Settings, bugdir: Path) -> None:
    """Turn RESULT's entries (merged over its shares) into its records: entries whose shrunk
    findings are in one group are one bug (the first by size, then by when its group was found,
    is shown), numbered per class in group order."""
    merged: dict[tuple, Entry] = {}
    alike: dict[tuple, list] = {}        # per key, its shrunk examples' (finding, trace): their states
    for entry in sorted(result.entries, key=lambda e: (e.size, e.found_at)):
        # one group and one cause: two bugs that break one rule stay apart by their minimal
        # lost stores (harness/triage/bugs.py lost_cause)
        key = (*entry.finding.group, *bugs.lost_cause(entry.outcome.trace, entry.finding))
        if entry.state_shrink == SHRUNK:
            alike.setdefault(key, []).append((entry.finding, entry.outcome.trace))
        have = merged.get(key)
        if have is None:
            merged[key] = replace(entry)
        else:
            have.occurrences += entry.occurrences
            have.first_seen = min(have.first_seen, entry.first_seen)
    _fold_followup_deaths(merged)
    # fixes proven on one share's example, tried on every share's failing states (seconds, no
    # recovery run): one cause that came out as several examples, each its own smallest fix, is
    # one bug when one's fix forbids the others' states (harness/run/fold_proofs.py fold_by_states)
    # (each symptom's states: its example's and its alike examples', a few: fold_proofs.FOLD_STATES)
    shrunk = [(e.finding, e.outcome.trace) for e in merged.values() if e.state_shrink == SHRUNK]
    fold_by_states(settings.options(), shrunk, time.monotonic() + STATE_FOLD_S,
                   {id(e.finding): alike.get(k, []) for k, e in merged.items()})
    # One root cause, one bug (harness/triage/bugs.py): groups whose findings share the stores that
    # matter, or show each other as symptoms, are one bug shown by its most telling finding.
    items = sorted(merged.items(), key=lambda kv: (kv[1].finding.expected, kv[0]))
    found = bugs.merge(items, lambda kv: kv[1].finding, lambda kv: kv[1].outcome.trace, lambda kv: kv[1].size[0])
    result.unshrunk = sum(any(e.unshrunk for _, e in members) for members in found)
    result.first_by_class = {}
    for entry in merged.values():
        if not entry.finding.expected:
            cls = entry.finding.cls
            result.first_by_class[cls] = round(min(result.first_by_class.get(cls, entry.first_seen),
                                                   entry.first_seen), 2)
    counters: dict[str, int] = {}
    structure, bug = result.structure, result.bug
    result.records = []
    for members in sorted(found, key=lambda m: (m[0][1].finding.expected, m[0][0])):
        entry = members[0][1]
        cls = entry.finding.cls
        counters[cls] = counters.get(cls, 0) + 1
        ident = f"{structure}{'-' + bug if bug else ''}-{cls}-{counters[cls]}"
        for _, e in members:
            e.finding.occurrences = e.occurrences
        entry.finding.occurrences = sum(e.occurrences for _, e in members)
        result.records.append(build_record(
            structure=structure, bug=bug, settings=settings, outcome=entry.outcome, finding=entry.finding,
            ident=ident, bugdir=bugdir, members=[(e.finding, e.outcome.trace) for _, e in members],
            first_seen_s=min(e.first_seen for _, e in members),
            shrink={"history": entry.history_shrink, "crash_state": entry.state_shrink}))


def _fold_followup_deaths(merged: dict[tuple, Entry]) -> None:
    """A follow-up operation that died or hung after recovery (post-recovery-divergence, group
    `follow-up: <kind>: <how>`) the way the same kind of operation also died without any crash
    (operation-crash/-hang, group `<kind>: <how>`) is that operation's bug, shown by the simpler
    history: it is folded into it, and the operation's detail says it happened after recovery too."""
    plain = {g[1]: e for g, e in merged.items() if g[0] in ("operation-crash", "operation-hang")}
    for group, entry in list(merged.items()):
        key = group[1].removeprefix("in recovery: ")
        if group[0] != "post-recovery-divergence" or not key.startswith("follow-up: "):
            continue
        op = plain.get(key.removeprefix("follow-up: "))
        if op is None:
            continue
        del merged[group]
        if "after recovery too" not in op.finding.detail:
            op.finding.detail += (f"; after recovery too, in the follow-up workload "
                                  f"({entry.occurrences} crash state{'s' if entry.occurrences != 1 else ''})")


__all__ = ["finish", "merge_entries", "merge_target"]
