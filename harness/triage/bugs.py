"""One root cause, one bug: which findings are symptoms of one mistake.

Owns the rule applied after findings are grouped (harness/check/findings.py finding_group) and
folded per crash state (harness/check/ranking.py fold_state):
  - one set of stores that matter, one bug: findings whose shrunk crash states lose and need the
    same stores (by source line: the lost pieces plus the persisted ones the failure needs,
    harness/check/state_shrink.py) are one bug, whatever their class and store order (a crash inside
    recovery that loses none of recovery's stores counts with the stores the original crash
    lost); so are findings
    that hinge on one store (one the failure needs persisted, or for a failure inside an
    operation that needs none, the operation's last persist before the crash: a node published
    before its contents were written fails with its contents lost or not yet written; under
    eADR a CAS is such a persist on its own, `anchor`; or the store the same failure needs at
    the earliest crash point of its operation, Finding.needed_early), findings of one group (one
    broken rule, without a crash too; one way recovery died or refused; one wrong answer of a
    follow-up operation) and a finding whose group is another's symptom, or one of whose rules
    another state broke too (`merge`; a rule broken without any crash is one per operation and
    check site, and a crash state's rule joins the first such run only); a finding whose state loses and needs no store and whose
    failure the same operations show without any crash counts with that crash-free finding's
    groups (Finding.without_crash: a logic mistake the continuation reached); a leak of an object the operation in flight allocated
    joins a bug whose stores that matter write into an object of that allocation site
    (`fresh_objects`). Expected findings (known by design) are never merged with unexpected ones.
Those shared keys fold findings of one cause; they do not tell causes apart (two bugs break one
rule, and most failures of a tree need every insert's link persisted). So (issue 48) findings
whose shrunk crash states lose different minimal stores (`lost_cause`) are different bugs, however
much they share, unless a proven fix of one removes the other's failure (Finding.removed_by, filled
in on the trace by harness/check/pipeline.py fix_finding and harness/run/fold_proofs.py); a
finding without a cause of its own (a leak, an unshrunk state, a run without crash) joins by what
it shares (`merge`, docs/bug-record.md "How bugs are told apart"), but a failure whose shrunk state
lost nothing (`anchored`: a header rewritten in place before its swing) joins another bug only when
the stores that matter in its state (what it needs persisted or lacks) matter in a state of that
bug too (`matter`), or by a proven fix, never through a publication both only hinge on nor a rule
or message both show; and a leak the code left (`lossless`) joins none. Findings whose own
searches proved one fix are one bug by that proof.
The bug shows its primary finding (one of its class that lost stores once shrunk rather than one
that lost none: `named_by_lost`); the others become its `symptoms`, and the distinct store
orders that failed become its `orders` (docs/bug-record.md). Never runs anything.
"""
from __future__ import annotations

from crashcheck.harness.check.findings import Finding
from crashcheck.harness.check.ranking import finding_tier, rank
# the keys merge compares (apart, in causes.py; these names are also read as bugs.NAME)
from crashcheck.harness.triage.causes import (anchor, broken_rules, cause, first_lost_object, fix_key, fresh_objects,
                                              hinge_keys, lost_cause, order, removed_by, same_cause_keys,
                                              shared_keys, state_lost)


