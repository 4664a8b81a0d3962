"""A fix proven on a bug's example is checked on the other failing histories of its group kept
while fuzzing (harness/run/fix_checks.py): it counts them as proven or failed, and a fix that
fails on one gives way to the next candidate of its search that passes on the example and on
every other one. The checker here is a stand-in that knows which edits fix which history."""
from types import SimpleNamespace

from crashcheck.harness.check.fix_search import Edit, FixResult
from crashcheck.harness.run.fix_checks import OTHER_HISTORIES, check_fixes, keep_other

A = (Edit("flush-after", "a.c:10"),)
B = (Edit("persist-after", "a.c:10"),)
C = (Edit("commit", "a.c:11"),)


class Stand:
    """Checker.prove_fix as a table: history -> the edits that fix it."""
    def __init__(self, fixes):
        self.fixes, self.calls = fixes, []
        self.budget = SimpleNamespace(expired=lambda: False)
        self.model = SimpleNamespace(op_text=str)
        self.known_fixes = {}       # no other bug's fix to apply beside (Checker.known_fixes)

    def prove_fix(self, ops, edits, also=()):
        self.calls.append((tuple(ops), edits))
        return edits in self.fixes[tuple(ops)]


def _entry(fix, example, others):
    return SimpleNamespace(finding=SimpleNamespace(fix=fix), outcome=SimpleNamespace(ops=example, trace=None),
                           others=others)


def test_a_fix_is_checked_on_the_other_histories():
    fix = FixResult(edits=A, proven_for=[["x"]], remaining=[B, C])
    e = _entry(fix, ["x"], [["y"], ["z"]])
    check_fixes(Stand({("x",): {A}, ("y",): {A, B}, ("z",): {A}}), [e], lambda: False)
    assert fix.edits == A and fix.proven_for == [["x"], ["y"], ["z"]] and fix.failed_for == []


def test_a_fix_that_fails_elsewhere_gives_way_to_one_that_holds_everywhere():
    fix = FixResult(edits=A, proven_for=[["x"]], remaining=[B, C], tried=1)
    e = _entry(fix, ["x"], [["y"], ["z"]])
    # A fails on z; B fails on the example itself; C holds on all three
    stand = Stand({("x",): {A, C}, ("y",): {A, B, C}, ("z",): {B, C}})
    check_fixes(stand, [e], lambda: False)
    assert fix.edits == C and fix.proven_for == [["x"], ["y"], ["z"]] and fix.failed_for == []
    assert fix.tried == 3 and "fails on another history" in fix.rejected[-1]
    # nothing holds everywhere: the fix stays, with the history it failed on
    fix2 = FixResult(edits=A, proven_for=[["x"]], remaining=[B])
    check_fixes(Stand({("x",): {A, B}, ("y",): {A}, ("z",): {B}}), [_entry(fix2, ["x"], [["y"], ["z"]])],
                lambda: False)
    assert fix2.edits == A and fix2.proven_for == [["x"], ["y"]] and fix2.failed_for == [["z"]]


def test_other_failing_histories_are_kept_up_to_a_few():
    entry = SimpleNamespace(outcome=SimpleNamespace(ops=["a"]), others=[])
    f = SimpleNamespace(point=object())
    keep_other(entry, SimpleNamespace(ops=["a"]), f, False)           # the example itself
    for ops in (["b"], ["b"], ["c"], ["d"], ["e"]):
        keep_other(entry, SimpleNamespace(ops=ops), f, False)
    assert entry.others == [["b"], ["c"], ["d"]] and len(entry.others) == OTHER_HISTORIES
    crash_free = SimpleNamespace(point=None)
    entry2 = SimpleNamespace(outcome=SimpleNamespace(ops=["a"]), others=[])
    keep_other(entry2, SimpleNamespace(ops=["b"]), crash_free, False)
    assert entry2.others == []
