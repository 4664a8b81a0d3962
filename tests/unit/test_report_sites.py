"""How the report and the records name a site inside someone else's code (issue 34): a store the
pass named past libstdc++'s frames shows the structure's line with the library chain under it, and
a site in a header `crashcheck build` was given as the structure's is named by its own line, not
by its caller's as a helper header's is."""
from crashcheck.crashsim.trace import Site
from crashcheck.harness.render.report import _source, site_text

ATOMIC = "/usr/include/c++/12/bits/atomic_base.h:481 in store"


def _bug(*places):
    return {"sources": {f"{f}:{n}": {"line": n, "lines": [[n - 1, "before"], [n, text], [n + 1, "after"]]}
                        for f, n, text in places}}


def test_a_std_atomic_store_shows_the_structures_line_and_the_library_chain():
    site = Site(0, "ex/tree.hpp", 42, 3, "publish", "ex/adapter.cpp", 9, 1, "a_insert",
                chain=(ATOMIC,), own=True).as_dict()
    assert site["via"] == [ATOMIC] and site["own"] is True
    html = str(_source(_bug(("ex/tree.hpp", 42, "root_.store(n);"), ("ex/adapter.cpp", 9, "t->insert(k);")),
                       site))
    assert '<span class="hit">   42  root_.store(n);</span>' in html
    assert "via " + ATOMIC.replace("<", "&lt;") in html
    assert site_text(site).endswith(f" via {ATOMIC}")


def test_a_header_of_the_structure_is_named_by_its_own_line_a_helper_header_by_its_callers():
    bug = _bug(("ex/tree.hpp", 42, "n->next = m;"), ("ex/adapter.cpp", 9, "t->insert(k);"))
    own = Site(0, "ex/tree.hpp", 42, 3, "insert", "ex/adapter.cpp", 9, 1, "a_insert", own=True).as_dict()
    helper = Site(0, "ex/tree.hpp", 42, 3, "insert", "ex/adapter.cpp", 9, 1, "a_insert").as_dict()
    assert '<span class="hit">   42  n-&gt;next = m;</span>' in str(_source(bug, own))
    assert '<span class="hit">    9  t-&gt;insert(k);</span>' in str(_source(bug, helper))