class _Bugs:
    """Union-find over findings that keeps, per bug, what tells its cause: its minimal lost-store
    sets, its members' proven fixes and the fixes proven to remove a member's failure."""

    def __init__(self, n: int) -> None:
        self.parent = list(range(n))
        self.lost_anywhere: set[str] = set()    # every store line some finding's cause loses
        self.lost: list[set] = [set() for _ in range(n)]
        self.fixes: list[set] = [set() for _ in range(n)]
        self.removed_by: list[set] = [set() for _ in range(n)]
        self.hinges: list[set] = [set() for _ in range(n)]     # hinge keys of members with lost stores
        # what the crash states of leaks and runs without crash lose (causes.state_lost); a bug
        # with a member without lost stores of another kind (an unshrunk state, a state that
        # needs a store persisted and loses none: the order a bug published in) joins by what it
        # shares, as before (loose)
        self.raw: list[set] = [set() for _ in range(n)]
        self.loose: list[bool] = [False] * n
        # its members are failures that lost no store once shrunk, of stores they need persisted
        # or a persist they hinge on (the order a bug made stores durable in: a header rewritten
        # in place before the pointer swing): their cause is that order, not a lost store (anchored)
        self.anchored: list[bool] = [False] * n
        # the stores that matter in those members' states (causes.cause: what they need persisted
        # or lack; with none, the stores they hinge on): what an anchored bug is told apart by
        self.causes: list[set] = [set() for _ in range(n)]
        # the stores that matter in the states of members with lost stores (lost, needed
        # persisted, needed at the earliest crash point of the operation: `matter`)
        self.matter: list[set] = [set() for _ in range(n)]
        # the allocation sites of the objects the first lost stores of members write into
        self.objects: list[set] = [set() for _ in range(n)]
        self.lossless = [False] * n      # its members leaks in states that lost nothing (lossless)

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def may_fold(self, i: int, j: int, hinge: tuple | None = None) -> bool:
        """Bugs I and J are not told apart: they share a minimal lost-store set, a fix of one is
        proven to remove a failure of the other, one is anchored (lost nothing once shrunk) and
        the stores that matter in a state of it and in one of the other are one within the other
        (else an anchored bug is told apart, but for a state not shrunk, which joins it), neither
        has shrunk lost stores, or one has none and a crash state of it loses the other's
        minimal stores too (a leak, a run without crash, a state not shrunk), or
        HINGE (a hinge_keys key) is a store members of both that lose stores hinge on, that no
        finding loses (then it is that finding's bug's cause, not a publication both hinge on),
        and no fix is proven on either side (where one is, the proof decides)."""
        a, b = self.find(i), self.find(j)
        if a != b and self.lossless[a] != self.lossless[b]:
            return False          # a leak that needed no lost store is no crash's symptom (lossless)
        if a == b or self.lost[a] & self.lost[b]:
            return True
        if self.fixes[a] & self.removed_by[b] or self.fixes[b] & self.removed_by[a]:
            return True
        if any(self.anchored[x] and not self.lost[x] for x in (a, b)):
            # a failure that lost nothing once shrunk (anchored) is a bug of its own unless a
            # proven fix removes it (above) or the stores that matter in its state matter in a
            # state of the other bug too, or those of that state are all among its own (WORT's
            # update swung before its value: the state right after the swing needs the swing
            # persisted, the one that loses the value needs it too; Heart's leaf published
            # before its contents lacks its key and value, another state loses them): a store
            # both only hinge on, a rule or a message both show is no cause
            # (Heart's split that publishes its parent before filling it, at the split's CAS,
            # lacks the old child's slot; the leaf published before its key hinges on that CAS
            # too, and broke one rule with it)
            return any(c <= (full if own else core) or core <= c for x, y in ((a, b), (b, a))
                       for c, own in self.causes[x] for core, full in self.matter[y] | {(d, d) for d, _ in self.causes[y]}) \
                or any(self.loose[x] and not self.anchored[x] and not self.lost[x] for x in (a, b)) \
                or (self.hinged(a, b, hinge) and bool(self.objects[a] & self.objects[b]))
        if not self.lost[a] and not self.lost[b]:
            return True
        if not self.lost[a] or not self.lost[b]:
            # a bug without a cause of its own (a leak, an unshrunk state, a run without crash)
            # is a symptom of one with lost stores only when a state of it loses that bug's
            # minimal stores too: a leak shown by a state that loses nothing (an old value never
            # freed) is no symptom of a missing flush, whatever allocation site they share
            bare, caused = (b, a) if not self.lost[b] else (a, b)
            return self.loose[bare] or any(set(s) <= r for s in self.lost[caused] for r in self.raw[bare])
        # (a publication both hinge on joins them when their first lost stores write one kind of
        # object: Heart's split that publishes its parent before filling it, and a leaf published
        # before its contents, both hinge on the split's CAS, but lose the parent's slot first
        # and the leaf's key first)
        return self.hinged(a, b, hinge) and (not self.objects[a] or not self.objects[b]
                                             or bool(self.objects[a] & self.objects[b]))

    def hinged(self, a: int, b: int, hinge: tuple | None) -> bool:
        """Bugs A and B (roots) hinge on HINGE, a store no finding loses, and no fix is proven on
        either side. (An anchored one joins through it only when the first store it lacks and
        the other's first lost one write objects of one allocation site: Heart's split, crashed
        right after its CAS, lacks a slot of the parent, which its state at the operation's end
        loses; the leaf published early loses the leaf's key, behind the same CAS.)"""
        return (hinge is not None and hinge in self.hinges[a] and hinge in self.hinges[b]
                and not self.fixes[a] and not self.fixes[b] and hinge[1] not in self.lost_anywhere)

    def union(self, i: int, j: int) -> None:
        a, b = self.find(i), self.find(j)
        if a == b:
            return
        keep, gone = min(a, b), max(a, b)
        self.parent[gone] = keep
        for part in (self.lost, self.fixes, self.removed_by, self.hinges, self.raw, self.objects, self.causes,
                     self.matter):
            part[keep] |= part[gone]
        self.loose[keep] = self.loose[keep] or self.loose[gone]
        self.anchored[keep] = self.anchored[keep] or self.anchored[gone]


