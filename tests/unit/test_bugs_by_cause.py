"""Identity by cause (harness/triage/bugs.py merge, issue 48): findings whose shrunk crash states
lose different minimal stores are different bugs, whatever group or store they share, unless a
fix of one is proven to make the other's history pass (Finding.removed_by,
harness/run/fold_proofs.py); then the other is folded into its bug and counted as such. Findings
without a cause of their own (an unshrunk state, a leak) still join by what they share, which is
what keeps one bug's many symptoms together; a leak (or a run without crash) joins a bug of lost
stores only when its state loses that bug's minimal stores too."""
import shutil
import subprocess
from pathlib import Path

import pytest

from crashcheck.harness.check.findings import Finding
from crashcheck.harness.check.fix_edits import Edit
from crashcheck.harness.check.fix_search import FixResult
from crashcheck.harness.triage import bugs
from crashcheck.specs.oracle import address_free

from test_bugs_grouping import Ev, FakePoint, FakeTrace, P

RULE = "rule: leaf ? has value pointer ?, not an allocated value object"


def shrunk(cls, lost, needed=(), group=None):
    f = Finding(cls, f"{cls} detail", (cls, group or f"{cls}-{lost}"), point=FakePoint(),
                choice=(tuple(lost), tuple(needed)))
    f.needed = [P(s) for s in needed]
    f.shrunk = True
    return f


def fixed(f, line):
    f.fix = FixResult(edits=(Edit("persist-after", f"/src/tree.c:{line}"),))
    return bugs.fix_key(f)


def merged(fs):
    trace = FakeTrace()
    return bugs.merge(fs, lambda f: f, lambda f: trace)


def test_two_causes_that_break_one_rule_stay_two_bugs():
    """A delete's unflushed unlink and an update's swing before its value both break the rule
    about value pointers; their minimal lost stores differ: two bugs (one, before)."""
    unlink = shrunk("invariant-violation", [2], group=RULE)
    swing = shrunk("invariant-violation", [3], group=RULE)
    assert len(merged([unlink, swing])) == 2


def test_a_failure_the_bugs_fix_removes_is_folded_into_it():
    a = shrunk("invariant-violation", [2], group=RULE)
    b = shrunk("invariant-violation", [2, 3], group=RULE)     # loses one more store
    fix = fixed(a, 12)
    b.removed_by.append(fix)
    out = merged([a, b])
    assert len(out) == 1
    trace = FakeTrace()
    assert bugs.folded_by_fix(out[0], lambda f: f, lambda f: trace) == 1


def test_a_fix_proven_to_remove_another_failure_folds_only_that_one():
    a = shrunk("invariant-violation", [2], group=RULE)
    b = shrunk("invariant-violation", [2, 3], group=RULE)
    c = shrunk("invariant-violation", [0], group=RULE)
    b.removed_by.append(fixed(a, 12))
    c.removed_by.append("add a flush and a fence after /src/tree.c:99")    # another fix's
    out = merged([a, b, c])
    assert sorted(len(m) for m in out) == [1, 2]
    assert [m for m in out if len(m) == 1][0] == [c]


def test_symptoms_without_a_cause_of_their_own_still_join_by_what_they_share():
    """A leak (its state kept as found) and an unshrunk finding lose nothing that names a cause:
    they join the bug they share a group with when their states lose that bug's minimal stores
    too, as one bug's symptoms always did."""
    a = shrunk("invariant-violation", [2], group=RULE)
    a.symptoms.append(Finding("leak", "leak", ("leak", "alloc at tree.c:40")))
    leak = Finding("leak", "leak", ("leak", "alloc at tree.c:40"), point=FakePoint(), choice=((2, 3), ()))
    leak.shrunk = True
    unshrunk = Finding("invariant-violation", "d", ("invariant-violation", RULE), point=FakePoint(),
                       choice=((0, 2, 3), ()))
    assert len(merged([a, leak, unshrunk])) == 1


