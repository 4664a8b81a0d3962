"""The fuzz summary counts a target's bugs and the symptoms folded into them, with how many a
bug's proven fix removes, and the bugs not shrunk (harness/cli/fuzz_summary.py, issue 48)."""
from rich.console import Console

from crashcheck.harness.cli.fuzz_summary import print_summary

STATS = {"histories": 3, "crash_points": 0, "states_explored": 0, "states_legal": 0, "states_checked": 0,
         "elapsed_s": 1.0}


def bug(cls, symptoms, folded_by_fix=0, expected=False):
    return {"structure": "t", "bug": None, "expected": expected, "class": cls, "detail": "d", "sites": [],
            "history": ["insert 1 1"], "replay": "crashcheck replay x.json", "symptoms": [{"class": "leak"}] * symptoms,
            "classes": [cls], "folded_by_fix": folded_by_fix}


def test_the_summary_counts_bugs_symptoms_folded_and_bugs_not_shrunk():
    res = {"strategy": "lazy", "limit": 64, "model": "adr",
           "per_structure": [{"structure": "t", "bug": None, "stats": STATS, "unexpected": 2, "expected": 1,
                              "unshrunk": 1}],
           "bugs": [bug("lost-durable-write", 3, folded_by_fix=2), bug("wrong-value", 1),
                    bug("leak", 5, expected=True)]}
    console = Console(record=True, width=400)
    print_summary(console, res)
    text = console.export_text()
    assert "2 bugs (4 symptoms folded: 2 of other lost stores, each removed by its bug's proven fix" in text
    assert "1 bug(s) not shrunk" in text


def test_the_summary_says_how_many_states_known_bugs_explained():
    """The states a known bug explains, pruned before they ran (a count past 2^64 read back as
    text, as results files write it) and failing ones dropped (harness/check/unmask.py)."""
    st = dict(STATS, states_pruned=str(3 * 2 ** 70), explained_states=4)
    res = {"strategy": "lazy", "limit": 64, "model": "adr",
           "per_structure": [{"structure": "t", "bug": None, "stats": st, "unexpected": 0, "expected": 0}],
           "bugs": []}
    console = Console(record=True, width=400)
    print_summary(console, res)
    text = console.export_text()
    assert ("known bugs: 3.54e+21 crash states not executed (each loses a store of a known bug of one "
            "source line, or one its proven fix makes durable), 4 failing states explained") in text
    res["per_structure"][0]["stats"] = STATS
    console = Console(record=True, width=400)
    print_summary(console, res)
    assert "known bugs" not in console.export_text()
