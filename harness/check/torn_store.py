"""Torn stores (Yashme's class): a failing crash state caused by a store that persisted in part.

Owns deciding, for a failing crash state, whether its failure is a torn store's: a store wider
than the failure-atomic unit (a 16-byte store, a struct copy or memcpy of several words, an
8-byte store across a word boundary; crashsim splits it into pieces, crashcheck.crashsim.
persistency.split_points) that the state keeps some pieces of and loses others of, where the
two states that differ from it only in that store, the store whole and the store not at all,
both pass. Then the tear is what fails: with the store failure-atomic the same crash could not
have failed. Such a finding is classed `torn-store`, one bug per store site, and names what
read the torn bytes: another thread's load before the crash (a threaded trace logs loads), and,
once the finding is final, recovery's first load of them (a driver built with loads; else the
finding names the store and the failing check only).

A state that also fails with the store lost entirely is not a tear: the store had to be durable
(an ordering bug, classed by what the recovered state shows, as before).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from crashcheck.crashsim.layout import trace_layout
from crashcheck.crashsim.persistency import split_points
from crashcheck.crashsim.simulate import CrashPoint, Unit
from crashcheck.crashsim.trace import Trace
from crashcheck.harness.check import crash_states
from crashcheck.harness.check.findings import Finding, finding_group
from crashcheck.harness.check.persistency_race import site_text
from crashcheck.harness.check.traced_run import trace_recovery
from crashcheck.harness.core.errors import DriverFailure

CLASS = "torn-store"
# partly persisted stores tried per failing state (each costs two checks)
MAX_STORES = 4
# findings of one history tried while exploring (the rest keep the oracle's class)
MAX_FINDINGS = 4


@dataclass
class Torn:
    """A finding's torn store: trace event STORE of SIZE bytes at ADDR in PIECES pieces, of which
    the state keeps KEPT; CLS is the class the recovered state showed (the oracle's); READS the
    sites that read the torn bytes ("thread T at file:line", "recovery at file:line")."""
    store: int
    addr: int
    size: int
    pieces: int
    kept: int
    cls: str
    reads: list[str] = field(default_factory=list)

    def describe(self, trace: Trace) -> str:
        site = site_text(trace, trace.events[self.store].site)
        read = f"; read by {', '.join(self.reads)}" if self.reads else ""
        return (f"the {self.size}-byte store at {site} (0x{self.addr:x}, {self.pieces} failure-atomic pieces) "
                f"persisted in part ({self.kept} of {self.pieces} pieces){read}; the same crash with that store "
                f"whole or not at all passes")


def may_tear(f: Finding) -> bool:
    """F is a failing crash state of the history's own trace (not a leak, not inside recovery,
    not yet a torn store's) that keeps part of some store."""
    return (f.point is not None and f.recovery_of is None and f.cls != "leak" and not f.expected
            and f.verdict is not None and f.torn is None and bool(partial_stores(f.point, f.choice)))


def tear(session, trace: Trace, oracle, f: Finding) -> bool:
    """Whether F's state (at its crash point, in TRACE, judged by ORACLE) fails because of a torn
    store; if so F becomes a `torn-store` finding (the oracle's class kept in f.torn.cls),
    grouped by the store's site."""
    at = f.point
    check = crash_states.state_checker(session, trace, at.index, oracle.follow_text(at))
    t = torn_of(trace, at, tuple(f.choice), check, passes_at(oracle, at), f.cls,
                session.settings.options().atomic_unit)
    if t is None:
        return False
    f.torn, f.cls = t, CLASS
    f.detail = f"{t.describe(trace)}: {f.verdict.detail}"
    f.group = finding_group(trace, f)
    return True


def passes_at(oracle, cp: CrashPoint):
    """The PASSES of `torn_of` for states at CP: ORACLE judged the result and accepts it."""
    def passes(res) -> bool:
        v = oracle.verdict(cp, res)
        return v.ok and v.checked
    return passes


def add_recovery_reads(session, trace: Trace, f: Finding) -> None:
    """Add to F's torn store where recovery first read its bytes: recovery traced with loads on
    F's image (a driver built without loads logs none: then nothing is added)."""
    try:
        _, image = crash_states.image_at(session, trace, f.point.index, f.choice)
        rtrace = trace_recovery(session, trace, image, "recovery-torn", loads=True)
    except DriverFailure:       # recovery died or refused the image: what it read is not known
        return
    f.torn.reads += [r for r in recovery_reads(trace, rtrace, f.torn.store) if r not in f.torn.reads]
    f.detail = f"{f.torn.describe(trace)}: {f.verdict.detail}"


def partial_stores(cp: CrashPoint, choice: tuple[int, ...]) -> list[int]:
    """Trace events of the stores CHOICE keeps some pending pieces of and loses others of."""
    kept = {p.seq for p in cp.kept(choice)}
    return sorted(kept & {p.seq for p in cp.lost(choice)})


def _unit_choice(u: Unit, k: int, seq: int, whole: bool) -> int | None:
    """U's choice that keeps what choice K keeps, plus (WHOLE) or minus every piece of the store
    at event SEQ; None when no legal choice differs from K only in that store's pieces."""
    mine = {i for i, p in enumerate(u.pieces) if p.seq == seq}
    if not mine:
        return k
    if u.orders is None:
        kept = set(range(k))
    else:
        kept = set(u.orders[k])
    want = (kept | mine) if whole else (kept - mine)
    if u.orders is None:
        n = len(want)
        return n if want == set(range(n)) else None
    return next((c for c, ks in enumerate(u.orders) if set(ks) == want), None)


def variants(cp: CrashPoint, choice: tuple[int, ...], seq: int) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """The states that differ from CHOICE only in the store at event SEQ: (whole, none); None
    when either is not a legal state (pieces of other stores lie between)."""
    out = []
    for whole in (True, False):
        c = []
        for u, k in zip(cp.units, choice):
            x = _unit_choice(u, k, seq, whole)
            if x is None:
                return None
            c.append(x)
        out.append(tuple(c))
    return out[0], out[1]


def torn_of(trace: Trace, cp: CrashPoint, choice: tuple[int, ...], check, passes, cls: str,
            unit: int = 8) -> Torn | None:
    """The torn store that makes CHOICE at CP fail, or None. CHECK(choices) runs states at CP,
    PASSES(result) says whether one passes; CLS is the state's class as the oracle gave it; UNIT
    the failure-atomic unit in bytes."""
    cands = []
    for seq in partial_stores(cp, choice)[:MAX_STORES]:
        v = variants(cp, choice, seq)
        if v is not None:
            cands.append((seq, v))
    if not cands:
        return None
    results = check([c for _, v in cands for c in v])
    for n, (seq, _) in enumerate(cands):
        if passes(results[2 * n]) and passes(results[2 * n + 1]):
            ev = trace.events[seq]
            pieces = len(split_points(ev.addr, ev.size, unit))
            pending = sum(1 for u in cp.units for p in u.pieces if p.seq == seq)
            kept = sum(1 for p in cp.kept(choice) if p.seq == seq) + pieces - pending
            return Torn(seq, ev.addr, ev.size, pieces, kept, cls, thread_reads(trace, seq, cp.event))
    return None


def thread_reads(trace: Trace, seq: int, end: int) -> list[str]:
    """Sites where a thread other than the storing one loaded bytes of the store at event SEQ
    before event END (and before they were stored again), as "thread T at file:line", first
    of each site."""
    ev = trace.events[seq]
    lo, hi = ev.addr, ev.addr + ev.size
    out: list[str] = []
    for e in trace.events[seq + 1:end]:
        if e.kind in ("store", "ntstore") and e.addr <= lo and e.addr + e.size >= hi:
            break          # stored over whole: later loads read another store
        if e.kind == "load" and e.tid != ev.tid and e.addr < hi and e.addr + e.size > lo:
            text = f"thread {e.tid} at {site_text(trace, e.site)}"
            if text not in out:
                out.append(text)
    return out


def recovery_reads(crashed: Trace, recovery: Trace, seq: int) -> list[str]:
    """The site of recovery's first load (in its trace RECOVERY, of an image of CRASHED) of bytes
    of CRASHED's store at event SEQ, as ["recovery at file:line"]; [] when recovery's trace logs
    no loads (a driver built without them) or none touched those bytes."""
    ev = crashed.events[seq]
    a, b = trace_layout(crashed), trace_layout(recovery)
    lo = _image_offset(a, ev)
    if lo is None:
        return []
    hi = lo + ev.size
    for e in recovery.events:
        if e.kind != "load":
            continue
        off = _image_offset(b, e)
        if off is not None and off < hi and off + e.size > lo:
            return [f"recovery at {site_text(recovery, e.site)}"]
    return []


def _image_offset(lay, ev) -> int | None:
    """EV's offset in the post-crash image of layout LAY: its region's place there plus its offset
    in the region, as the trace reader placed it (and crashsim.simulate places a store's pieces)."""
    if ev.region is None or ev.region >= len(lay.offsets):
        return None
    return lay.offsets[ev.region] + ev.off


__all__ = ["CLASS", "MAX_FINDINGS", "MAX_STORES", "Torn", "add_recovery_reads", "may_tear", "partial_stores",
           "passes_at", "recovery_reads", "tear", "thread_reads", "torn_of", "variants"]
