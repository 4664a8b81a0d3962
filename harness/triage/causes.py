"""The keys by which findings are one bug or two (harness/triage/bugs.py merges by them): the
source lines of the stores that matter in a finding's crash state (`cause`), its minimal lost
stores once shrunk (`lost_cause`), the persist a failure inside an operation hinges on
(`anchor`), the allocation site of the objects its stores write (`fresh_objects`), the rules its
recovered structure broke, the stores two causes share (`shared_keys`, `hinge_keys`), and which
proven fixes of other bugs touch a finding's own stores (`removed_by`, `fix_key`). Pure functions
of a finding and its trace; never merges or runs anything.
"""
from __future__ import annotations

from crashcheck.crashsim.trace import Trace
from crashcheck.harness.check.findings import Finding, address_free, site_key, store_site
from crashcheck.harness.check.fix_words import describe


def store_lines(trace: Trace, pieces, pre: str = "") -> list[str]:
    """The source lines (file:line, after PRE) of the stores PIECES belong to, sorted, once each."""
    return sorted({pre + site_key(trace, store_site(trace, p)) for p in pieces})


def cause(trace: Trace | None, f: Finding) -> tuple[str, ...]:
    """The source lines of the stores that matter in F's crash state (lost, and persisted but
    needed; for a state that loses and needs none, the stores made after it that it lacks), sorted;
    () when F has no crash state or none matter."""
    if f.point is None or trace is None:
        return ()
    if f.recovery_of is not None and f.recovery_trace is not None:
        trace = f.recovery_trace
    pieces = f.lost + f.needed + f.lacks
    if not pieces:
        return ()
    return tuple(store_lines(trace, pieces, "in recovery: " if f.recovery_of is not None else ""))


def anchor(trace: Trace | None, f: Finding) -> list[str]:
    """For a failure inside an operation that needs no pending store to persist: the source lines
    of the stores the operation's last persist before the crash made durable (the durable ones
    stored since the fence before them). Such a failure comes from the order the
    program made stores durable in (a node published before its contents were written, a header
    rewritten in place before the pointer swing), and that group of stores is where the order
    went wrong; [] otherwise.

    Under eADR (no flushes: a thread's stores persist in program order) a locked instruction
    (RMW, cmpxchg) makes its own store durable at once: a durable store with no fence after it is
    that persist on its own (the CAS that published a node too early). And a crash at the end of
    an operation that loses its last stores is such a failure too: under eADR those stores were
    only not yet drained, so what fails is what the operation had already made durable."""
    cp = f.point
    if cp is None or trace is None or f.needed or f.recovery_of is not None:
        return []
    eadr_end = cp.kind == "op_end" and cp.units and all(u.kind == "thread" for u in cp.units)
    if cp.op is None and not eadr_end:
        return []
    pending = {p.seq for u in cp.units for p in u.pieces}
    group: list = []
    seen_fence = False
    for i in range(min(cp.event, len(trace.events)) - 1, -1, -1):
        ev = trace.events[i]
        if ev.kind == "op_begin":
            break
        if ev.kind == "fence":
            if group:
                break         # the fence before the last persist's stores (mfence; clflush; mfence)
            seen_fence = True
        elif ev.kind in ("store", "ntstore") and ev.seq not in pending:
            if seen_fence:
                group.append(ev)
            elif i > 0 and trace.events[i - 1].kind == "fence" and trace.events[i - 1].sub == "locked":
                group = [ev]  # durable with no fence after it: its locked instruction's own store
                break
    # a persist inside a helper (Heart's ctx_cas publishes every node and leaf) is named by the
    # line that called it: the helper's own line is every publication's, and two bugs that
    # publish too early through it (a split's parent, an insert's leaf) are two mistakes
    return sorted({site_key(trace, ev.site, caller=True) for ev in group})


def state_lost(trace: Trace | None, f: Finding) -> frozenset[str]:
    """The source lines of every store F's crash state loses, shrunk or not (inside recovery
    prefixed, as lost_cause); empty without a crash state or when it loses nothing."""
    if f.point is None or trace is None or not f.lost:
        return frozenset()
    if f.recovery_of is not None and f.recovery_trace is not None:
        return frozenset(store_lines(f.recovery_trace, f.lost, "in recovery: "))
    return frozenset(store_lines(trace, f.lost))


