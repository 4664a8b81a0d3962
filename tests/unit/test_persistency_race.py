"""Persistency races in a hand-written threaded trace (harness/check/persistency_race.py): the exact
pairs found (a load of another thread's store not yet durable, then the loading operation's return
or a durable store of its own while the store is still pending), and the cases that must not count."""
from __future__ import annotations

from crashcheck.crashsim.persistency import ModelOptions
from crashcheck.crashsim.simulate import Simulator
from crashcheck.crashsim.trace import read_trace
from crashcheck.crashsim.trace_writer import TraceWriter
from crashcheck.harness.check.persistency_race import find_pairs, losing_choice

X, Y, Z = 0x100, 0x200, 0x300       # three words on three lines


def _trace(tmp_path, build):
    w = TraceWriter(pool_size=1 << 12)
    sites = {name: w.site(f"{name}.c", 10 + i, name) for i, name in enumerate(
        ("publish", "read", "own", "later", "other_read"))}
    build(w, sites)
    return read_trace(w.write(tmp_path / "t.trace")), sites


def _pairs(trace, model="adr"):
    return [(p.store_site, p.store_tid, p.load_site, p.load_tid, p.action) for p in
            find_pairs(trace, ModelOptions(model=model))]


def test_a_load_of_a_pending_store_then_a_return_is_a_pair(tmp_path):
    def build(w, s):
        w.op_begin(1, tid=1)
        w.store(X, b"\x07" * 8, tid=1, site=s["publish"])          # not durable yet
        w.op_begin(2, tid=2)
        w.load(X, 8, tid=2, site=s["read"])
        w.op_end(2, tid=2)                                         # returns what it read
        w.persist(X, 8, tid=1)                                     # durable only now
        w.op_end(1, tid=1)
    trace, s = _trace(tmp_path, build)
    assert _pairs(trace) == [(s["publish"], 1, s["read"], 2, "return")]
    [pair] = find_pairs(trace)
    # the earliest crash point after the return where the store is still pending: before the fence
    cp = next(c for c in Simulator.from_trace(trace).crash_points() if c.index == pair.point)
    assert cp.kind == "fence" and cp.event > pair.action_event
    choice = losing_choice(cp, pair.store_event)
    assert [p.seq for p in cp.lost(choice)] == [pair.store_event]


def test_a_durable_store_of_the_loading_operation_is_a_pair(tmp_path):
    def build(w, s):
        w.op_begin(1, tid=1)
        w.store(X, b"\x07" * 8, tid=1, site=s["publish"])
        w.op_begin(2, tid=2)
        w.load(X, 8, tid=2, site=s["read"])
        w.store(Y, b"\x01" * 8, tid=2, site=s["own"])              # depends on what it read
        w.persist(Y, 8, tid=2)                                     # durable while X is pending
        w.store(Z, b"\x02" * 8, tid=2, site=s["later"])
        w.fence(tid=2)
        w.op_end(2, tid=2)
        w.persist(X, 8, tid=1)
        w.op_end(1, tid=1)
    trace, s = _trace(tmp_path, build)
    [pair] = find_pairs(trace)
    assert (pair.store_site, pair.load_site, pair.action) == (s["publish"], s["read"], "durable store")
    assert trace.events[pair.action_event].site == s["own"]


def test_what_must_not_count(tmp_path):
    def build(w, s):
        w.op_begin(1, tid=1)
        w.store(X, b"\x07" * 8, tid=1, site=s["publish"])
        w.load(X, 8, tid=1, site=s["own"])                         # its own pending store
        w.store(Y, b"\x08" * 8, tid=1, site=s["later"])
        w.persist(Y, 8, tid=1)
        w.op_begin(2, tid=2)
        w.load(Y, 8, tid=2, site=s["read"])                        # another thread's, but durable
        w.load(X, 8, tid=2, site=s["other_read"])                  # pending at the load...
        w.persist(X, 8, tid=1)                                     # ...durable before thread 2 acts
        w.op_end(2, tid=2)
        w.op_end(1, tid=1)
    trace, _ = _trace(tmp_path, build)
    assert _pairs(trace) == []