def merge(items: list, finding, trace, size=lambda item: 0) -> list[list]:
    """ITEMS (anything with a finding) merged into bugs: lists of items, each list's first item the
    primary: the first tier of classes (harness/check/ranking.py TIERS) the bug shows, in it a run without any crash, then
    the simplest demonstration (the fewest operations, SIZE(item)), then the most telling class, then outside recovery, then with
    lost stores, then ITEMS order. (A link never flushed shows first as a lost insert, and only
    after later deletes as broken rules; a node swung to before its entries are durable shows as
    broken rules, and its recovery, which refuses such a node, says less.) FINDING(item) gives the Finding,
    TRACE(item) the trace its crash point lives in.

    Two passes: findings of one cause (same_cause_keys) are one bug first; then findings that
    share a group, a store or a code path (shared_keys) join, unless that would put two
    different minimal lost-store sets in one bug that no proven fix joins (a fix of one bug
    proven to make the other's history pass, Finding.removed_by): those are different causes,
    each a bug of its own, whatever they share.

    Without a fix search (`--no-fix`) the same holds with no fix proven: findings are one bug by
    their minimal lost stores (and crash-free ones by what they share), never by a shared rule or
    message alone; what a fix would have joined stays apart."""
    bugs = _Bugs(len(items))
    for item in items:
        bugs.lost_anywhere.update(lost_cause(trace(item), finding(item)))
    edits_of = {fix_key(finding(it)): finding(it).fix.edits for it in items if fix_key(finding(it)) is not None}
    owner: dict[tuple, int] = {}
    leaked: dict[int, list[tuple]] = {}         # a leak -> the allocation sites it leaked
    written: dict[tuple, int] = {}              # an allocation site -> the first bug about it
    weak: list[list[tuple]] = []
    for i, item in enumerate(items):
        f, t = finding(item), trace(item)
        lost = lost_cause(t, f)
        if lost:
            bugs.lost[i].add(lost)
            bugs.matter[i].add(matter(t, f))
            bugs.hinges[i].update(hinge_keys(t, f))
            bugs.objects[i].update(o for o in [first_lost_object(t, f)] if o is not None)
        elif f.cls == "leak" or f.point is None:
            bugs.raw[i].add(state_lost(t, f))
        elif anchored(t, f):
            bugs.anchored[i] = True
            own = frozenset(cause(t, f))
            bugs.causes[i].add((own or frozenset(k[1] for k in hinge_keys(t, f)), bool(own)))
            bugs.hinges[i].update(hinge_keys(t, f))
            bugs.objects[i].update(o for o in [first_lost_object(t, f)] if o is not None)
        else:
            bugs.loose[i] = True
        bugs.lossless[i] = lossless(t, f)
        fix = fix_key(f)
        if fix is not None:
            bugs.fixes[i].add(fix)
            # one fix proven on the traces of both: each one's own search found that it makes
            # every crash state of its history pass, so it removes both failures, one cause
            # (cowmap's big version committed before its copy is durable loses an insert's or a
            # remove's store of the copy; the commit's fix, proven on each, with no time left to
            # try one's on the other's history, harness/run/fold_proofs.py)
            bugs.union(i, owner.setdefault((f.expected, "fix", fix), i))
        bugs.removed_by[i].update(removed_by(t, f, edits_of, bugs.lost_anywhere))
        for key in same_cause_keys(t, f):
            bugs.union(i, owner.setdefault((f.expected,) + key, i))
        weak.append(shared_keys(t, f))
        # a new object of the operation in flight, leaked: attached below to a bug whose stores
        # that matter write into a new object of that allocation site
        for site in fresh_objects(t, f):
            if f.cls == "leak":
                leaked.setdefault(i, []).append((f.expected, site))
            else:
                written.setdefault((f.expected, site), i)
    # a failure a proven fix of another bug removes is that bug's symptom, whatever it loses
    fixed_by: dict[str, int] = {}
    for i, item in enumerate(items):
        k = fix_key(finding(item))
        if k is not None:
            fixed_by.setdefault(k, i)
    for i, item in enumerate(items):
        j = next((fixed_by[k] for k in sorted(bugs.removed_by[i]) if k in fixed_by), None)
        if j is not None and finding(items[j]).expected == finding(item).expected:
            bugs.union(i, j)
    holders: dict[tuple, list[int]] = {}
    for i, keys in enumerate(weak):
        expected = finding(items[i]).expected
        for key in keys:
            # every earlier finding with the key, not only the first: the first may be of
            # another cause and a later one of this finding's
            have = holders.setdefault((expected,) + key, [])
            for j in have:
                if bugs.may_fold(i, j, key if key[0] == "store" else None):
                    bugs.union(i, j)
            have.append(i)
    # a rule broken after a crash joins the first run without crash that broke it (one way only:
    # runs without crash that break one check in different operations stay two bugs, op_rule)
    first_free: dict[tuple, int] = {}
    for i, item in enumerate(items):
        f = finding(item)
        for rule in f.free_rules:
            first_free.setdefault((f.expected, "rule: " + rule), i)
    for i, keys in enumerate(weak):
        f = finding(items[i])
        j = next((first_free[(f.expected, k[1][1])] for k in keys if f.point is not None and k[0] == "group"
                  and (f.expected, k[1][1]) in first_free), None)
        if j is not None and bugs.may_fold(i, j):
            bugs.union(i, j)
    # one way only: a leak joins the first such bug, and two bugs about new objects of one
    # allocation site (every node of a tree may come from one line) stay apart
    for i, sites in leaked.items():
        j = next((written[k] for k in sites if k in written), None)
        if j is not None and bugs.may_fold(i, j):
            bugs.union(i, j)
    grouped: dict[int, list] = {}
    for i, item in enumerate(items):
        grouped.setdefault(bugs.find(i), []).append(item)
    out = []
    for members in grouped.values():
        # the most telling class; within it a run without any crash (a mistake that needs no
        # crash is a logic bug, whatever a crash shows of it), then the simplest, then a crash
        # outside recovery that lost stores (the plainest picture of the mistake); then ITEMS
        # order (the sort is stable)
        members.sort(key=lambda it: (finding_tier(finding(it)), finding(it).point is not None, size(it),
                                     rank(finding(it).cls),
                                     finding(it).recovery_of is not None, not finding(it).lost))
        named_by_lost(members, finding, trace)
        out.append(members)
    return out