def first_lost_object(trace: Trace | None, f: Finding) -> str | None:
    """The allocation site (file:line) of the object F's first lost store (in trace order)
    writes into, or None (nothing lost, or no allocation in the trace holds it). A node published
    before its contents were written loses some of that node's contents first, whichever; a
    parent published before its slots were filled loses a slot of the parent first, even when
    the leaf it points to loses its contents after (under eADR a crash loses a suffix). For a
    state that lost nothing, its first lacked store's (Finding.lacks: a parent published by CAS
    before its slots were written lacks a slot of the parent)."""
    pieces = f.lost or f.lacks
    if f.point is None or trace is None or not pieces or f.recovery_of is not None:
        return None
    first = min(p.seq for p in pieces)
    addr = trace.events[first].addr
    for ev in reversed(trace.events[:first]):
        if ev.kind == "alloc" and ev.addr <= addr < ev.addr + ev.size:
            return site_key(trace, ev.site)
    return None


def fresh_objects(trace: Trace | None, f: Finding) -> list[str]:
    """The allocation sites (file:line) of the objects F's operation in flight allocated that
    F is about: for a leak, the leaked ones; else the ones its stores that matter write into.
    A new object the operation leaves unreachable and a new object whose contents a crash loses
    are one mistake of that operation (a value object published before it was written is lost
    with its contents, or leaked when the crash comes before the swing); [] without an
    operation in flight."""
    cp = f.point
    if cp is None or trace is None or f.recovery_of is not None or (cp.op is None and cp.kind != "op_end"):
        return []
    events = trace.events
    start = next((i for i in range(min(cp.event, len(events)) - 1, -1, -1) if events[i].kind == "op_begin"), None)
    if start is None:
        return []
    allocs = []                       # the operation's allocations, also those after the crash
    for ev in events[start + 1:]:
        if ev.kind in ("op_begin", "op_end"):
            break
        if ev.kind == "alloc":
            allocs.append((ev.addr, ev.size, ev.off, ev.site))     # size: the object's
    if f.cls == "leak":
        offs = {obj.get("off") for obj in f.leaks}
        return sorted({site_key(trace, site) for _, _, off, site in allocs if off in offs})
    addrs = [events[p.seq].addr for p in f.lost + f.needed]
    return sorted({site_key(trace, site) for addr, size, _, site in allocs
                   if any(addr <= a < addr + size for a in addrs)})


def order(trace: Trace | None, f: Finding) -> dict | None:
    """F's store order: the needed persisted stores and the lost ones, by source line."""
    if f.point is None or trace is None or not f.lost:
        return None
    if f.recovery_of is not None and f.recovery_trace is not None:
        trace = f.recovery_trace
    return {"persisted": store_lines(trace, f.needed), "lost": store_lines(trace, f.lost), "class": f.cls}


def broken_rules(f: Finding) -> list[str]:
    """The texts of every rule F's recovered structure broke (its check's violations, or those of
    the check after the follow-up), or []."""
    if f.cls != "invariant-violation" or f.result is None or not isinstance(f.result.result, dict):
        return []
    body = f.result.result
    return [v for v in body.get("violations") or body.get("followup_violations") or [] if isinstance(v, str)]


def _plain(group: tuple[str, str]) -> tuple[str, str]:
    """GROUP as a key of merge: a rule broken after a crash inside recovery, or without any
    crash, is the rule broken after any crash."""
    if group[0] == "no-crash-invariant":
        return ("invariant-violation", "rule: " + group[1])
    return (group[0], group[1].removeprefix("in recovery: "))


def lost_cause(trace: Trace | None, f: Finding) -> tuple[str, ...]:
    """The source lines of the stores F's shrunk crash state loses (its minimal lost-store set,
    inside recovery prefixed), sorted: what tells F's cause from another's. () when F has no
    shrunk crash state that loses stores (a leak's state is kept as found, an unshrunk state
    loses whatever it happened to lose; a run without crash loses nothing)."""
    if not f.shrunk or f.cls == "leak" or f.point is None or trace is None or not f.lost:
        return ()
    if f.recovery_of is not None and f.recovery_trace is not None:
        return tuple(store_lines(f.recovery_trace, f.lost, "in recovery: "))
    return tuple(store_lines(trace, f.lost))


def fix_key(f: Finding) -> str | None:
    """F's proven fix as the text other findings' `removed_by` names it by, or None."""
    fix = f.fix
    if fix is None or not getattr(fix, "found", False):
        return None
    return describe(fix.edits)