def test_one_pair_per_pair_of_sites_and_none_under_eadr(tmp_path):
    def build(w, s):
        for k in range(2):
            w.op_begin(2 * k + 1, tid=1)
            w.store(X, bytes([k + 1]) * 8, tid=1, site=s["publish"])
            w.op_begin(2 * k + 2, tid=2)
            w.load(X, 8, tid=2, site=s["read"])
            w.op_end(2 * k + 2, tid=2)
            w.persist(X, 8, tid=1)
            w.op_end(2 * k + 1, tid=1)
    trace, s = _trace(tmp_path, build)
    assert _pairs(trace) == [(s["publish"], 1, s["read"], 2, "return")]
    # under eADR a store another thread can read has left its store buffer: it is durable
    assert _pairs(trace, "eadr") == []


def test_a_load_of_a_word_overwritten_by_its_own_thread_is_not_a_pair(tmp_path):
    """The latest store of the word is what counts: thread 2 overwrote thread 1's pending store."""
    def build(w, s):
        w.op_begin(1, tid=1)
        w.store(X, b"\x07" * 8, tid=1, site=s["publish"])
        w.op_begin(2, tid=2)
        w.store(X, b"\x09" * 8, tid=2, site=s["own"])
        w.load(X, 8, tid=2, site=s["read"])
        w.op_end(2, tid=2)
        w.persist(X, 8, tid=1)
        w.op_end(1, tid=1)
    trace, _ = _trace(tmp_path, build)
    assert _pairs(trace) == []


def test_a_confirmed_race_names_the_bug_it_merges_with():
    """A persistency race and the lost write its crash shows are one bug (they share the lost
    store); the race names it, since it also says which load of which thread made it."""
    from crashcheck.harness.check.ranking import rank, tier
    assert tier("persistency-race") < tier("lost-durable-write") == tier("invariant-violation")
    assert rank("persistency-race") < rank("invariant-violation")


def test_a_thread_safe_adapter_is_built_with_loads(tmp_path):
    """`crashcheck build` compiles the traced code of an adapter that sets `.threads` with loads
    (as trees/build.mk does for the built-in trees), and only that one."""
    from crashcheck.harness.target.build_compile import declares_threads
    for text, want in (("\t.threads = 1,      /* safe */\n", True), ("\t.threads = 0,\n", False),
                       ("/* .threads = 1 would say so */\n", False), ("\t.name = \"x\",\n", False)):
        (tmp_path / "a.c").write_text("const struct cc_adapter cc_adapter = {\n" + text + "};\n")
        assert declares_threads(tmp_path / "a.c") is want, text


def test_a_store_never_made_durable_is_no_race(tmp_path):
    """A store still pending when the trace ends is a lost-durable-write whoever reads it (the
    crash states show it), not a persistency race (issue 53)."""
    def build(w, s):
        w.op_begin(1, tid=1)
        w.store(X, b"\x07" * 8, tid=1, site=s["publish"])          # never flushed
        w.op_begin(2, tid=2)
        w.load(X, 8, tid=2, site=s["read"])
        w.op_end(2, tid=2)
        w.op_end(1, tid=1)
        w.store(Y, b"\x01" * 8, tid=2, site=s["later"])
        w.persist(Y, 8, tid=2)
    trace, _ = _trace(tmp_path, build)
    assert _pairs(trace) == []


def test_sites_are_named_by_their_own_line_then_where_they_were_inlined(tmp_path):
    """An access inside a function inlined into another is named by its own line first, then the
    caller's line (`N.c:33 (inlined at N.c:54)`), so two accesses of one inlined function called
    from two lines are two pairs, each at the line a user looks for."""
    from crashcheck.harness.check.persistency_race import site_text
    w = TraceWriter(pool_size=1 << 12)
    own = w.site("kv.c", 33, "publish", inlined_file="kv.c", inlined_line=54, inlined_func="insert")
    plain = w.site("kv.c", 25, "find")
    w.store(X, b"\x01" * 8, site=own)
    trace = read_trace(w.write(tmp_path / "t.trace"))
    assert site_text(trace, own) == "kv.c:33 (inlined at kv.c:54)"
    assert site_text(trace, plain) == "kv.c:25"


