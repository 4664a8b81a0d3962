"""One root cause, one bug (harness/triage/bugs.py, harness/check/state_shrink.py needed_pieces), on hand-made
findings: the findings of one crash state fold into one, a non-atomic pair of stores lost in
either order is one bug with two orders, and what has nothing in common stays apart. The gate
(tests/quality/test_gate.py) checks the same on every seeded bug, end to end."""
from dataclasses import dataclass

from crashcheck.crashsim.trace import Site
from crashcheck.harness.triage import bugs
from crashcheck.harness.check import ranking
from crashcheck.harness.check.findings import Finding
from crashcheck.harness.check.state_shrink import needed_pieces


@dataclass
class Ev:
    site: int
    kind: str = "store"
    seq: int = 0
    sub: str = ""
    addr: int = 0
    size: int = 0
    off: int | None = None


class FakeTrace:
    """Events 0..3 are stores at lines 10, 11, 12, 13 of tree.c; event 4 begins an operation whose
    stores are events 5, 6 (lines 15, 16), a fence (event 7), a store (event 8, line 18), a fence
    (event 9)."""
    events = [Ev(0, seq=0), Ev(1, seq=1), Ev(2, seq=2), Ev(3, seq=3), Ev(4, "op_begin", 4),
              Ev(5, seq=5), Ev(6, seq=6), Ev(7, "fence", 7), Ev(8, seq=8), Ev(9, "fence", 9)]

    def site(self, i):
        return Site(i, "/src/tree.c", 10 + i, 1, "insert")


@dataclass
class P:
    seq: int


class FakePoint:
    """A crash point whose choice is (lost seqs, needed seqs): lost() returns the first."""
    index = 0
    kind = "fence"
    op = None
    event = 4
    units = ()

    def lost(self, choice):
        return [P(s) for s in choice[0]]

    def kept(self, choice):
        return [P(s) for s in choice[1]]


def finding(cls, lost, needed=(), group=None, expected=False):
    f = Finding(cls, f"{cls} detail", (cls, group or f"{cls}-group-{lost}"), expected=expected,
                point=FakePoint(), choice=(tuple(lost), tuple(needed)))
    f.needed = [P(s) for s in needed]
    return f


def merged(fs):
    trace = FakeTrace()
    return bugs.merge(fs, lambda f: f, lambda f: trace)


def test_one_crash_state_is_one_finding_with_its_symptoms():
    inv, leak = finding("invariant-violation", [0]), finding("leak", [0])
    known = finding("leak", [0], group="known", expected=True)
    out = ranking.fold_state([leak, inv, known])
    assert out == [inv, known]
    assert inv.symptoms == [leak]


def test_two_store_orders_of_one_mistake_are_one_bug():
    """*ref and n->path stored without one atomic commit: lost path with ref persisted, or lost
    ref with path persisted; different classes, different first lost store, one bug."""
    a = finding("lost-durable-write", lost=[1], needed=[2])
    b = finding("invariant-violation", lost=[2], needed=[1])
    other = finding("wrong-value", lost=[3])
    out = merged([a, b, other])
    assert len(out) == 2
    [pair] = [m for m in out if len(m) == 2]
    assert pair[0] is b                           # the broken rule is the primary class
    trace = FakeTrace()
    orders = bugs.orders(pair, lambda f: f, lambda f: trace)
    assert orders == [{"persisted": ["/src/tree.c:11"], "lost": ["/src/tree.c:12"], "class": "invariant-violation"},
                      {"persisted": ["/src/tree.c:12"], "lost": ["/src/tree.c:11"], "class": "lost-durable-write"}]
    sym = bugs.symptoms(pair, lambda f: f, lambda f: trace)
    assert [s["class"] for s in sym] == ["lost-durable-write"] and not sym[0]["same_state"]


def test_a_leak_seen_as_a_symptom_elsewhere_joins_that_bug():
    inv = finding("invariant-violation", [0])
    inv.symptoms.append(finding("leak", [0], group="alloc at tree.c:40"))
    alone = finding("leak", [1], group="alloc at tree.c:40")
    assert len(merged([inv, alone])) == 1


