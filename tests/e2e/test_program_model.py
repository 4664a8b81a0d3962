"""`crashcheck run --model pmreorder` (crashsim/simulate.py, flush_only): pmreorder's flush-only
view, where a store reaches PM only once a flush covers it. pmsections' seeded bug stores v and
ends its section before flushing it: at that crash point x86-ADR has two states (v evicted to PM
or not), pmreorder's view one (v lost); every other point is the same under both."""
from __future__ import annotations

import json

from test_program_engines import _main, built  # noqa: F401  (the fixture)


def test_flush_only_model(built, tmp_path):  # noqa: F811
    legal = {}
    for model in ("adr", "pmreorder"):
        out = tmp_path / f"{model}.json"
        res = _main("run", "--quiet", "--model", model, "--json", out, "--checker", f"{built['ok']} check {{image}}",
                    "-x", "setup=NoReorderNoCheck,pair=NoReorderDoCheck", "-r", "ReorderFull",
                    "--", built["bug"], "write", "pool")
        assert res.returncode == 1, res.stdout + res.stderr
        results = json.loads(out.read_text())
        assert results["model"] == model
        [bug] = results["bugs"]
        assert "put ended but v did not persist" in bug["detail"]
        legal[model] = (results["stats"]["crash_points"], results["stats"]["states_legal"])
        rep = _main("replay", out.with_suffix(".bugs") / f"{bug['id']}.json")
        assert rep.returncode == 1 and f"model {model}" in rep.stdout, rep.stdout + rep.stderr
    assert legal["pmreorder"] == (legal["adr"][0], legal["adr"][1] - 1)