def test_a_site_inlined_two_levels_deep_is_named_with_its_whole_chain(tmp_path):
    """A store in `publish` inlined into `slot_put` inlined into `insert` names its own line, then
    each call up to the function the trace is in (trace version 4's inline chain); the same site
    read from a version 3 trace, which has no chain, names the one call its inlined-at fields hold."""
    from crashcheck.harness.check.persistency_race import site_text
    w = TraceWriter(pool_size=1 << 12)
    deep = w.site("kv.c", 33, "publish", inlined_file="kv.c", inlined_line=54, inlined_func="insert",
                  inlined=("/src/kv.c:40 in slot_put", "/src/kv.c:54 in insert"))
    w.store(X, b"\x01" * 8, site=deep)
    trace = read_trace(w.write(tmp_path / "t.trace"))
    assert site_text(trace, deep) == "kv.c:33 (inlined at /src/kv.c:40, at /src/kv.c:54)"
    # a site of the same line reached through another call is a site of its own, of the same place
    other = w.site("kv.c", 33, "publish", inlined_file="kv.c", inlined_line=54, inlined_func="insert",
                   inlined=("/src/kv.c:41 in slot_put", "/src/kv.c:54 in insert"))
    trace = read_trace(w.write(tmp_path / "t.trace"))
    assert trace.site(other) != trace.site(deep) and trace.place(other) == trace.place(deep)
    old = read_trace(w.write(tmp_path / "old.trace", version=3))
    assert old.version == 3 and old.site(deep).inlined == ()
    assert site_text(old, deep) == "kv.c:33 (inlined at kv.c:54)"


def test_a_confirmed_race_is_named_by_the_word_whose_loss_alone_fails(tmp_path):
    # the reader loads a version word X, then the data Y, both pending stores of the writer; the
    # pair found is X's (met first), but only losing Y fails: the race is named by Y
    from types import SimpleNamespace
    from crashcheck.harness.check.persistency_race import _failing_word

    def build(w, s):
        w.op_begin(1, tid=1)
        w.store(Y, b"\x07" * 8, tid=1, site=s["later"])            # the data
        w.store(X, b"\x02" * 8, tid=1, site=s["publish"])          # the version word
        w.op_begin(2, tid=2)
        w.load(X, 8, tid=2, site=s["read"])
        w.load(Y, 8, tid=2, site=s["other_read"])
        w.op_end(2, tid=2)
        w.persist(X, 8, tid=1)
        w.persist(Y, 8, tid=1)
        w.op_end(1, tid=1)
    trace, s = _trace(tmp_path, build)
    pair = find_pairs(trace)[0]                                     # the first met, as confirm tries it
    assert (pair.store_site, pair.load_site) == (s["publish"], s["read"])
    cp = next(c for c in Simulator.from_trace(trace).crash_points() if c.index == pair.point)
    data = next(i for i, ev in enumerate(trace.events) if ev.kind == "store" and ev.site == s["later"])
    loses_data = {p.seq for p in cp.lost(losing_choice(cp, data))}
    oracle = SimpleNamespace(verdict=lambda cp_, res: SimpleNamespace(
        checked=True, ok=data not in {p.seq for p in cp.lost(res)}))
    tried = []
    check = lambda choices: tried.extend(choices) or list(choices)
    first = losing_choice(cp, pair.store_event)
    named, choice, _, v = _failing_word(trace, cp, oracle, check, pair, first, first, oracle.verdict(cp, first))
    y_at = next(ev.addr for ev in trace.events if ev.kind == "load" and ev.site == s["other_read"])
    assert (named.store_site, named.load_site, named.addr) == (s["later"], s["other_read"], y_at)
    assert {p.seq for p in cp.lost(choice)} == loses_data and not v.ok and len(tried) == 1
    # a reader whose other words pass alone keeps the pair's own name
    oracle_pass = SimpleNamespace(verdict=lambda cp_, res: SimpleNamespace(checked=True, ok=True))
    kept, kept_choice, _, _ = _failing_word(trace, cp, oracle_pass, check, pair, first, first, None)
    assert kept == pair and kept_choice == first
