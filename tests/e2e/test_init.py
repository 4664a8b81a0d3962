"""`crashcheck init NAME --lang c|c++` (issue 34): writes an adapter skeleton that builds as it is,
whose fuzz fails with "fill in ..." rather than passing, says what to run next, and never
overwrites a file (one line, exit 2)."""
import subprocess
import sys
from pathlib import Path

import pytest


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "crashcheck.harness.cli.main", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def _init_build_fuzz(tmp_path: Path, lang: str, file: str) -> None:
    name = f"skel-{lang.replace('+', 'x')}"
    res = _cli("init", name, "--lang", lang, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / file).is_file()
    assert f"crashcheck build {name} " in res.stdout and f"--adapter {file}" in res.stdout
    assert f"crashcheck fuzz {name}" in res.stdout
    res = _cli("build", name, "--adapter", file, "--pm-malloc", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    res = _cli("fuzz", name, "--examples", "2", "--seed", "1", "--shrink", "0", cwd=tmp_path)
    assert res.returncode == 1, res.stdout + res.stderr
    assert f"{name} adapter: fill in a_insert in {file}" in res.stdout, res.stdout


@pytest.mark.slow        # a build (~8 s of CPU) over the default suite's budget; the tests below cover the command
def test_a_c_skeleton_builds_and_its_fuzz_asks_to_be_filled_in(instrument_built, tmp_path):
    _init_build_fuzz(tmp_path, "c", "adapter.c")


@pytest.mark.slow        # a C++ build (~10 s of CPU); the tests below cover the command in the default suite
def test_a_cxx_skeleton_builds_and_its_fuzz_asks_to_be_filled_in(instrument_built, tmp_path):
    _init_build_fuzz(tmp_path, "c++", "adapter.cpp")


def test_init_never_overwrites_and_refuses_bad_input_in_one_line(tmp_path):
    (tmp_path / "adapter.c").write_text("mine\n")
    res = _cli("init", "mine", "--lang", "c", cwd=tmp_path)
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "already exists" in res.stderr
    assert (tmp_path / "adapter.c").read_text() == "mine\n"


def test_init_writes_with_out_and_refuses_a_builtin_name(tmp_path):
    """(The command itself, in this process: what the CLI turns into one line and exit 2.)"""
    from argparse import Namespace
    from crashcheck.harness.cli import cmd_init
    from crashcheck.harness.core.errors import UsageError
    assert cmd_init.run(Namespace(name="mine", lang="c++", out=str(tmp_path / "sub"))) == 0
    assert '.name = "mine"' in (tmp_path / "sub" / "adapter.cpp").read_text()
    for name, words in (("wort", "built-in"), ("bad name", "structure name"), ("mine", "already exists")):
        with pytest.raises(UsageError, match=words):
            cmd_init.run(Namespace(name=name, lang="c++", out=str(tmp_path / "sub")))
