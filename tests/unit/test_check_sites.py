"""Check sites (issue 48): an invariant check names the rule it broke by its own file:line
(trees/common/cc_tree.h CC_VIOLATION, CC_VIOLATIONF, a counting helper's macro, C++'s
cc_violations), and a rule broken without any crash is one bug per operation and check site, not
per message text (harness/check/crash_free.py op_rule); a user's check that calls its callback
directly keeps the rule named by its text without numbers."""
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from crashcheck.harness.check.crash_free import crash_free_findings
from crashcheck.harness.check.findings import Finding
from crashcheck.harness.triage import bugs
from crashcheck.specs.oracle import address_free
from crashcheck.specs.ordered_map import parse_op
from crashcheck.specs.registry import get as model_get

ROOT = Path(__file__).resolve().parents[2]


def _run(tmp_path: Path, name: str, text: str, lang: str) -> list[str]:
    cc = shutil.which("clang-16" if lang == "c" else "clang++-16") or shutil.which("clang" if lang == "c" else "clang++")
    if cc is None:
        pytest.skip("no clang")
    src = tmp_path / name
    src.write_text(text)
    exe = tmp_path / (name + ".out")
    std = "-std=gnu11" if lang == "c" else "-std=c++17"
    subprocess.run([cc, std, "-Wall", "-Wextra", "-Werror", f"-I{ROOT / 'trees/common'}", str(src), "-o", str(exe)],
                   check=True)
    return subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.splitlines()


def test_printf_and_helper_checks_in_c_report_the_line_of_the_check(tmp_path):
    """CC_VIOLATIONF formats like printf; a check's own counting helper (as trees/wort's
    `violation`) passes its caller's site through cc_vviolation_at: each rule is its line."""
    out = _run(tmp_path, "check.c", '#include "cc_tree.h"\n'
               'static void cb(void *ctx, const char *t) { (void)ctx; puts(t); }\n'
               'struct st { size_t n; };\n'
               '__attribute__((format(printf, 4, 5)))\n'
               'static void say_at(struct st *s, const char *file, int line, const char *fmt, ...)\n'
               '{ va_list ap; va_start(ap, fmt); cc_vviolation_at(cb, 0, file, line, fmt, ap); va_end(ap); s->n++; }\n'
               '#define say(s, ...) say_at((s), __FILE__, __LINE__, __VA_ARGS__)\n'
               'int main(void) {\n'
               '\tstruct st s = {0};\n'
               '\tCC_VIOLATIONF(cb, 0, "node %d has %d children", 12, 1);\n'
               '\tsay(&s, "leaf %p on the wrong path", (void *)&s);\n'
               '\tsay(&s, "leaf %p on the wrong path", (void *)&s);\n'
               '\treturn s.n != 2;\n}\n', "c")
    assert out[0].startswith("node 12 has 1 children [check at ")
    assert [address_free(x) for x in out] == ["check at check.c:10", "check at check.c:11", "check at check.c:12"]


def test_a_cpp_structure_calling_any_callable_names_its_own_line(tmp_path):
    """A C++ structure's check that takes any callable (examples/bucketmap, cowmap) is handed
    cc_violations{fn, ctx}: each report names the structure's line that made it, not the
    adapter's, with no change to the structure."""
    out = _run(tmp_path, "map.cpp", '#include "cc_tree.h"\n'
               'static void cb(void *, const char *t) { puts(t); }\n'
               'template <class Bad> static int check(Bad bad) {\n'
               '\tbad("a node in the wrong bucket");\n'
               '\tbad("a bucket out of order");\n'
               '\treturn 2;\n}\n'
               'int main() { return check(cc_violations{cb, nullptr}) != 2; }\n', "c++")
    assert [address_free(x) for x in out] == ["check at map.cpp:4", "check at map.cpp:5"]


def _no_crash(ops: list[str], lines: list[str]) -> Finding:
    [f] = crash_free_findings(model_get("ordered_map"), [parse_op(o) for o in ops], lines)
    return f


def test_rules_broken_without_crash_are_one_bug_per_operation_and_check_site():
    """One check (wort_recover.c:235) broken after an insert in two runs, with other words and
    numbers, is one bug; the same check broken after a delete is another (another operation's
    mistake); a crash state that breaks it joins the first run only, so it never makes the two
    runs one."""
    site = " [check at /src/trees/wort/wort_recover.c:235]"
    ins1 = _no_crash(["insert 1 10"], ["ok", "!invariant 0 node 0x6000001000 has 1 child" + site])
    ins2 = _no_crash(["insert 7 10", "insert 9 10"],
                     ["ok", "ok", "!invariant 1 node 0x6000002000 has 3 children, a cycle" + site])
    dele = _no_crash(["insert 1 10", "delete 1"], ["ok", "ok", "!invariant 1 node 0x6000001000 has 1 child" + site])
    assert ins1.group == ins2.group == ("no-crash-invariant", "insert: check at wort_recover.c:235")
    assert dele.group == ("no-crash-invariant", "delete: check at wort_recover.c:235")
    after_crash = Finding("invariant-violation", "d", ("invariant-violation", "rule: check at wort_recover.c:235"),
                          point=SimpleNamespace(lost=lambda choice: [], op=None, kind="fence"))
    out = bugs.merge([ins1, dele, ins2, after_crash], lambda f: f, lambda f: None)
    assert sorted(sorted(id(f) for f in m) for m in out) == sorted([sorted([id(ins1), id(ins2), id(after_crash)]),
                                                                    [id(dele)]])


def test_a_check_without_a_site_keeps_its_rule_named_by_its_text():
    """An adapter that calls its callback directly: the rule is its text without numbers, still
    per operation."""
    f = _no_crash(["insert 1 10"], ["ok", "!invariant 0 leaf 7 on the wrong path"])
    assert f.group == ("no-crash-invariant", "insert: leaf ? on the wrong path")
