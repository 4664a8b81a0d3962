"""Bug records of earlier releases keep replaying: tests/fixtures/old_records (README.md there
says which release wrote each). A record made while the load phase was still traced numbers its
crash points in a trace that holds the load; replay traces the load again for it (its missing
`load_traced` field reads as true), where it would name a crash point the trace lacks."""
from pathlib import Path

from cli_run import run_cli

OLD = Path(__file__).resolve().parents[1] / "fixtures" / "old_records"


def test_record_with_traced_load_replays(instrument_built):
    res = run_cli("replay", OLD / "wort-load-traced.json")
    assert res.returncode == 1, res.stdout + res.stderr
    assert "reproduced: lost-durable-write: key 2 (value 2) is missing" in res.stdout
    assert "wort.c:81" in res.stdout