def named_by_lost(members: list, finding, trace) -> None:
    """Name the bug of MEMBERS (sorted, primary first) by its minimal lost stores: when the primary's
    shrunk state lost nothing (it only needs stores persisted, or lacks them) and another member of
    the same class, in a crash state outside recovery, lost stores once shrunk, that member is the
    primary (the first such in MEMBERS' order). A state that loses nothing is the shortest picture
    of an order gone wrong (WORT's update swung before its value: a crash right after the swing,
    `crash@wort.c:330`), but the state that loses the value store (wort.c:331) names the store the
    user must make durable; the class stays the one the order chose. An unshrunk state's lost
    stores name nothing (lost_cause is empty for it)."""
    first = finding(members[0])
    if first.point is None or lost_cause(trace(members[0]), first):
        return
    k = next((k for k, it in enumerate(members[1:], 1) if finding(it).cls == first.cls
              and finding(it).point is not None and finding(it).recovery_of is None
              and lost_cause(trace(it), finding(it))), None)
    if k is not None:
        members.insert(0, members.pop(k))


def anchored(trace, f: Finding) -> bool:
    """F's crash state, shrunk, lost no store, and F hinges on stores (it needs them persisted, or
    its operation's last persist made them durable: harness/triage/causes.py hinge_keys): a
    failure of the order stores were made durable in, whose cause is no lost store. (Not one the
    same operations show without any crash: that is the crash-free run's bug.)"""
    return (f.shrunk and f.point is not None and f.recovery_of is None and not f.lost
            and f.without_crash is None and bool(hinge_keys(trace, f)))


