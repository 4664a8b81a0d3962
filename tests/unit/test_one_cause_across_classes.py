"""One cause, one bug, across classes; two causes, two bugs (harness/triage/bugs.py merge) on
hand-made findings: wrong answers of runs without crash are grouped by the kind of operation
that gave them and its answer (crashcheck.specs.model.answer_shape), a failure of a run without crash by the new code path
of its first failing operation (harness/check/findings.py new_stores), and a crash state whose
failure the same operations show without any crash (Finding.without_crash) joins that bug,
whatever its class. The end-to-end case (Heart's split-prefix-length with --continuation 6) is
tests/quality/test_continuation_patterns.py."""
from dataclasses import dataclass

from crashcheck.crashsim.trace import Site
from crashcheck.harness.check.crash_free import crash_free_findings, first_failing_op
from crashcheck.harness.check.findings import Finding, new_stores
from crashcheck.harness.triage import bugs
from crashcheck.specs.ordered_map import parse_op
from crashcheck.specs.range_lock import parse_op as rl_op
from crashcheck.specs.registry import get as model_get

MAP = model_get("ordered_map")
LOCK = model_get("range_lock")


def run_finding(model, texts, lines, parse=parse_op, stores=()):
    [f] = crash_free_findings(model, [parse(t) for t in texts], lines)
    f.new_stores = tuple(stores)
    return f


def merged(findings):
    return bugs.merge(findings, lambda f: f, lambda f: None)


def test_wrong_answers_group_by_the_operation_and_its_answer_not_by_where_its_key_sits():
    # one lookup loses the key at 0, another the key at 2^64-1, a third in the middle: the same
    # check (a lookup's answer, notfound for a value) failed, one bug (issue 48); an insert that
    # answers wrong is another check
    at0 = run_finding(MAP, ["insert 0 5", "lookup 0"], ["ok", "notfound"])
    at_max = run_finding(MAP, [f"insert {2**64 - 1} 5", f"lookup {2**64 - 1}"], ["ok", "notfound"])
    again = run_finding(MAP, ["insert 0 9", "insert 7 1", "lookup 7"], ["ok", "ok", "notfound"])
    other = run_finding(MAP, ["insert 0 9", "insert 0 1"], ["ok", "ok"])
    assert at0.group == at_max.group == again.group == ("no-crash", "lookup: notfound for value")
    assert other.group == ("no-crash", "insert: ok for exists")
    assert sorted(len(m) for m in merged([at0, at_max, again, other])) == [1, 3]


def test_a_lock_granted_wrongly_and_one_refused_wrongly_are_two_bugs_wherever_their_ranges_sit():
    """The range lock's missed overlap (overlap-one-side) answers `ok` for `fail`, for a range in
    the middle, from 0 or to the maximum; the released node never snipped (paper-find) answers
    `fail` for `ok`: two bugs, not five (issue 48: bench/README.md, rangelock's extra records)."""
    top = 2**64 - 1
    first = run_finding(LOCK, ["trylock 0 5", "trylock 0 3"], ["ok", "ok"], rl_op)
    last = run_finding(LOCK, [f"trylock 9 {top}", f"trylock 10 {top}"], ["ok", "ok"], rl_op)
    both = run_finding(LOCK, [f"trylock 0 {top}", f"trylock 0 {top}"], ["ok", "ok"], rl_op)
    wrong_fail = run_finding(LOCK, ["trylock 1 2", "release 1 2", "trylock 1 2"], ["ok", "ok", "fail"], rl_op)
    wrong_ok = run_finding(LOCK, ["trylock 1 5", "trylock 3 4"], ["ok", "ok"], rl_op)
    fail_at_0 = run_finding(LOCK, ["trylock 0 0", "release 0 0", "trylock 0 0"], ["ok", "ok", "fail"], rl_op)
    assert [f.group[1] for f in (first, last, both, wrong_fail, wrong_ok, fail_at_0)] == \
        ["trylock: ok for fail"] * 3 + ["trylock: fail for ok", "trylock: ok for fail", "trylock: fail for ok"]
    out = merged([first, last, both, wrong_fail, wrong_ok, fail_at_0])
    assert sorted(len(m) for m in out) == [2, 4]
    assert all(len({f.group for f in m}) == 1 for m in out)