def test_expected_findings_never_merge_with_unexpected_ones():
    a = finding("leak", [0], group="alloc", expected=True)
    b = finding("leak", [0], group="alloc")
    assert len(merged([a, b])) == 2


def test_failures_that_hinge_on_one_published_store_are_one_bug():
    """A node published (its pointer stored and made durable) before its contents were written:
    one crash loses the contents' store, another comes before it was made: neither needs a
    pending store to persist; both hinge on the publishing store, the operation's last durable one."""

    class Unit:
        def __init__(self, seqs):
            self.pieces = [P(s) for s in seqs]

    def inside(lost, pending):
        f = finding("wrong-value", lost)
        f.point = FakePoint()
        f.point.op, f.point.event, f.point.units = 0, 8, [Unit(pending)]
        return f
    value_lost = inside([8], [8])            # stores 5, 6 made durable by fence 7; 8 pending, lost
    value_lost.point.event = 9
    not_yet = inside([], [])                 # the crash at fence 7's successor, before store 8
    not_yet.point.event = 8
    assert bugs.anchor(FakeTrace(), value_lost) == ["/src/tree.c:15", "/src/tree.c:16"]
    assert len(merged([value_lost, not_yet])) == 1
    needs = inside([8], [8])
    needs.needed = [P(6)]
    assert bugs.anchor(FakeTrace(), needs) == []


def test_a_crash_in_recovery_losing_none_of_its_stores_joins_the_bug_of_what_the_first_crash_lost():
    """Recovery resumes an update on a value the first crash left half written and crashes itself
    with all its own stores durable; run again, it fails: the first crash's lost store is the
    cause, the same as the plain finding's. A recovery crash that loses its own stores stays apart."""
    plain = finding("wrong-value", [1])

    def in_recovery(own_lost, origin_lost, where):
        f = finding("wrong-value", own_lost, group=f"in recovery: crash@{where}")
        f.recovery_of = (7, (1,))
        f.recovery_trace = FakeTrace()
        f.origin_lost = [P(s) for s in origin_lost]
        return f
    resumed = [in_recovery([], [1], "recover.c:124"), in_recovery([], [1], "recover.c:136")]
    own = in_recovery([3], [1], "recover.c:140")
    other = in_recovery([], [2], "recover.c:150")
    out = merged([plain] + resumed + [own, other])
    assert sorted(len(m) for m in out) == [1, 1, 3]
    [bug] = [m for m in out if len(m) == 3]
    assert bug[0] is plain and set(map(id, bug[1:])) == set(map(id, resumed))


def test_needed_pieces_are_those_without_which_the_state_passes():
    """Units 0 and 1 kept 2 and 1 pending pieces; the state fails only while unit 0 keeps its
    second piece: that piece is needed, unit 1's is not."""

    class Unit:
        def __init__(self, pieces):
            self.pieces = pieces

        def kept(self, k):
            return self.pieces[:k]

    class Point:
        units = [Unit(["u0p0", "u0p1", "u0p2"]), Unit(["u1p0", "u1p1"])]

    class V:
        def __init__(self, ok):
            self.ok = ok

    def check(cands):
        return [c for c in cands]

    def verdict(choice):
        return V(ok=choice[0] < 2)
    assert needed_pieces(check, verdict, Point(), (2, 1)) == ["u0p1"]


def test_the_primary_names_the_mistake_best():
    """Of one bug: a recovery that refuses a node in a one-operation history, and the broken rule
    the same lost stores show in a three-operation one: the rule is the bug's class. Of two
    content classes, the shorter history wins (a link never flushed loses an insert at once and
    breaks rules only after later deletes)."""
    trace = FakeTrace()
    sizes = {}

    def make(cls, n):
        f = finding(cls, [1])
        sizes[id(f)] = n
        return f
    rc, inv = make("recovery-crash", 1), make("invariant-violation", 3)
    [bug] = bugs.merge([rc, inv], lambda f: f, lambda f: trace, lambda f: sizes[id(f)])
    assert bug[0] is inv
    lost, inv = make("lost-durable-write", 1), make("invariant-violation", 3)
    [bug] = bugs.merge([inv, lost], lambda f: f, lambda f: trace, lambda f: sizes[id(f)])
    assert bug[0] is lost