def test_a_leak_whose_state_loses_nothing_is_no_symptom_of_a_lost_store():
    """WORT's old value never freed: its leak shows in states that lose no store, and shares its
    allocation site with the leaks of the unflushed link's states (issue 48's folded leak). No
    lost store explains it: a bug of its own; the link's leak of a state losing the link joins."""
    link = shrunk("lost-durable-write", [2])
    link.symptoms.append(Finding("leak", "leak", ("leak", "tree.c:35")))
    old_value = Finding("leak", "leak", ("leak", "tree.c:35"), point=FakePoint(), choice=((), ()))
    links_leak = Finding("leak", "leak", ("leak", "tree.c:35"), point=FakePoint(), choice=((2, 4), ()))
    out = merged([link, old_value, links_leak])
    assert sorted(sorted(id(f) for f in m) for m in out) == sorted([sorted([id(link), id(links_leak)]),
                                                                    [id(old_value)]])


def test_a_bridge_without_a_cause_does_not_join_two_causes():
    """A finding without lost stores shares a group with two bugs of different causes: it joins
    the first; the second stays apart (transitivity would fold them through it)."""
    a = shrunk("invariant-violation", [2], group=RULE)
    bridge = Finding("invariant-violation", "d", ("invariant-violation", RULE), point=FakePoint(), choice=((2, 3), ()))
    b = shrunk("invariant-violation", [3], group=RULE)
    out = merged([a, bridge, b])
    assert sorted(len(m) for m in out) == [1, 2]


def test_contents_lost_behind_one_published_store_are_one_bug():
    """A node published before its contents are durable: crashes lose different contents stores,
    all need the publishing store persisted; none loses it: one bug."""
    a = shrunk("invariant-violation", [2], needed=[1])
    b = shrunk("recovery-crash", [3], needed=[1])
    assert len(merged([a, b])) == 1


def test_a_store_one_bug_loses_joins_nothing_another_needs_persisted():
    """The insert's unflushed link lost (one bug), and a delete's unflushed unlink that needs the
    link persisted (another): the store one loses and the other needs is no common hinge."""
    link = shrunk("lost-durable-write", [1])
    unlink = shrunk("resurrected-delete", [2], needed=[1])
    assert len(merged([link, unlink])) == 2


def test_a_check_reporting_its_site_names_its_rule_by_that_site(tmp_path):
    """CC_VIOLATION (trees/common/cc_tree.h) adds the check's file:line; the rule is that site, so
    two checks with texts alike but for numbers are two rules, and an adapter calling its
    callback directly keeps the rule named by its text."""
    cc = shutil.which("clang-16") or shutil.which("clang") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler")
    root = Path(__file__).resolve().parents[2]
    src = tmp_path / "adapter.c"
    src.write_text('#include "cc_tree.h"\n'
                   'static void cb(void *ctx, const char *t) { (void)ctx; puts(t); }\n'
                   'int main(void) {\n'
                   '\tCC_VIOLATION(cb, 0, "node 12 has 1 child");\n'
                   '\tCC_VIOLATION(cb, 0, "node 13 has 1 child");\n'
                   '\tcb(0, "leaf 7 on the wrong path");\n'
                   '\treturn 0;\n}\n')
    exe = tmp_path / "a.out"
    subprocess.run([cc, "-std=gnu11", "-Wall", "-Wextra", "-Werror", f"-I{root / 'trees/common'}", str(src),
                    "-o", str(exe)], check=True)
    first, second, plain = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.splitlines()
    assert address_free(first) == "check at adapter.c:4" and address_free(second) == "check at adapter.c:5"
    assert address_free(plain) == "leaf ? on the wrong path"


def test_two_bugs_with_fixes_of_their_own_share_no_hinge():
    """Both need one store persisted (the allocator's), and each has its own proven fix that the
    other's failure does not need: two causes."""
    a = shrunk("invariant-violation", [2], needed=[1])
    b = shrunk("invariant-violation", [3], needed=[1])
    fixed(a, 12)
    fixed(b, 13)
    assert len(merged([a, b])) == 2


