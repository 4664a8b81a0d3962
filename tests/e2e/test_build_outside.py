"""`crashcheck build` from a folder outside the checkout (issue 34): the build goes to
./crashcheck-builds/NAME of that folder, with the pass, runtime and runner taken from the
installation; nothing is written into the checkout; fuzz and list find the build from that folder,
and from anywhere through $CRASHCHECK_BUILDS. An empty CRASHCHECK_BUILD= means "not set"."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "hdrmap"


def _cli(*args, cwd, **env):
    return subprocess.run([sys.executable, "-m", "crashcheck.harness.cli.main", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, env={**os.environ, **env}, timeout=600)


def _status() -> str:
    return subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout


def test_a_build_outside_the_checkout_leaves_it_untouched_and_fuzzes(instrument_built, tmp_path):
    name = f"outside-{os.getpid()}"
    here = tmp_path / "work"
    here.mkdir()
    before = _status()
    res = _cli("build", name, FIXTURE / "hdrmap.hpp", "--adapter", FIXTURE / "adapter.cpp", "--pm-malloc",
               cwd=here)
    assert res.returncode == 0, res.stderr
    built = here / "crashcheck-builds" / name
    assert (built / "driver").is_file() and (built / "meta.json").is_file()
    assert not (ROOT / "build" / "user" / name).exists() and not (ROOT / "crashcheck-builds" / name).exists()
    assert _status() == before
    # found from its folder...
    res = _cli("fuzz", name, "--examples", "3", "--seed", "1", "--quiet", "--json", tmp_path / "r.json",
               cwd=here)
    assert res.returncode == 0, res.stdout + res.stderr
    assert json.loads((tmp_path / "r.json").read_text())["stats"]["histories"] >= 3
    assert name in _cli("list", cwd=here).stdout
    # ...and from anywhere else only through CRASHCHECK_BUILDS
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert _cli("list", cwd=elsewhere).stdout.count(name) == 0
    assert name in _cli("list", cwd=elsewhere, CRASHCHECK_BUILDS=str(here / "crashcheck-builds")).stdout
    assert _status() == before


def test_an_empty_crashcheck_build_is_unset(instrument_built, tmp_path):
    """(It used to name the current folder: "driver not built" for every built-in structure.)"""
    res = _cli("fuzz", "wort", "--examples", "2", "--seed", "1", "--quiet", "--json", tmp_path / "r.json",
               cwd=tmp_path, CRASHCHECK_BUILD="")
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.slow        # a second build of the fixture (~20 s); the default suite's CPU budget is tight
def test_the_adapters_persistency_model_is_fuzzs_default(instrument_built, tmp_path):
    """An adapter with `.persistency = "eadr"` is fuzzed under eADR unless --model says otherwise."""
    name = f"eadr-{os.getpid()}"
    res = _cli("build", name, FIXTURE / "hdrmap.hpp", "--adapter", FIXTURE / "adapter.cpp", "--pm-malloc",
               "--cflags", "-DHDRMAP_EADR", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    for extra, model in (((), "eadr"), (("--model", "adr"), "adr")):
        out = tmp_path / f"r-{model}.json"
        res = _cli("fuzz", name, "--examples", "3", "--seed", "1", "--quiet", "--json", out, *extra, cwd=tmp_path)
        assert res.returncode == 0, res.stdout + res.stderr
        assert json.loads(out.read_text())["model"] == model