def test_a_recovery_that_refuses_is_one_bug_per_refusal_text():
    """Recovery refuses an image and prints why: the refusal, without its addresses and numbers,
    is the group (one way recovery failed, wherever the crash fell); a different refusal, or one
    that printed nothing, is grouped as before (by its lost store)."""
    from crashcheck.crashsim.runner_client import CheckResult
    from crashcheck.harness.check.findings import finding_group
    from crashcheck.specs.oracle import HistoryPoint, judge_recovery
    from crashcheck.specs.ordered_map import parse_op

    def refused(stderr):
        return {"status": "ok", "result": {"recovered": False, "recover_status": -1}, "stderr": stderr}

    def group(stderr, lost):
        verdict = judge_recovery([parse_op("insert 1 10")], HistoryPoint(0, 0), refused(stderr))
        f = finding("recovery-crash", lost)
        f.verdict = verdict
        f.result = CheckResult("ok", None, None, refused(stderr)["result"], stderr, None, 0)
        return verdict, finding_group(FakeTrace(), f)
    v, a = group("woart: bad node 0x6000000104a8 at depth 12\n", [1])
    _, b = group("woart: bad node 0x600000010400 at depth 3\n", [2])
    _, other = group("woart: header of 0x600000010438 beyond repair\n", [1])
    _, silent = group("", [2])
    assert v.cls == "recovery-crash" and "bad node 0x6000000104a8 at depth 12" in v.detail
    assert a == b == ("recovery-crash", "recovery refused: woart: bad node ? at depth ?")
    assert other != a and silent == ("recovery-crash", "/src/tree.c:12")
    assert len(merged([finding_with(a, [1]), finding_with(b, [2])])) == 1


def finding_with(group, lost):
    f = finding(group[0], lost)
    f.group = group
    return f


def test_only_an_image_that_passes_on_its_own_is_crashed_inside_its_recovery():
    """A failing image is a finding already: crashing its recovery would show the same mistake
    again as a bug of its own. An expected finding (a leak known by design) does not count."""
    from types import SimpleNamespace as NS

    from crashcheck.harness.check.recovery_crashes import worth_crashing
    unit = NS(choices=3)
    out = NS(point=NS(op=1, units=[unit]), choice=(1,), result=NS(ok=True))
    assert worth_crashing(out, [])
    assert worth_crashing(out, [finding("leak", [0], group="known", expected=True)])
    assert not worth_crashing(out, [finding("wrong-value", [0])])
    assert not worth_crashing(NS(point=out.point, choice=(2,), result=out.result), [])   # nothing lost


def test_under_eadr_the_publishing_cas_is_the_persist_point():
    """eADR: a leaf's context CASed into its bucket (a locked fence, then the cmpxchg's store,
    durable at once), then the leaf's contents stored. A crash right after the CAS loses nothing;
    a crash at the end of the operation loses the contents, still in the store buffer. Both
    anchor on the CAS; under ADR the end of an operation has no anchor (a store the operation
    left unflushed is the mistake itself)."""

    class Unit:
        def __init__(self, seqs, kind="thread"):
            self.pieces = [P(s) for s in seqs]
            self.kind = kind

    class CasTrace(FakeTrace):
        """0, 1: the leaf's slot (lines 10, 11), fence 2; op_begin 3; locked fence 4, the CAS's
        store 5 (line 15), seq_cst fence 6; the contents 7, 8 (lines 17, 18); op_end 9."""
        events = [Ev(0, seq=0), Ev(1, seq=1), Ev(2, "fence", 2), Ev(3, "op_begin", 3), Ev(4, "fence", 4),
                  Ev(5, seq=5), Ev(6, "fence", 6), Ev(7, seq=7), Ev(8, seq=8), Ev(9, "op_end", 9)]

        events[2].sub, events[4].sub, events[6].sub = "mfence", "locked", "seq_cst"

    trace = CasTrace()

    def at(event, kind, op, lost, pending, unit_kind="thread"):
        f = finding("invariant-violation", lost, group=f"rule {event}")
        f.point = FakePoint()
        f.point.event, f.point.kind, f.point.op = event, kind, op
        f.point.units = [Unit(pending, unit_kind)] if pending else []
        return f
    after_cas = at(6, "fence", 0, [], [])
    at_end = at(9, "op_end", None, [7, 8], [7, 8])
    assert bugs.anchor(trace, after_cas) == ["/src/tree.c:15"]
    assert bugs.anchor(trace, at_end) == ["/src/tree.c:15"]
    assert len(bugs.merge([after_cas, at_end], lambda f: f, lambda f: trace)) == 1
    adr_end = at(9, "op_end", None, [7, 8], [7, 8], unit_kind="line")
    assert bugs.anchor(trace, adr_end) == []


