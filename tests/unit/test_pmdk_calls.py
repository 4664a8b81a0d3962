"""harness/triage/pmdk_calls.py: a store made inside an instrumented libpmemobj is named with the
program's call it was made in and the library's calls between (the latest `cc-stack` mark of its
thread; in a trace without any, the latest `cc-call` mark), the program's own stores are not, and
a record lists the calls of its lost stores."""
from crashcheck.crashsim.trace import read_trace
from crashcheck.crashsim.trace_writer import TraceWriter
from crashcheck.harness.triage.pmdk_calls import Calls, library_calls, stack_text


def _trace(tmp_path):
    w = TraceWriter(pool_size=4096)
    prog_open = w.site("/src/prog.c", 10, "main")
    prog_commit = w.site("/src/prog.c", 20, "main")
    prog_store = w.site("/src/prog.c", 21, "main")
    lib = w.site("/pmdk/src/libpmemobj/ulog.c", 563, "ulog_entry_apply")
    w.store(0, b"\1" * 8, site=lib)                     # 0: before any call: no call
    w.mark("cc-call pmemobj_open", site=prog_open)        # 1
    w.store(8, b"\2" * 8, site=lib)                     # 2: inside pmemobj_open
    w.mark("cc-call pmemobj_tx_commit", site=prog_commit)  # 3
    w.store(16, b"\3" * 8, site=lib)                    # 4: inside pmemobj_tx_commit
    w.store(24, b"\4" * 8, site=prog_store)             # 5: the program's own, after the call
    w.store(32, b"\5" * 8, site=lib, tid=1)             # 6: another thread made no call
    w.write(tmp_path / "t.trace")
    return read_trace(tmp_path / "t.trace")


def test_a_library_store_is_named_by_the_call_it_was_made_in(tmp_path):
    trace = _trace(tmp_path)
    calls = Calls(trace)
    assert calls
    stores = [ev.seq for ev in trace.events if ev.kind == "store"]
    named = [calls.of(seq) for seq in stores]
    assert named[0] is None
    assert named[1]["function"] == "pmemobj_open" and named[1]["site"]["line"] == 10
    assert named[2]["function"] == "pmemobj_tx_commit" and named[2]["site"]["line"] == 20
    assert named[3] is None and named[4] is None


def test_a_record_lists_the_calls_of_its_lost_library_stores(tmp_path):
    trace = _trace(tmp_path)
    calls = Calls(trace)
    stores = [ev.seq for ev in trace.events if ev.kind == "store"]
    record = {"lost": [{"seq": s, "call": calls.of(s)} for s in stores[1:3]],
              "persisted": [{"seq": stores[3]}]}
    assert library_calls(record) == ("pmemobj_open at /src/prog.c:10; "
                                     "pmemobj_tx_commit at /src/prog.c:20")
    # the program's own store lost: no call, even when persisted library stores had one
    assert library_calls({"lost": [{"seq": stores[3]}], "persisted": record["lost"]}) == ""
    assert library_calls({"lost": [], "persisted": record["lost"][:1]}) == "pmemobj_open at /src/prog.c:10"


def test_a_trace_without_marks_names_nothing(tmp_path):
    w = TraceWriter(pool_size=4096)
    w.store(0, b"\1" * 8, site=w.site("/src/prog.c", 3, "main"))
    w.write(tmp_path / "t.trace")
    assert not Calls(read_trace(tmp_path / "t.trace"))


def test_a_library_store_is_named_by_its_call_stack(tmp_path):
    w = TraceWriter(pool_size=4096)
    prog_commit = w.site("/src/prog.c", 20, "main", chain="pmemobj_tx_commit()")
    lib_call = w.site("/pmdk/src/libpmemobj/tx.c", 512, "pmemobj_tx_commit", chain="operation_process()")
    lib_ptr = w.site("/pmdk/src/libpmemobj/memops.c", 630, "operation_process", chain="an indirect call")
    lib = w.site("/pmdk/src/libpmemobj/ulog.c", 563, "ulog_entry_apply")
    w.mark("cc-call pmemobj_tx_commit", site=prog_commit)   # 0: ignored beside cc-stack marks
    w.mark(f"cc-stack {prog_commit} {lib_call}", site=lib_call)
    w.store(0, b"\1" * 8, site=lib)                                # 2: two frames
    w.mark(f"cc-stack {prog_commit} {lib_call} {lib_ptr}", site=lib_ptr)
    w.store(8, b"\2" * 8, site=lib)                                # 4: three frames
    w.mark("cc-stack")
    w.store(16, b"\3" * 8, site=lib)                               # 6: back in the program
    w.store(24, b"\4" * 8, site=lib, tid=1)                        # 7: another thread: no stack
    w.write(tmp_path / "t.trace")
    calls = Calls(read_trace(tmp_path / "t.trace"))
    two, three, back, other = (calls.of(seq) for seq in (2, 4, 6, 7))
    assert two["function"] == "pmemobj_tx_commit" and two["site"]["line"] == 20
    assert [f["line"] for f in two["stack"]] == [20, 512]
    assert stack_text(three) == ("pmemobj_tx_commit at /src/prog.c:20 > operation_process at "
                                 "/pmdk/src/libpmemobj/tx.c:512 > an indirect call at "
                                 "/pmdk/src/libpmemobj/memops.c:630")
    assert back is None and other is None
    # a call through a pointer with a frame after it: named by the function that frame is in
    inner = {"file": "/pmdk/src/libpmem2/x86_64/init.c", "line": 89, "func": "memset_nodrain",
             "via": ["an indirect call"]}
    assert stack_text({**three, "stack": three["stack"] + [inner]}).endswith(
        "operation_process at /pmdk/src/libpmemobj/tx.c:512 > memset_nodrain (through a pointer) at "
        "/pmdk/src/libpmemobj/memops.c:630 > an indirect call at /pmdk/src/libpmem2/x86_64/init.c:89")
    record = {"lost": [{"seq": 4, "call": three}, {"seq": 2, "call": two}]}
    assert library_calls(record) == f"{stack_text(three)}; {stack_text(two)}"
    # a summary names the first three stacks
    many = [{"seq": 2, "call": {**two, "stack": [{**two["stack"][0], "line": n}]}} for n in range(5)]
    assert library_calls({"lost": many}).endswith("; pmemobj_tx_commit at /src/prog.c:2 (and 2 more: "
                                                  "the record's `call` of each store)")