def same_cause_keys(trace: Trace | None, f: Finding) -> list[tuple]:
    """The keys that make findings one bug by their cause alone: the stores that matter of a
    shrunk crash state (lost and needed, in either order: a non-atomic pair), its minimal lost
    stores, or, for a crash in recovery with its own stores durable, the stores the first crash
    lost."""
    keys: list[tuple] = []
    c = cause(trace, f)
    if c:
        keys.append(("cause", c))
    elif f.recovery_of is not None and f.origin_lost:
        # recovery crashed with every store of its own durable: what fails is the repair of
        # the original crash, so its cause is the stores that crash lost (the same key as a
        # finding of that crash state without the crash in recovery)
        keys.append(("cause", tuple(store_lines(trace, f.origin_lost))))
    lost = lost_cause(trace, f)
    if lost:
        keys.append(("lost", lost))
    return keys


def shared_keys(trace: Trace | None, f: Finding) -> list[tuple]:
    """The keys that make findings one bug when nothing tells their causes apart (merge): a
    group (a rule broken, a way recovery died, a first lost store), a store the failure hinges on,
    a crash-free twin's groups, a new code path, a follow-up's wrong answer. Different bugs can
    share any of them (two bugs break one rule; every insert's link store is needed by most
    failures), so they fold findings of different causes only when one's fix removes the other."""
    # (a rule broken after a crash inside recovery is the rule broken after any crash)
    keys = [("group", _plain(g)) for g in [f.group] + [s.group for s in f.symptoms]]
    # a failure the same operations show without any crash (harness/check/without_crash.py) is
    # that crash-free finding's bug: its wrong answer's shape and its rules
    twin = f.without_crash
    if twin is not None:
        keys += [("group", _plain(g)) for g in [twin.group] + [s.group for s in twin.symptoms]]
    # a run without crash that fails: the new code path of its first failing operation
    # (harness/check/findings.py new_stores), as a crash state's stores that matter
    for run in ([f] if f.point is None else []) + ([twin] if twin is not None else []):
        if run.new_stores:
            keys.append(("new stores", run.new_stores))
    # every rule one crash state breaks is that state's bug, not only the first one reported
    keys += [("group", ("invariant-violation", "rule: " + address_free(v))) for v in broken_rules(f)[1:]]
    # one follow-up operation returning the same wrong output after recoveries the oracle
    # accepted: the same hidden damage, wherever the crash fell
    if f.cls == "post-recovery-divergence" and f.verdict is not None and not f.verdict.group:
        keys.append(("divergence", f.verdict.detail))
    return keys + hinge_keys(trace, f)


def hinge_keys(trace: Trace | None, f: Finding) -> list[tuple]:
    """A store the failure needs persisted, or the durable store where the order went wrong
    (anchor): failures that hinge on one such store are one bug (a node published before its
    contents were written fails with whichever of its contents a crash lost), unless that store
    is what another of them loses (merge: then one needs it durable and the other fails because
    it is not, two causes)."""
    if trace is None:
        return []
    keys = [("store", site_key(trace, store_site(trace, p))) for p in f.needed + f.needed_early]
    return keys + [("store", a) for a in anchor(trace, f)]


def removed_by(trace: Trace | None, f: Finding, edits_of: dict, lost_anywhere: set[str]) -> set[str]:
    """The fixes of F.removed_by (proven to make F's history pass) that remove F's own failure:
    those that edit a store F's state loses, or one F hinges on that no finding loses (a
    publication). EDITS_OF: a fix's words -> its edits; LOST_ANYWHERE: every store line some
    finding of the run loses. A fix that passes F's history only by removing another bug's
    failures in it (with F's own fixed too) is not F's."""
    lost = set(lost_cause(trace, f))
    touched = lost | ({k[1] for k in hinge_keys(trace, f)} - (lost_anywhere - lost))

    def touches(e) -> bool:
        # an edit of one line's persistence must be at a line F loses or hinges on; one that
        # persists more (a whole object, all a commit wrote) may cover F's lost stores unnamed
        return e.kind not in ONE_LINE or bool({e.anchor, e.other} & touched)
    return {w for w in f.removed_by if w in edits_of and any(touches(e) for e in edits_of[w])}


# fix edits (harness/check/fix_edits.py) that persist the one line of the store they name
ONE_LINE = ("flush-after", "persist-after", "fence-after")
