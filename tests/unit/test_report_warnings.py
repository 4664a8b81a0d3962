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


def test_race_warnings_have_a_section_with_sites_reason_history_and_aim():
    rec = {"class": "persistency-race", "confirmed": False, "group": "kv.c:33 -> kv.c:25",
           "store": {"where": "kv.c:33 (inlined at kv.c:54)", "thread": 1},
           "load": {"where": "kv.c:25", "thread": 2}, "why": "the reader <never> loaded it",
           "history": ["insert 1 1", "insert 2 2", "lookup 2"], "thread_of": [0, 1, 2], "load_ops": 1,
           "sched": "aim:1:1:0:1:4:2:1", "schedule": "# crashcheck-schedule 1\n"}
    hart = TargetResult("hart", None, Stats(histories=3), race_warnings=[rec])
    html = render(Results([hart], Settings()).as_json("crashcheck fuzz hart --threads 3"))
    assert "Unconfirmed persistency races of hart (warnings, not bugs)" in html
    assert "kv.c:33 (inlined at kv.c:54) (thread 1)" in html and "kv.c:25 (thread 2)" in html
    assert "the reader &lt;never&gt; loaded it" in html
    assert "[1] insert 2 2; [2] lookup 2" in html and "aim:1:1:0:1:4:2:1" in html
    plain = render(Results([TargetResult("hart", None, Stats(histories=3))], Settings()).as_json("x"))
    assert "Unconfirmed persistency races" not in plain