def test_every_rule_one_state_breaks_joins_its_bug():
    """A state that breaks two rules: a finding elsewhere whose first broken rule is its second
    is the same bug; a state breaking an unrelated rule is not."""
    from crashcheck.crashsim.runner_client import CheckResult

    def broke(rules, lost):
        f = finding("invariant-violation", lost, group="rule: " + rules[0])
        f.result = CheckResult("ok", None, None, {"recovered": True, "violations": rules}, "", None, 0)
        return f
    both = broke(["leaf 0x600000020400: key length 0, value length 0", "leaf 0x600000020400: key byte 1 is 3d, its path says 00"], [1])
    second = broke(["leaf ?: key byte ? is ?, its path says ?"], [2])
    other = broke(["node ?: header depth ?, reached at depth ?"], [3])
    assert sorted(len(m) for m in merged([both, second, other])) == [1, 2]


def test_a_leak_of_a_new_object_joins_the_bug_about_that_objects_contents():
    """An update allocates a value object (line 11) and publishes it before writing it: a crash
    after the publish loses the value's store (line 12, a wrong value); a crash before it leaves
    the object unreachable (a leak). Both are about the operation's new object: one bug. Another
    finding about a new object of the same line (a store at line 13) stays apart: one allocation
    line may make every node of a tree."""
    alloc = Ev(1, "alloc", 1, addr=0x1000, size=16, off=0x1000)

    class AllocTrace(FakeTrace):
        """0 op_begin; 1 alloc of 16 bytes at 0x1000 (line 11); stores into it at lines 12, 13;
        4 fence; 5 op_end."""
        events = [Ev(0, "op_begin", 0), alloc, Ev(2, seq=2, addr=0x1000), Ev(3, seq=3, addr=0x1008),
                  Ev(4, "fence", 4), Ev(5, "op_end", 5)]
    trace = AllocTrace()

    def at(cls, event, lost, group):
        f = finding(cls, lost, group=group)
        f.point = FakePoint()
        f.point.event, f.point.op = event, 0
        return f
    value = at("wrong-value", 4, [2], "value")
    other = at("invariant-violation", 4, [3], "other")
    leak = at("leak", 1, [], "leak at line 11")
    leak.leaks = [{"off": 0x1000, "size": 16}]
    assert bugs.fresh_objects(trace, leak) == bugs.fresh_objects(trace, value) == ["/src/tree.c:11"]
    out = bugs.merge([value, other, leak], lambda f: f, lambda f: trace)
    assert sorted(len(m) for m in out) == [1, 2]
    [bug] = [m for m in out if len(m) == 2]
    assert bug == [value, leak]


def test_a_failure_needing_nothing_pending_takes_the_store_it_needs_earliest_in_its_operation():
    """A slot's bit made durable before its key length: a crash after the key's persist loses
    the length and needs nothing pending (the bit is durable already). Two crash points earlier
    the same failure shows with the bit still pending: it needs the bit, and that store joins it
    to the bug of the early bit. A failure of another class earlier ends the walk."""
    from crashcheck.harness.check.state_shrink import earliest_needed

    class Unit:
        def __init__(self, pieces):
            self.pieces = pieces

        def kept(self, k):
            return self.pieces[:k]

    class Pt:
        def __init__(self, name, pieces):
            self.name, self.units = name, [Unit(pieces)] if pieces else []
            self.radices = [len(pieces)] if pieces else []

    class V:
        def __init__(self, ok, cls="resurrected-delete"):
            self.ok, self.cls = ok, cls

    after_key, after_bit, before = Pt("after-key", ["key"]), Pt("after-bit", ["bit"]), Pt("before", ["log"])

    def check_at(p):
        return lambda choices: [(p.name, c) for c in choices]

    def verdict(p, res):
        name, choice = res
        return V(ok=name == "before" or (name == "after-bit" and choice[0] == 0))
    points = [after_key, after_bit, before]
    assert earliest_needed(points, check_at, verdict, "resurrected-delete") == ["bit"]

    def other_class(p, res):
        v = verdict(p, res)
        return V(v.ok, "invariant-violation" if p.name == "after-bit" else "resurrected-delete")
    assert earliest_needed(points, check_at, other_class, "resurrected-delete") == []
    late = finding("resurrected-delete", [3])
    late.needed_early = [P(1)]
    early_bit = finding("invariant-violation", [2], needed=[1])
    assert len(merged([late, early_bit, finding("wrong-value", [3], needed=[2])])) == 2


