"""crashcheck installs like any tool (issue 38 "Done when"): `pip install <the repository>` into a
fresh virtual environment outside the checkout builds the native parts for the LLVM asked for
(CRASHCHECK_LLVM) into the installed package, and from a folder outside the checkout
`crashcheck fuzz wort`, `crashcheck build` of a copy of examples/pmhash and its fuzz work, with
nothing read from or written into the checkout; the bare names harness, crashsim and specs are
not importable there.

Slow (a pip install with the pass and one tree's drivers: a minute or two per LLVM on two cores)
and needs the package registry for the build backend. CRASHCHECK_TREES=wort keeps the build to
the one built-in structure the check fuzzes (the other trees build the same way)."""
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PMHASH = ROOT / "examples" / "pmhash"

pytestmark = pytest.mark.slow


def _env(venv: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "CRASHCHECK_BUILD", "CRASHCHECK_BUILDS",
                        "CRASHCHECK_CLANG", "CRASHCHECK_CLANGXX", "CRASHCHECK_LLVM")}
    # the venv first, and no checkout's .venv on PATH
    path = [p for p in env.get("PATH", "/usr/bin:/bin").split(os.pathsep) if ".venv" not in p]
    env["PATH"] = os.pathsep.join([str(venv / "bin"), *path])
    env.update(extra)
    return env


def _status() -> str:
    return subprocess.run(["git", "status", "--porcelain", "--ignored=no"], cwd=ROOT, capture_output=True,
                          text=True, check=True).stdout


def _run(argv, cwd: Path, env: dict, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.parametrize("llvm", ["16", "19"])
def test_pip_install_outside_the_checkout(llvm, tmp_path):
    if shutil.which(f"llvm-config-{llvm}") is None or shutil.which(f"clang-{llvm}") is None:
        pytest.skip(f"LLVM {llvm} is not installed (apt install clang-{llvm} llvm-{llvm}-dev)")
    venv, work = tmp_path / "venv", tmp_path / "work"
    work.mkdir()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = _env(venv)
    # today's pip: its build environment differs from the bundled one's (a python3 on PATH that
    # could not read the trees' bugs.json, so no seeded-bug driver was built)
    res = _run([venv / "bin" / "pip", "install", "-q", "--upgrade", "pip"], cwd=work, env=env)
    assert res.returncode == 0, res.stderr
    before = _status()

    start = time.monotonic()
    res = _run([venv / "bin" / "pip", "install", "-q", ROOT], cwd=work,
               env=_env(venv, CRASHCHECK_LLVM=llvm, CRASHCHECK_TREES="wort", CMAKE_BUILD_PARALLEL_LEVEL="2"),
               timeout=1800)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    print(f"pip install (LLVM {llvm}, wort only): {time.monotonic() - start:.0f} s")

    # the package and its native parts are the installed ones, built for the LLVM asked for
    py = venv / "bin" / "python"
    where = _run([py, "-c", "import crashcheck.harness.target.structures as s; print(s.ROOT); print(s.BUILD)"],
                 cwd=work, env=env)
    assert where.returncode == 0, where.stderr
    root, build = map(Path, where.stdout.split())
    assert root.is_relative_to(venv) and not root.is_relative_to(ROOT), root
    toolchain = (build / "toolchain.env").read_text()
    assert f"LLVM_MAJOR={llvm}\n" in toolchain, toolchain
    assert (build / "libcrashcheck_pass.so").is_file() and (build / "trees" / "wort" / "driver").is_file()
    assert (build / "trees" / "wort" / "driver-bug-no-flush-link").is_file()     # the seeded bugs too
    assert os.access(build / "bin" / "crashcheck-shield", os.X_OK)   # every supervised run's parent
    version = _run(["crashcheck-cc", "--version"], cwd=work, env=env)
    assert version.returncode == 0 and f"clang version {llvm}." in version.stdout, version.stdout + version.stderr

    # doctor finds the installed parts (and, were one missing, would say to reinstall, not to run
    # a checkout's scripts/setup)
    doctor = _run(["crashcheck", "doctor"], cwd=work, env=env)
    assert doctor.returncode == 0 and str(build / "libcrashcheck_pass.so") in doctor.stdout, doctor.stdout

    # no top-level leak
    for name in ("harness", "crashsim", "specs"):
        leak = _run([py, "-c", f"import {name}"], cwd=work, env=env)
        assert leak.returncode != 0 and "ModuleNotFoundError" in leak.stderr, (name, leak.stderr)

    # a built-in structure
    res = _run(["crashcheck", "fuzz", "wort", "--examples", "4", "--seed", "1", "--quiet",
                "--json", work / "wort.json"], cwd=work, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert json.loads((work / "wort.json").read_text())["stats"]["histories"] >= 4
    # its records (wort's expected leaks) show the source lines, named as in a checkout
    # (trees/wort/wort.c), not by the folder pip built from
    records = [json.loads(p.read_text()) for p in (work / "wort.bugs").glob("*.json")]
    assert records and all(r["sources"] for r in records)
    for r in records:
        for where in r["sources"].values():
            assert not where["file"].startswith("/") and where["lines"], where
        assert str(ROOT) not in json.dumps(r)

    # a user's structure, copied out of the checkout
    shutil.copytree(PMHASH, work / "pmhash")
    res = _run(["crashcheck", "build", "pmhash", "pmhash/pmhash.c", "pmhash/pmhash.h",
                "--adapter", "pmhash/adapter.c"], cwd=work, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert (work / "crashcheck-builds" / "pmhash" / "driver").is_file()
    res = _run(["crashcheck", "fuzz", "pmhash", "--examples", "4", "--seed", "1", "--quiet",
                "--json", work / "pmhash.json"], cwd=work, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert json.loads((work / "pmhash.json").read_text())["stats"]["histories"] >= 4

    # the checkout was neither written nor needed
    assert _status() == before
