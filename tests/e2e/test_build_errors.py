"""`crashcheck build` errors that help: the compiler's whole output on a failed build, `--cflags`
with a single flag (as its help says), a source of unknown language refused with one line, a failed
link's one line naming what is missing (no `cc_adapter`, an `inline`-only function)."""
from pathlib import Path

import pytest

from cli_run import run_cli

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "buildcheck"


def test_failed_build_shows_every_diagnostic_then_one_error_line(instrument_built):
    res = run_cli("build", "buildcheck-broken", "--adapter", FIXTURE / "broken.c")
    assert res.returncode == 2
    assert "Traceback" not in res.stderr
    # both errors of the file, not only the first, and the compiler's own source excerpts
    assert "undeclared_one" in res.stderr and "undeclared_two" in res.stderr
    assert "2 errors generated" in res.stderr
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("crashcheck: error: compiling broken.c failed (exit 1): ")
    assert "undeclared_one" in last and last.endswith("(the compiler's messages are above)")
    assert not (ROOT / "build" / "user" / "buildcheck-broken" / "meta.json").exists()


def test_cflags_takes_a_single_flag(instrument_built):
    without = run_cli("build", "buildcheck-flag", "--adapter", FIXTURE / "needs_flag.c")
    assert without.returncode == 2 and "build me with --cflags -DBUILDCHECK_FLAG" in without.stderr
    res = run_cli("build", "buildcheck-flag", "--adapter", FIXTURE / "needs_flag.c", "--cflags", "-DBUILDCHECK_FLAG")
    assert res.returncode == 0, res.stderr
    assert "built buildcheck-flag" in res.stdout
    # several flags in one quoted argument, and --cflags repeated: every flag reaches the compiler
    # (the second #error of the fixture stops the build at its first step)
    for args in (["--cflags", "-DBUILDCHECK_FLAG -DBUILDCHECK_STOP"],
                 ["--cflags", "-DBUILDCHECK_FLAG", "--cflags=-DBUILDCHECK_STOP"]):
        res = run_cli("build", "buildcheck-flag2", "--adapter", FIXTURE / "needs_flag.c", *args)
        assert res.returncode == 2 and "BUILDCHECK_STOP reached the compiler too" in res.stderr, args


def test_source_of_unknown_language_is_one_line(instrument_built, tmp_path):
    src = tmp_path / "tree.rs"
    src.write_text("fn main() {}\n")
    res = run_cli("build", "buildcheck-rs", src, "--adapter", FIXTURE / "broken.c")
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        f"crashcheck: error: {src}: not a C or C++ file (suffixes .c .cc .cpp .cxx .c++ .C .h .hh .hpp .hxx "
        ".h++ .H .inl .ipp .tcc)"]


def _link_failure(res, name: str) -> str:
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert "undefined reference" in res.stderr       # the linker's own words stay above
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("crashcheck: error: linking driver failed: ") and "clang" not in last, last
    assert not (ROOT / "build" / "user" / name / "meta.json").exists()
    return last


@pytest.mark.parametrize("ldflags", [[], ["--ldflags", "-fuse-ld=gold"]], ids=["ld", "gold"])
def test_adapter_without_its_table_is_named(instrument_built, ldflags):
    """Found in the objects before the link (issue 49.14): one line whatever the linker (gold words
    its undefined reference otherwise, and gave the raw linker error)."""
    res = run_cli("build", "buildcheck-notable", "--adapter", FIXTURE / "no_table.c", *ldflags)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert res.stderr.strip().splitlines() == [
        "crashcheck: error: linking driver failed: the adapter no_table.c defines no `cc_adapter`: every "
        "adapter defines the table `const struct cc_adapter cc_adapter = { .name = ..., ... };` "
        "(trees/common/cc_tree.h); in C++ include cc_tree.h first, for its C linkage"], res.stderr
    assert not (ROOT / "build" / "user" / "buildcheck-notable" / "meta.json").exists()


def test_inline_only_function_of_another_file_is_named(instrument_built):
    res = run_cli("build", "buildcheck-inline", FIXTURE / "twice.c", "--adapter", FIXTURE / "calls_twice.c")
    last = _link_failure(res, "buildcheck-inline")
    assert "undefined reference to `twice` (called from ct_insert (calls_twice.c:" in last
    assert "twice.c defines it `inline` only" in last and "extern" in last


def test_missing_library_is_named(instrument_built):
    res = run_cli("build", "buildcheck-nolib", "--adapter", FIXTURE.parent / "insertonly" / "adapter.c",
                  "--ldflags", "-lnosuchlib_cc")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    last = res.stderr.strip().splitlines()[-1]
    assert "the linker cannot find the library nosuchlib_cc (`-lnosuchlib_cc` in --ldflags)" in last, last


def test_cxx_inline_destructor_of_another_file_is_named(instrument_built):
    """C++: a destructor shape.cpp defines `inline` is emitted only where shape.cpp uses it; the
    adapter's `delete` finds none. The line names it demangled, the caller, and where it belongs."""
    res = run_cli("build", "buildcheck-cxxinline", FIXTURE / "shape.cpp", "--adapter", FIXTURE / "uses_shape.cpp")
    last = _link_failure(res, "buildcheck-cxxinline")
    assert "undefined reference to `buildcheck::Shape::~Shape()`" in last, last
    assert "us_insert" in last
    assert "shape.cpp defines it `inline`" in last and "move the definition into shape.hpp" in last, last


@pytest.mark.slow        # another failing C++ link; the inline case above covers the C++ path by default
def test_cxx_member_defined_nowhere_is_named(instrument_built):
    res = run_cli("build", "buildcheck-cxxmissing", "--adapter", FIXTURE / "uses_shape.cpp")
    last = _link_failure(res, "buildcheck-cxxmissing")
    assert "undefined reference to `buildcheck::Shape::" in last, last
    assert "no source given defines it; it must be defined in one of the sources given" in last, last


def test_library_of_the_system_is_named_with_its_flag(instrument_built):
    """exp2 is the C math library's: the line says `--ldflags -lm`, not `-l<library>` (issue 49.13)."""
    res = run_cli("build", "buildcheck-libm", "--adapter", FIXTURE / "needs_libm.c")
    last = _link_failure(res, "buildcheck-libm")
    assert "undefined reference to `exp2` (called from needs_libm_scale (needs_libm.c:" in last, last
    assert "the C math library" in last and "add --ldflags -lm" in last and "<library>" not in last, last