def test_a_store_one_failure_needs_and_another_was_anchored_on_is_no_hinge_once_a_fix_is_proven():
    """The allocator's store: a delete's failure needs its free persisted; a split's failure is
    anchored on the allocation its operation made durable before losing its header. Without a
    fix nothing tells them from a node published before its contents (one bug); the delete's
    proven fix, which the split's failure does not need, makes them two."""

    class Unit:
        def __init__(self, seqs):
            self.pieces = [P(s) for s in seqs]
    split = shrunk("invariant-violation", [8])
    split.point = FakePoint()
    split.point.op, split.point.event, split.point.units = 0, 9, [Unit([8])]
    assert bugs.anchor(FakeTrace(), split) == ["/src/tree.c:15", "/src/tree.c:16"]
    delete = shrunk("invariant-violation", [2], needed=[5])
    assert len(merged([split, delete])) == 1
    fixed(delete, 12)
    assert len(merged([split, delete])) == 2


def test_a_finding_without_a_cause_is_no_bridge_for_a_hinge():
    """A failure that loses nothing hinges on a store that two bugs of different lost stores
    also touch, one needing it and one anchored on it: it joins one; the other stays apart."""
    a = shrunk("invariant-violation", [2], needed=[5])
    bridge = Finding("wrong-value", "d", ("wrong-value", "crash@x"), point=FakePoint(), choice=((2, 3), ()))
    bridge.needed = [P(5)]
    b = shrunk("wrong-value", [3], needed=[6])
    bridge.needed_early = [P(6)]
    assert len(merged([a, bridge, b])) == 2


def test_a_hinge_folds_different_lost_stores_only_where_no_fix_is_proven():
    a = shrunk("invariant-violation", [2], needed=[1])
    b = shrunk("recovery-crash", [3], needed=[1])
    fixed(a, 11)                  # (a commit at the publishing store both hinge on)
    assert len(merged([a, b])) == 2
    b.removed_by.append(bugs.fix_key(a))
    assert len(merged([a, b])) == 1


def test_a_fix_that_passes_a_history_only_by_removing_another_bugs_failure_there_folds_nothing():
    """The delete's history also shows the insert's lost link: the link's fix (with the delete's
    own) makes it pass, but it edits nothing the delete's state loses or hinges on."""
    link = shrunk("lost-durable-write", [1])
    unlink = shrunk("invariant-violation", [2])
    unlink.removed_by.append(fixed(link, 11))
    assert len(merged([link, unlink])) == 2


def test_a_store_a_third_bug_loses_is_no_hinge_for_two_others():
    link = shrunk("lost-durable-write", [1])
    unlink = shrunk("invariant-violation", [2], needed=[1])
    split = shrunk("invariant-violation", [3], needed=[1])
    assert len(merged([link, unlink, split])) == 3


def test_without_the_fix_search_a_shared_rule_folds_no_two_causes():
    """--no-fix: no fix is proven, so findings are told apart by their minimal lost stores; one
    rule broken by two states that lose different stores is two bugs (it was folded by the rule's
    text before), and the same lost stores are one."""
    a = shrunk("invariant-violation", [2], group=RULE)
    b = shrunk("invariant-violation", [3], group=RULE)
    trace = FakeTrace()
    assert len(bugs.merge([a, b], lambda f: f, lambda f: trace)) == 2
    c = shrunk("invariant-violation", [2], group=RULE)
    assert len(bugs.merge([a, b, c], lambda f: f, lambda f: trace)) == 2