def test_one_follow_up_divergence_after_crashes_anywhere_is_one_bug():
    """After recoveries the oracle accepted, a follow-up lookup returns the same wrong output
    whatever the crash lost: one bug. Another wrong output stays apart."""
    from crashcheck.specs.oracle import Verdict

    def diverged(detail, lost):
        f = finding("post-recovery-divergence", lost)
        f.verdict = Verdict(False, "post-recovery-divergence", detail)
        return f
    same = "after recovery, `lookup x:fe00` returned `notfound`, the model `value x:07`"
    out = merged([diverged(same, [1]), diverged(same, [2]),
                  diverged("after recovery, `lookup x:01` returned `notfound`, the model `value x:07`", [3])])
    assert sorted(len(m) for m in out) == [1, 2]


def test_what_one_crash_free_run_shows_is_one_finding_with_its_broken_rules():
    """Without any crash, a delete returns the wrong answer after an insert broke two rules: one
    wrong-value finding whose symptoms are the rules; another run's wrong value of an insert that
    broke one of those rules, and a crash state breaking it, are the same bug."""
    from crashcheck.harness.check.crash_free import crash_free_findings
    from crashcheck.specs.registry import get as model_get
    from crashcheck.specs.ordered_map import parse_op

    model = model_get("ordered_map")
    ops = [parse_op("insert 1 10"), parse_op("delete 1")]
    lines = ["ok", "!invariant 0 leaf 0x600000020400: key byte 1 is c2, its path says 00",
             "!invariant 0 leaf 0x600000020440 in the END slot at position 4 has a key of 3 bytes", "notfound"]
    [delete] = crash_free_findings(model, ops, lines)
    assert delete.cls == "wrong-value" and delete.group == ("no-crash", "delete: notfound for ok")
    assert [s.group[1] for s in delete.symptoms] == ["insert: leaf ?: key byte ? is ?, its path says ?",
                                                     "insert: leaf ? in the END slot at position ? has a key of ? bytes"]
    [insert] = crash_free_findings(model, [parse_op("insert 1 10"), parse_op("insert 2 20")],
                                   ["ok", "!invariant 0 leaf 0x600000020480: key byte 3 is 11, its path says 7f", "error"])
    after_crash = finding("invariant-violation", [3], group="rule: leaf ? in the END slot at position ? has a key of ? bytes")
    unrelated = crash_free_findings(model, [parse_op("insert 1 10"), parse_op("lookup 1")], ["ok", "notfound"])
    assert not unrelated[0].symptoms
    out = bugs.merge([delete, insert, after_crash] + unrelated, lambda f: f, lambda f: FakeTrace())
    assert sorted(len(m) for m in out) == [1, 3]