def test_runs_without_crash_failing_on_one_new_code_path_are_one_bug_whatever_they_break():
    # two histories whose first failing insert takes the same new stores (a split): one breaks a
    # rule, the other answers wrong; another failing on other new stores stays apart
    split = ("tree.c:137", "tree.c:292")
    rule = run_finding(MAP, ["insert 1 1", "insert 2 2"], ["ok", "ok", "!invariant 1 node ? indexes position 24"],
                       stores=split)
    wrong = run_finding(MAP, ["insert 5 1", "insert 6 2", "lookup 5"], ["ok", "ok", "notfound"], stores=split)
    other = run_finding(MAP, ["insert 5 1", "delete 5"], ["ok", "notfound"], stores=("tree.c:500",))
    out = merged([rule, wrong, other])
    assert sorted(len(m) for m in out) == [1, 2]
    [pair] = [m for m in out if len(m) == 2]
    assert bugs.classes(pair, lambda f: f) == ["invariant-violation", "wrong-value"]


class FakePoint:
    index, kind, op, event, units = 0, "op_begin", None, 0, ()

    def lost(self, choice):
        return []

    def kept(self, choice):
        return []


def test_a_crash_state_whose_failure_needs_no_crash_joins_the_run_without_crash():
    # after a crash that lost nothing, the continuation broke a rule no run without crash broke;
    # the same operations without any crash fail on the split's new stores, as another history did
    split = ("heart.c:137", "heart.c:292", "heart.c:410")
    logic = run_finding(MAP, ["delete 3", "insert 1 1", "insert 3 2"], ["notfound", "ok", "ok",
                        "!invariant 2 leaf ? under key byte ? at position ?: its key has another byte there"],
                        stores=split)
    after = Finding("invariant-violation", "after recovery and the follow-up ...",
                    ("invariant-violation", "rule: node ? indexes position ?, beyond the longest key"),
                    point=FakePoint(), choice=())
    assert len(merged([logic, after])) == 2          # nothing in common as such
    after.without_crash = run_finding(MAP, ["insert 9 1", "insert 10 2", "lookup 9"], ["ok", "ok", "notfound"],
                                      stores=split)
    [bug] = merged([after, logic])
    assert bug[0] is logic                            # shown by the run that needs no crash


@dataclass
class Ev:
    kind: str
    addr: int = 0
    site: int = 0


class OpsTrace:
    """Set-up stores (line 1), operation 0 stores lines 2 and 3, operation 1 lines 3 and 4."""
    events = [Ev("store", site=1), Ev("op_begin", 0), Ev("store", site=2), Ev("store", site=3),
              Ev("op_end", 0), Ev("op_begin", 1), Ev("store", site=3), Ev("store", site=4), Ev("store", site=1),
              Ev("op_end", 1), Ev("op_begin", 2), Ev("store", site=9)]

    def site(self, i):
        return Site(i, "t.c", i, 1, "f")


def test_new_stores_are_the_lines_the_failing_operation_stored_first():
    assert new_stores(OpsTrace(), 1) == ("t.c:4",)
    assert new_stores(OpsTrace(), 0) == ("t.c:2", "t.c:3")
    assert new_stores(OpsTrace(), None) == ()
    ops = [parse_op("insert 1 1"), parse_op("insert 2 2"), parse_op("lookup 1")]
    assert first_failing_op(MAP, ops, ["ok", "ok", "!invariant 1 broken", "notfound"]) == 1
    assert first_failing_op(MAP, ops, ["ok", "ok", "notfound"]) == 2
    assert first_failing_op(MAP, ops, ["ok", "ok", "value 1"]) is None


def test_a_model_of_the_previous_release_passing_shape_still_loads_and_groups_by_the_check():
    """Models written for 2026-11-27 passed shape(op); it is accepted and no longer changes the
    grouping (an upgrade must not break a user's model)."""
    import dataclasses
    old_style = dataclasses.replace(MAP, shape=lambda op: f"{op.kind} somewhere")
    f = run_finding(old_style, ["insert 0 5", "lookup 0"], ["ok", "notfound"])
    assert f.group == ("no-crash", "lookup: notfound for value")
