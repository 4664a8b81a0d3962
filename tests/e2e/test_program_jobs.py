"""`crashcheck run --jobs N` (harness/run/program_run.py in_workers, program_explore._walk): the
crash points judged by N worker processes give the findings of one process: examples/pmlog's
seeded bug, and pmsections' marker-revealed bug under engines, come out the same with --jobs 2
as with --jobs 1 (ids, crash states, lost stores, occurrences, counts)."""
from __future__ import annotations

import json

import pytest

from crashcheck.harness.run import program_run

from test_program_engines import _main, built  # noqa: F401  (the fixture)
from test_program_mode import pmlog  # noqa: F401  (the fixture)


def _same_parts(results: dict) -> tuple:
    st = results["stats"]
    return ([(b["id"], b["class"], b["crash"]["index"], b["crash"]["choice"], b["occurrences"],
              [lost["seq"] for lost in b["lost"]]) for b in results["bugs"]],
            st["crash_points"], st["states_explored"], st["states_legal"], st["points_sampled"])


def _results(tmp, *args) -> dict:
    tmp.mkdir(parents=True, exist_ok=True)
    res = _main("run", "--quiet", "--json", tmp / "out.json", *args)
    assert res.returncode == 1, res.stdout + res.stderr
    return json.loads((tmp / "out.json").read_text())


@pytest.mark.parametrize("which", ["pmlog", "pmsections"])
def test_jobs_same_findings(which, pmlog, built, tmp_path, monkeypatch):  # noqa: F811
    shares = []
    real = program_run.in_workers

    def counted(*args):
        got = real(*args)
        shares.append(len(got.picks))
        return got
    monkeypatch.setattr(program_run, "in_workers", counted)
    if which == "pmlog":
        args = ["--checker", f"{pmlog['pmlog']} check {{image}}", "--seed", "3", "--limit", "4",
                "--", pmlog["pmlog-bug"], "append", "pool", "3"]
    else:
        args = ["--checker", f"{built['ok']} check {{image}}", "-x", "setup=NoReorderNoCheck", "-r", "ReorderFull",
                "--", built["bug"], "write", "pool"]
    one = _results(tmp_path / "one", "--jobs", "1", *args)
    two = _results(tmp_path / "two", "--jobs", "2", *args)
    assert two["program"]["jobs"] == 2 and one["bugs"]
    # the workers picked every checked crash point's states (the parent only shrank)
    assert shares == [two["stats"]["crash_points"]]
    assert _same_parts(one) == _same_parts(two)