def matter(trace, f: Finding) -> tuple[frozenset[str], frozenset[str]]:
    """The source lines of the stores that matter in F's shrunk state: lost, needed persisted
    (causes.cause) and needed at the earliest crash point of its operation (Finding.needed_early);
    and those with the stores its operation's last persist made durable before them (anchor: WORT's
    swing, durable before the update's value was lost, is what a state right after the swing
    needs). An anchored failure whose own state names no store (it needs and lacks none) is
    compared with the first only: a publication both only hinge on is no cause."""
    core = frozenset(cause(trace, f)) | {k[1] for k in hinge_keys(trace, f) if k[1] not in anchor(trace, f)}
    return core, core | frozenset(anchor(trace, f))


def lossless(trace, f: Finding) -> bool:
    """F is a leak in a crash state that lost no store, of objects no operation in flight
    allocated: what leaked was left unreachable by the code, crash or not (an old value never
    freed), so no bug whose cause is a lost store explains it, whatever group its allocation site
    shares with that bug's leaks; nor is it one of a failure that lost nothing and has it as a
    symptom of its state (they would bridge it to a cause). It joins such leaks only. (A leak of
    the operation's own new objects joins the bug whose stores write into them: fresh_objects;
    one beside them that also leaks an old object is the code's: Finding.left_by_code.)"""
    return f.cls == "leak" and f.point is not None and not f.lost and (f.left_by_code or not fresh_objects(trace, f))


def folded_by_fix(members: list, finding, trace) -> int:
    """How many of MEMBERS (merge's list, its primary too) lose stores of their own, have no fix
    of their own, and are in the bug because a fix of one of its members is proven to remove
    their failure (removed_by)."""
    edits_of = {fix_key(finding(it)): finding(it).fix.edits for it in members if fix_key(finding(it)) is not None}
    anywhere = {line for it in members for line in lost_cause(trace(it), finding(it))}
    return sum(1 for it in members if fix_key(finding(it)) is None and lost_cause(trace(it), finding(it))
               and removed_by(trace(it), finding(it), edits_of, anywhere))


def symptoms(members: list, finding, trace) -> list[dict]:
    """What the bug of MEMBERS (merge's list) shows besides its primary finding: the primary's
    same-state symptoms and every other member with its own, as record entries (one per class
    and group, occurrences added up)."""
    out: list[dict] = []
    seen: dict[tuple, dict] = {}

    def entry(f: Finding, t, same_state: bool) -> dict:
        o = order(t, f)
        return {"class": f.cls, "detail": f.detail, "group": f.group[1], "occurrences": f.occurrences,
                "same_state": same_state, "lost": o["lost"] if o else [],
                "persisted": o["persisted"] if o else []}
    def add(e: dict) -> None:
        key = (e["class"], e["group"])
        if key == (first.cls, first.group[1]):
            return
        if key in seen:
            seen[key]["occurrences"] += e["occurrences"]
        else:
            seen[key] = e
            out.append(e)
    first = finding(members[0])
    for s in first.symptoms:
        add(entry(s, trace(members[0]), True))
    for it in members[1:]:
        f = finding(it)
        add(entry(f, trace(it), False))
        for s in f.symptoms:
            add(entry(s, trace(it), True))
    return out


def classes(members: list, finding) -> list[str]:
    """Every class the bug of MEMBERS shows, its primary's first, then the others once each in the
    order of harness/check/ranking.py (what a person fixes first)."""
    seen = {finding(members[0]).cls}
    for it in members:
        f = finding(it)
        seen.add(f.cls)
        seen.update(s.cls for s in f.symptoms)
    first = finding(members[0]).cls
    return [first] + sorted(seen - {first}, key=rank)


def orders(members: list, finding, trace) -> list[dict]:
    """The distinct store orders of MEMBERS that failed (the primary's first)."""
    out, seen = [], set()
    for it in members:
        o = order(trace(it), finding(it))
        if o is None:
            continue
        key = (tuple(o["persisted"]), tuple(o["lost"]))
        if key not in seen:
            seen.add(key)
            out.append(o)
    return out


__all__ = ["anchor", "broken_rules", "cause", "classes", "fix_key", "folded_by_fix", "fresh_objects", "lost_cause", "merge",
           "hinge_keys", "order", "orders", "removed_by", "same_cause_keys", "shared_keys", "symptoms"]
