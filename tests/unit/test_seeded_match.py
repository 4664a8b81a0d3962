"""harness/triage/seeded_match.py: which seeded bug of a many-bug variant a record is, by the
catalog signatures: a record of its own, a symptom of another's record, or missed."""
from crashcheck.harness.target.structures import SeededBug
from crashcheck.harness.triage import seeded_match as sm


def bug(name, *signature):
    return SeededBug(name, "B_" + name.upper(), "wrong-value", "", signature=signature)


LINK, SWING, RULE, LEAK, GONE = (bug("link", "t/w.c:81"), bug("swing", "t/w.c:326", "t/w.c:331"),
                                 bug("rule", "rule: header ?"), bug("leak", "t/w.c:40"), bug("gone", "t/w.c:99"))


def record(ident, group, sites=(), symptoms=(), leaks=(), expected=False, first_seen_s=1.5):
    return {"id": ident, "group": group, "sites": list(sites), "symptoms": list(symptoms),
            "leaks": [{"off": 0, "size": 8, "site": {"file": f, "line": n}} for f, n in leaks],
            "expected": expected, "first_seen_s": first_seen_s}


def test_each_bug_own_symptom_or_missed():
    records = [
        record("r1", "t/w.c:81", ["t/w.c:81"],
               symptoms=[{"class": "invariant-violation", "group": "rule: header ?", "lost": ["t/w.c:192"]}]),
        # named by a lost store other than its first (the group): still swing's own
        record("r2", "t/w.c:500", ["t/w.c:500", "t/w.c:331"], first_seen_s=7.25),
        # the same bug again: the first record counts
        record("r3", "t/w.c:326", ["t/w.c:326"]),
        # an expected finding names nothing
        record("r4", "t/w.c:99", ["t/w.c:99"], expected=True),
        # a leak, by its allocation site, from another folder
        record("r5", "leak of 1 object", leaks=[("/home/u/t/w.c", 40)]),
    ]
    got = sm.classify(records, [LINK, SWING, RULE, LEAK, GONE])
    assert list(got) == ["link", "swing", "rule", "leak", "gone"]
    assert (got["link"].how, got["link"].record) == (sm.OWN, "r1")
    assert (got["swing"].how, got["swing"].record, got["swing"].first_seen_s) == (sm.OWN, "r2", 7.25)
    assert (got["rule"].how, got["rule"].record) == (sm.SYMPTOM, "r1")
    assert (got["leak"].how, got["leak"].record) == (sm.OWN, "r5")
    assert (got["gone"].how, got["gone"].record) == (sm.MISSED, None)


def test_a_record_naming_two_bugs_is_neither_ones_own():
    """One record whose lost stores belong to two seeded bugs folds them: both are symptoms."""
    records = [record("r1", "t/w.c:700", ["t/w.c:81", "t/w.c:331"])]
    got = sm.classify(records, [LINK, SWING])
    assert [(v.how, v.record) for v in got.values()] == [(sm.SYMPTOM, "r1"), (sm.SYMPTOM, "r1")]


def test_group_decides_before_sites():
    """The record's group (its name) picks the bug even when its other lost stores name another."""
    records = [record("r1", "t/w.c:81", ["t/w.c:81", "t/w.c:331"])]
    got = sm.classify(records, [LINK, SWING])
    assert (got["link"].how, got["swing"].how) == (sm.OWN, sm.SYMPTOM)


def test_matches_by_whole_text_or_path_suffix():
    assert sm.matches(["/abs/examples/m.c:63"], ["examples/m.c:63"])
    assert not sm.matches(["examples/m.c:630"], ["examples/m.c:63"])
    assert not sm.matches(["xexamples/m.c:63"], ["examples/m.c:63"])


def test_a_record_losing_nothing_is_named_by_the_stores_that_matter_in_its_state():
    """leafdir's update makes its new copy live before it clears the old one: the record's own
    state loses nothing and needs the new copy (examples/leafdir/leafdir.c:198) persisted; its
    `cause` names the bug. A record that loses stores is named by those only."""
    copy = bug("copy", "t/w.c:198")
    records = [dict(record("r1", "crash@t/w.c:322"), cause=["t/w.c:198"]),
               dict(record("r2", "t/w.c:81", ["t/w.c:81"]), cause=["t/w.c:81", "t/w.c:198"])]
    got = sm.classify(records, [LINK, copy])
    assert [(v.how, v.record) for v in got.values()] == [(sm.OWN, "r2"), (sm.OWN, "r1")]
    assert sm.classify(records[1:], [copy])["copy"].how == sm.MISSED
