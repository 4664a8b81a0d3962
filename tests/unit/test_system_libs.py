"""harness/target/system_libs.py: a symbol of the system's usual libraries is named with the flag
that links it, read from the installed libraries themselves (issue 49.13)."""
from crashcheck.harness.target.system_libs import library_of


def test_math_functions_are_libm():
    for name in ("exp2", "pow", "sqrt", "log", "floor", "fmod", "lround"):
        assert library_of(name) == ("the C math library", "-lm"), name


def test_pmem_functions_name_their_library():
    # setup installs libpmem-dev and libpmemobj-dev (scripts/setup)
    assert library_of("pmem_persist") == ("libpmem", "-lpmem")
    assert library_of("pmemobj_create") == ("libpmemobj", "-lpmemobj")


def test_other_symbols_are_nobody_s():
    for name in ("malloc", "no_such_function_cc", "cc_adapter", ""):
        assert library_of(name) is None, name