def test_one_publication_hinges_two_bugs_only_when_they_lose_one_kind_of_object_first():
    """Heart (eADR): a split publishes its new parent by CAS; the split bug fills the parent's
    slots after it, the leaf bug writes the new leaf's key after it. Both hinge on the CAS; a crash
    after it loses a suffix: the parent's slot then the leaf's key (split), or the leaf's key
    (leaf). Their first lost stores write a parent (allocated at line 10) and a leaf (line 11):
    two bugs. Two states losing different contents of leaves (the leaf bug's key, or its value)
    stay one."""
    from test_bugs_grouping import Ev

    class SplitTrace(FakeTrace):
        """alloc parent (event 0, 64 bytes at 0x100, line 10), alloc leaf (1, at 0x200, line 11);
        op_begin 2; locked fence 3, the CAS (4, line 14), seq_cst fence 5; the parent's slot (6,
        at 0x108, line 16), the leaf's key (7, at 0x200, line 17), the leaf's value (8, at 0x208,
        line 18)."""
        events = [Ev(0, "alloc", 0, addr=0x100, size=64), Ev(1, "alloc", 1, addr=0x200, size=64),
                  Ev(2, "op_begin", 2), Ev(3, "fence", 3, sub="locked"), Ev(4, seq=4, addr=0x50),
                  Ev(5, "fence", 5, sub="seq_cst"), Ev(6, seq=6, addr=0x108), Ev(7, seq=7, addr=0x200),
                  Ev(8, seq=8, addr=0x208), Ev(9, "op_end", 9)]

    class Unit:
        kind = "thread"

        def __init__(self, seqs):
            self.pieces = [P(s) for s in seqs]

    def after_cas(lost):
        f = shrunk("invariant-violation", lost)
        f.point = FakePoint()
        f.point.event, f.point.kind, f.point.op, f.point.units = 6, "fence", 0, [Unit(lost)]
        return f
    trace = SplitTrace()
    split, leaf_key, leaf_value = after_cas([6, 7, 8]), after_cas([7, 8]), after_cas([8])
    assert bugs.anchor(trace, split) == bugs.anchor(trace, leaf_key) == ["/src/tree.c:14"]
    assert [bugs.first_lost_object(trace, f) for f in (split, leaf_key, leaf_value)] == \
        ["/src/tree.c:10", "/src/tree.c:11", "/src/tree.c:11"]
    out = bugs.merge([split, leaf_key, leaf_value], lambda f: f, lambda f: trace)
    assert sorted(len(m) for m in out) == [1, 2]


def test_a_leak_that_lost_nothing_is_no_lost_stores_symptom():
    """WORT's old value never freed leaks once an update swung its pointer, with nothing lost; the
    link's lost store leaks a value of the same allocation site: they share the leak's group, but
    nothing lost explains the first, so two bugs. A leak whose state lost the link stays the link's."""
    def leak(lost):
        return Finding("leak", "leak detail", ("leak", "a.c:35"), point=FakePoint(), choice=(tuple(lost), ()))
    link = shrunk("lost-durable-write", [1])
    link.symptoms = [leak([1])]
    assert len(merged([link, leak([])])) == 2
    assert len(merged([link, leak([1])])) == 1
    # nor is a failure that lost nothing a bridge to it (its state leaked the old value too)
    swing = Finding("wrong-value", "d", ("wrong-value", "crash@x"), point=FakePoint(), choice=((), ()))
    swing.symptoms = [leak([])]
    assert len(merged([swing, leak([]), leak([])])) == 2


def _leak(lost, by_code=False, group="a.c:91"):
    f = Finding("leak", "leak detail", ("leak", group), point=FakePoint(), choice=(tuple(lost), ()))
    f.left_by_code = by_code
    return f


