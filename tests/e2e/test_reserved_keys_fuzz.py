"""A structure that cannot store a key declares it (expect.json "reserved_keys") and no longer gets
a wrong-value bug from it: examples/slotkv marks an empty slot with key 0, so `insert 0 V`
answers `exists`; fuzzed without the declaration that is a bug, with it the histories never use
key 0 (specs/map_histories.py respect) and the table passes."""
import json
import shutil
from pathlib import Path

import pytest
from cli_run import ROOT, run_cli

EXAMPLE = ROOT / "examples" / "slotkv"
# a build and two runs: about 20 s of CPU, 40 s on a loaded machine
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def folder(instrument_built, tmp_path_factory):
    """A copy of the example (its expect.json is the one fuzz reads), built as slotkv-reserved."""
    out = tmp_path_factory.mktemp("slotkv")
    for name in ("slotkv.c", "slotkv.h", "adapter.c"):
        shutil.copy(EXAMPLE / name, out / name)
    res = run_cli("build", "slotkv-reserved", out / "slotkv.c", "--adapter", out / "adapter.c")
    assert res.returncode == 0, res.stderr
    return out


def _fuzz(folder: Path, expect: dict) -> list[dict]:
    (folder / "expect.json").write_text(json.dumps(expect))
    out = folder / "r.json"
    res = run_cli("fuzz", "slotkv-reserved", "--examples", "24", "--seed", "1", "--keys", "dense",
                  "--shrink", "4", "--quiet", "--json", out)
    assert res.returncode in (0, 1), res.stderr
    return [b for b in json.loads(out.read_text())["bugs"] if not b["expected"]]


def test_a_reserved_key_is_never_drawn(folder):
    before = _fuzz(folder, {})
    assert before and all(b["class"] == "wrong-value" for b in before), before
    assert any(" 0 " in " " + line + " " for b in before for line in b["history"])
    assert _fuzz(folder, json.loads((EXAMPLE / "expect.json").read_text())) == []