def test_rules_a_follow_up_breaks_after_crashes_join_the_run_without_crash_that_breaks_them():
    """A logic bug (a key byte packed with 7 bits): without any crash an insert breaks a rule; after
    crashes anywhere the follow-up's insert breaks the same rule (the check runs again after the
    follow-up). One bug, shown by the run that needs no crash, though its history is longer."""
    from crashcheck.crashsim.runner_client import CheckResult
    from crashcheck.harness.check.crash_free import crash_free_findings
    from crashcheck.specs.registry import get as model_get
    from crashcheck.specs.ordered_map import parse_op

    ops = [parse_op("delete 5"), parse_op("insert 4 40"), parse_op("insert 5 50")]
    [no_crash] = crash_free_findings(model_get("ordered_map"), ops, [
        "notfound", "ok", "!invariant 2 leaf 0x600000020440 under key byte 05 at position 0: its key has another byte there", "ok"])

    def after_follow_up(lost):
        rule = "leaf 0x600000020400 under key byte 7e at position 0: its key has another byte there"
        f = finding("invariant-violation", lost, group="rule: leaf ? under key byte ? at position ?: its key has another byte there")
        f.result = CheckResult("ok", None, None, {"recovered": True, "violations": [], "followup_violations": [rule]}, "", None, 0)
        return f
    unrelated = finding("invariant-violation", [3], group="rule: node ?: header depth ?, reached at depth ?")
    items = [after_follow_up([1]), after_follow_up([2]), no_crash, unrelated]
    out = bugs.merge(items, lambda f: f, lambda f: FakeTrace(), size=lambda f: 3 if f is no_crash else 1)
    assert sorted(len(m) for m in out) == [1, 3]
    [bug] = [m for m in out if len(m) == 3]
    assert bug[0] is no_crash
    assert bugs.broken_rules(items[0]) == ["leaf 0x600000020400 under key byte 7e at position 0: its key has another byte there"]


def test_rules_broken_only_after_the_follow_up_do_not_name_the_bug():
    """A store left out of a transaction: one crash state loses the entry (lost-durable-write);
    another recovers acceptably and only the follow-up's operations then break a rule. One bug
    (the same lost store), named by what the crash did, though the other history is shorter."""
    from crashcheck.crashsim.runner_client import CheckResult
    lost = finding("lost-durable-write", [5])
    later = finding("invariant-violation", [5], group="rule: bucket ? holds key ? of bucket ?")
    later.result = CheckResult("ok", None, None, {"recovered": True, "violations": [],
                                                  "followup_violations": ["bucket 38 holds key 4097 of bucket 27"]}, "", None, 0)
    [bug] = bugs.merge([later, lost], lambda f: f, lambda f: FakeTrace(), size=lambda f: 1 if f is later else 2)
    assert bug[0] is lost and ranking.after_followup(later) and not ranking.after_followup(lost)


def test_publications_through_one_helper_are_named_by_their_callers():
    """Heart publishes every leaf and every split's parent through one inline CAS helper
    (heart_internal.h ctx_cas): the persist a failure is anchored on is named by the line that
    called the helper, so a leaf published early and a parent published early (issue 48: Heart's
    split-publish-early folded into leaf-publish-early) are two hinges, not one."""
    from crashcheck.crashsim.trace import Site

    class HelperTrace(FakeTrace):
        def __init__(self, caller_line):
            self.caller_line = caller_line
            self.events = [Ev(0, seq=0), Ev(1, "op_begin", 1), Ev(2, "fence", 2), Ev(3, seq=3), Ev(4, "fence", 4),
                           Ev(5, seq=5), Ev(6, "op_end", 6)]
            self.events[2].sub, self.events[4].sub = "locked", "seq_cst"

        def site(self, i):
            if i == 3:          # the CAS's store, inside the helper, inlined into its caller
                return Site(3, "/src/heart_internal.h", 185, 1, "ctx_cas", inlined_file="/src/heart.c",
                            inlined_line=self.caller_line, own=True)
            return Site(i, "/src/heart.c", 10 + i, 1, "insert")

    def after_cas(trace):
        f = finding("invariant-violation", [], group="rule")
        f.point = FakePoint()
        f.point.event, f.point.kind, f.point.op, f.point.units = 4, "fence", 0, []
        return f
    leaf, split = HelperTrace(59), HelperTrace(306)
    assert bugs.anchor(leaf, after_cas(leaf)) == ["/src/heart.c:59"]
    assert bugs.anchor(split, after_cas(split)) == ["/src/heart.c:306"]


