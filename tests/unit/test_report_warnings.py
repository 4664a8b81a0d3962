"""The HTML report lists each structure's warnings (issue 36: an unconfirmed persistency race is a
warning in the report, never a bug; the pending-lines hint and a batch's warnings likewise), under
its structure, apart from the bugs; a run without any shows no warnings section."""
from crashcheck.harness.core.settings import Settings
from crashcheck.harness.render.report import render
from crashcheck.harness.run.results import Results, Stats, TargetResult

RACE = ("unconfirmed persistency race: hart.c:210 (thread 1) -> hart.c:388 (thread 2): the image that "
        "loses the store recovers to a durably linearizable state")


def test_warnings_are_listed_per_structure_and_never_as_bugs():
    hart = TargetResult("hart", None, Stats(histories=3), warnings=[RACE, "batch 2: <pending> lines"])
    wort = TargetResult("wort", None, Stats(histories=2))
    html = render(Results([hart, wort], Settings()).as_json("crashcheck fuzz hart wort --threads 3"))
    assert "Warnings of hart (not bugs)" in html
    assert RACE.replace("->", "-&gt;") in html
    assert "batch 2: &lt;pending&gt; lines" in html          # escaped, as every text from the run
    assert "Warnings of wort" not in html
    assert "No bugs found" in html


def test_a_run_without_warnings_has_no_warnings_section():
    html = render(Results([TargetResult("wort", None, Stats(histories=2))], Settings()).as_json("crashcheck fuzz wort"))
    assert "Warnings of" not in html