def test_a_leak_the_code_left_is_its_groups_example_in_a_history_and_across_histories():
    """ART+CoW's replaced node never freed (cow-no-free) leaks in every state after the copy, most
    of them beside a lost store of another bug (the swing) whose crash failure names the state:
    the group's example was the first state that showed it, beside lost stores, and the leak
    joined that bug. A state that lost nothing shows it as the code's own: it becomes the example
    (occurrences kept), in a history (add_finding) and over shares (merge_entries)."""
    from crashcheck.harness.check.findings import add_finding
    from crashcheck.harness.run.merge import merge_entries
    from crashcheck.harness.run.results import Entry, Stats, TargetResult

    groups = {}
    beside, own = _leak([2]), _leak([], by_code=True)
    beside.occurrences, own.occurrences = 5, 2
    for f in (beside, own, _leak([3])):
        add_finding(groups, f)
    assert groups[("leak", "a.c:91")] is own and own.occurrences == 8
    # over shares: the smaller example loses to the code's own leak
    small = Entry(("leak", "a.c:91"), (1, 1), None, _leak([2]), 3, 1.0, ((1, 1), 0, 0), (0, 0))
    plain = Entry(("leak", "a.c:91"), (4, 4), None, _leak([], by_code=True), 1, 2.0, ((4, 4), 1, 0), (1, 0))
    parts = [TargetResult("t", None, Stats(), entries=[e]) for e in (small, plain)]
    [kept] = merge_entries(parts)
    assert kept.finding.left_by_code and kept.occurrences == 4 and kept.first_seen == 1.0
    # and the code's own leak is no symptom of the lost store beside which it was first seen
    link = shrunk("lost-durable-write", [2])
    link.symptoms = [_leak([2])]
    assert len(merged([link, kept.finding])) == 2


def test_a_leak_of_an_old_object_beside_the_operations_new_ones_is_the_codes():
    """A state that lost nothing leaks the operation's new node (by design while it is in flight)
    and an old node the code never freed: the old one makes it the code's leak (left_by_code),
    no symptom of a lost store, though the operation in flight allocated one of its objects."""
    class InFlight(FakeTrace):
        events = FakeTrace.events[:5] + [Ev(5, "alloc", 5, addr=100, size=16, off=100)] + FakeTrace.events[5:]

    class Point(FakePoint):
        op, kind, event = 0, "store", 7

    f = Finding("leak", "d", ("leak", "tree.c:15"), point=Point(), choice=((), ()),
                leaks=[{"off": 100}, {"off": 300}])
    assert bugs.fresh_objects(InFlight(), f) == ["/src/tree.c:15"]
    assert not bugs.lossless(InFlight(), f)
    f.left_by_code = True
    assert bugs.lossless(InFlight(), f)


def test_a_rule_broken_in_a_state_that_lost_nothing_is_a_group_apart():
    """ART+CoW's header rewritten in place before the swing breaks the depth rule in a state that
    lost nothing; the swing published too early breaks it in states that lose the copy, earlier
    in the same history: one group hid the first behind the second (merge-in-place missed in the
    many-bug variant). A state that lost nothing is a group of its own, with the same text."""
    from types import SimpleNamespace

    from crashcheck.harness.check.findings import finding_group

    def broke(lost):
        return Finding("invariant-violation", "d", ("invariant-violation", ""), point=FakePoint(),
                       choice=(tuple(lost), ()), result=SimpleNamespace(result={"violations": ["depth 3 [check at c.c:200]"]}))
    assert finding_group(FakeTrace(), broke([2])) == ("invariant-violation", "rule: check at c.c:200")
    assert finding_group(FakeTrace(), broke([])) == ("invariant-violation (nothing lost)", "rule: check at c.c:200")


def test_a_failure_that_lost_nothing_joins_lost_stores_only_through_a_store_both_hinge_on():
    """A failure that lost nothing once shrunk, anchored on the header stores its operation made
    durable, and one that loses the copy a swing published: they share a rule broken on the way,
    no cause: two bugs. One that loses the pointer swing after the same header stores hinges on
    them too: the same rewrite, one bug."""
    def anchored_on(seq):
        f = shrunk("invariant-violation", [], group="rule: check at c.c:200")
        f.needed_early = [P(seq)]
        f.result = type("R", (), {"result": {"violations": ["a", "shared rule"]}})()
        return f
    swing = shrunk("invariant-violation", [2], group="rule: check at c.c:217")
    swing.result = type("R", (), {"result": {"violations": ["b", "shared rule"]}})()
    assert len(merged([swing, anchored_on(5)])) == 2
    pointer = shrunk("invariant-violation", [6], group="rule: check at c.c:200")
    pointer.needed_early = [P(5)]
    assert len(merged([pointer, anchored_on(5)])) == 1