def test_a_state_losing_and_needing_nothing_is_named_by_the_stores_it_lacks():
    """Under eADR a CAS is durable at once: a crash right after the CAS that published a leaf
    before its key and value were written loses nothing and has nothing pending, so no lost or
    needed store names it. At the next crash point of its operation the same state keeps what
    came before the CAS (event 9) and loses the rest; keeping the key length (seq 10) still
    breaks the rule, the key (12) fixes it into another class: the failure lacks the key and
    the value, and they are its cause (the record's `cause`, which the catalog's signature of
    the bug names). A unit that already held a piece before the CAS keeps it."""
    from crashcheck.harness.check.state_shrink import lacking_pieces

    class Unit:
        orders = None

        def __init__(self, *seqs):
            self.pieces = [P(s) for s in seqs]
            self.choices = len(seqs) + 1

        def lost(self, k):
            return self.pieces[k:]

    class Pt:
        units = [Unit(10, 11, 12, 13), Unit(5, 14)]
        radices = [4, 2]

        def lost(self, choice):
            return sorted((p for u, k in zip(self.units, choice) for p in u.lost(k)), key=lambda p: p.seq)

    class V:
        def __init__(self, ok, cls="invariant-violation"):
            self.ok, self.cls = ok, cls

    def check(choices):
        return list(choices)

    def verdict(choice):
        leaf = choice[0]
        return V(ok=leaf == 4, cls="invariant-violation" if leaf < 3 else "wrong-value")
    lacks = lacking_pieces(check, verdict, Pt(), 9, "invariant-violation")
    assert [p.seq for p in lacks] == [12, 13]
    f = finding("invariant-violation", [])
    f.lacks = [P(5), P(6)]
    assert bugs.cause(FakeTrace(), f) == ("/src/tree.c:15", "/src/tree.c:16")
    # the state right after the CAS passes: it is no failure of what came after, nothing lacks
    assert lacking_pieces(check, lambda c: V(ok=True), Pt(), 9, "invariant-violation") == []

    # Heart's split publishing its parent empty (issue 48), built with the leaf-publish-early bug
    # too: after the CAS the parent's slots are written (seqs 10, 11), then the new leaf's key and
    # value (12, 13). The state passes once the old child's slot (10) persists; the leaf's
    # stores are lost with it only because they come later in the unit, and naming them would
    # make the record the other bug's too. It lacks the slot alone.
    class Split(Pt):
        units = [Unit(10, 11, 12, 13)]
        radices = [4]

    lacks = lacking_pieces(check, lambda choice: V(ok=choice[0] >= 1, cls="lost-durable-write"), Split(), 9,
                           "lost-durable-write")
    assert [p.seq for p in lacks] == [10]


def test_what_a_state_lacks_is_judged_as_a_crash_at_its_own_point(monkeypatch):
    """The states of the next crash point that tell what a failure lacks are judged as crashes at
    the failure's own point, its operation in flight (and with its follow-up): at an operation's
    end the operation must show, and every store that completes it would look lacking (Heart's
    split built with leaf-publish-early: the new leaf's key and value, the other bug's stores)."""
    from crashcheck.harness.check import state_shrink

    class Point:
        index, event, op, kind, units, radices = 3, 40, 1, "fence", (), []

        def lost(self, choice):
            return []

    cp, nxt = Point(), Point()
    nxt.index, nxt.kind = 4, "op_end"
    judged, followed = [], []

    class Oracle:
        def follow_text(self, p):
            followed.append(p)
            return ""

        def verdict(self, p, res):
            judged.append(p)

    monkeypatch.setattr(state_shrink, "state_checker", lambda session, trace, index, follow: lambda choices: [])
    monkeypatch.setattr(state_shrink, "needed_pieces", lambda *a: [])
    monkeypatch.setattr(state_shrink, "operation_points", lambda *a: [])
    monkeypatch.setattr(state_shrink, "earliest_needed", lambda *a: [])
    monkeypatch.setattr(state_shrink, "next_point", lambda session, trace, p: nxt)

    def lacking(check, verdict, p, before, cls):
        verdict("result")
        return [P(41)]
    monkeypatch.setattr(state_shrink, "lacking_pieces", lacking)
    f = Finding("lost-durable-write", "key 0 missing", ("lost-durable-write", ""), point=cp, choice=())
    state_shrink.shrink_state(None, None, Oracle(), f)
    assert [p.seq for p in f.lacks] == [41]
    assert judged == [cp] and followed == [cp, cp]
