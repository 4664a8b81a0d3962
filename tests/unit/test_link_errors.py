"""harness/target/link_errors.py on linker output as GNU ld writes it: an operator new or delete
defined twice is named with what to delete (an operator cannot be renamed, and crashcheck's own
forms are weak, so both definitions are the user's), and a math function with -lm (issue 49)."""
from pathlib import Path

from crashcheck.harness.target.link_errors import reason

ADAPTER = Path("/src/adapter.cpp")


def test_operator_defined_twice_says_keep_one():
    out = ("/usr/bin/ld: /b/x-1-tree.o: in function `operator delete(void*)':\n"
           "tree.cpp:(.text+0x0): multiple definition of `operator delete(void*)'; "
           "/b/x-2-adapter.o:adapter.cpp:(.text+0x0): first defined here\n")
    line = reason(out, [Path("/src/tree.cpp"), ADAPTER], ADAPTER)
    assert line.startswith("`operator delete(void*)` is defined twice in the structure's sources and adapter")
    assert "keep one definition and delete the other" in line and "rename" not in line


def test_other_names_defined_twice_still_say_rename():
    out = "/usr/bin/ld: a.o: multiple definition of `pm_root'; b.o: first defined here\n"
    assert "rename it" in reason(out, [ADAPTER], ADAPTER)


def test_math_function_names_lm():
    out = ("/usr/bin/ld: /b/x.o: in function `scale':\n"
           "/src/tree.c:10: undefined reference to `exp2'\n")
    line = reason(out, [Path("/src/tree.c"), ADAPTER], ADAPTER)
    assert "undefined reference to `exp2` (called from scale (tree.c:10))" in line
    assert line.endswith("add --ldflags -lm")