def test_one_fix_proven_on_each_ones_own_history_is_one_bug():
    """A version committed before its copy is durable loses an insert's store of the copy in one
    history and a remove's in another (examples/cowmap big-publish-first): different minimal
    lost stores, and the same fix (persist the copy before the commit) proven on each one's own
    trace, with no time left to try one's fix on the other's history: one bug. Two fixes of
    their own stay two (test_two_bugs_with_fixes_of_their_own_share_no_hinge)."""
    insert = shrunk("invariant-violation", [2], group=RULE)
    remove = shrunk("lost-durable-write", [3])
    fixed(insert, 18)
    fixed(remove, 18)
    assert len(merged([insert, remove])) == 1
    fixed(remove, 19)
    assert len(merged([insert, remove])) == 2


def test_a_bug_with_a_member_that_lost_stores_is_named_by_them():
    """WORT's update swung before its value: the shortest history's state loses nothing (a crash
    right after the swing, which it needs persisted), a longer one's loses the value store. One
    bug (they hinge on the swing); it is named by the lost value store, not by the state that
    lost nothing, and its class stays the one the order chose."""
    trace = FakeTrace()
    sizes = {}

    def make(cls, lost, needed, n):
        f = shrunk(cls, lost, needed, group=f"{cls}-{lost}")
        sizes[id(f)] = n
        return f
    swing = make("wrong-value", [], [1], 2)            # loses nothing, needs line 11 persisted
    value = make("wrong-value", [2], [1], 3)           # loses line 12, needs line 11
    other = make("invariant-violation", [3], [1], 4)   # another class: never named by it
    [bug] = bugs.merge([swing, value], lambda f: f, lambda f: trace, lambda f: sizes[id(f)])
    assert bug == [value, swing]
    [bug] = bugs.merge([swing, other], lambda f: f, lambda f: trace, lambda f: sizes[id(f)])
    assert bug[0] is swing
    assert bugs.merge([swing], lambda f: f, lambda f: trace)[0] == [swing]
    # an unshrunk state's lost stores name nothing
    value.shrunk = False
    [bug] = bugs.merge([swing, value], lambda f: f, lambda f: trace, lambda f: sizes[id(f)])
    assert bug[0] is swing


def test_a_failure_that_lost_nothing_is_told_apart_by_what_it_lacks_not_by_a_store_both_hinge_on():
    """Heart's split publishing its parent before filling it (issue 48): right after the split's
    CAS the state loses nothing and lacks the old child's slot (line 17); the leaf published before
    its key loses the key (line 12). Both hinge on the CAS (line 15) and no fix is proven: the
    shared hinge proves nothing, two bugs. A failure that lacks the key the leaf's state loses is
    the leaf's bug."""
    def lacking(seq):
        f = shrunk("lost-durable-write", [], group="crash@tree.c:15")
        f.lacks, f.needed_early = [P(seq)], [P(5)]
        return f
    leaf = shrunk("invariant-violation", [2], group="rule: check at c.c:216")
    leaf.needed_early = [P(5)]
    assert bugs.anchored(FakeTrace(), lacking(7))
    assert len(merged([leaf, lacking(7)])) == 2
    assert len(merged([leaf, lacking(2)])) == 1


def test_a_failure_that_lacks_every_store_another_state_of_its_bug_loses_joins_it():
    """Heart's leaf published before its contents: right after the CAS the state lacks the key
    length, key and value (lines 11-13); another state loses only the key and value (12, 13).
    The stores that matter in the second are all among the first's: one bug. A state that lacks
    only a line of another object (14) stays apart."""
    def lacking(*seqs):
        f = shrunk("invariant-violation", [], group="rule: check at c.c:216")
        f.lacks, f.needed_early = [P(s) for s in seqs], [P(5)]
        return f
    leaf = shrunk("invariant-violation", [2, 3], group="rule: check at c.c:216")    # one rule broken
    assert len(merged([leaf, lacking(1, 2, 3)])) == 1
    assert len(merged([leaf, lacking(4)])) == 2
