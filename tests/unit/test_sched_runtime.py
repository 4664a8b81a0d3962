"""The deterministic scheduler of the runtime (instrument/runtime/rt_sched*.c, docs/scheduler.md).

The programs in tests/sched/ are built once with crashcheck-cc and run under CRASHCHECK_SCHED.
Every run has a timeout, so a scheduler bug fails a test instead of hanging it. Traces are
compared byte for byte, except the traced process's pid in the header (bytes 40-43), and each
trace is written to the same path, since region events carry the image file's name.
"""
from __future__ import annotations

import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from crashcheck.crashsim.trace import read_trace

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "tests" / "sched"
CC = ROOT / "instrument" / "bin" / "crashcheck-cc"
CXX = ROOT / "instrument" / "bin" / "crashcheck-c++"
PROGRAMS = ("racy", "deadlock", "spin", "atomicity", "sync", "livelock", "cxx_sync", "reclaim", "pending")
WITH_LOADS = ("reclaim", "pending")      # built with --crashcheck-loads: its loads are traced
TIMEOUT = 30
EXIT_DEADLOCK, EXIT_LIVELOCK, EXIT_HANG = 86, 87, 88


@pytest.fixture(scope="module")
def exe(instrument_built, tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("sched-builds")

    def build(name: str) -> tuple[str, Path]:
        target = out / name
        src = SRC / f"{name}.c" if (SRC / f"{name}.c").exists() else SRC / f"{name}.cpp"
        cc = CXX if src.suffix == ".cpp" else CC
        loads = ["--crashcheck-loads"] if name in WITH_LOADS else []
        res = subprocess.run([str(cc), *loads, "-O2", "-Wall", "-pthread", str(src), "-o", str(target)],
                             capture_output=True, text=True)
        assert res.returncode == 0, f"{name}: build failed\n{res.stderr}"
        return name, target

    with ThreadPoolExecutor(2) as pool:
        return dict(pool.map(build, PROGRAMS))


class Run:
    def __init__(self, res: subprocess.CompletedProcess, trace: Path | None, schedule: Path | None):
        self.rc, self.stdout, self.stderr = res.returncode, res.stdout, res.stderr
        self.trace = trace.read_bytes() if trace and trace.exists() else None
        self.schedule = schedule.read_text() if schedule and schedule.exists() else None
        self.trace_path = trace

    @property
    def trace_masked(self) -> bytes:
        assert self.trace is not None
        return self.trace[:40] + self.trace[44:]

    @property
    def switches(self) -> list[tuple[int, int]]:
        """The schedule file's (step, thread) entries."""
        assert self.schedule is not None
        return [tuple(map(int, ln.split())) for ln in self.schedule.splitlines()
                if ln and not ln.startswith("#")]

    def meta(self, key: str) -> str:
        assert self.schedule is not None
        for ln in self.schedule.splitlines():
            if ln.startswith(f"# {key} "):
                return ln.split(None, 2)[2]
        raise KeyError(key)


def run(exe: Path, tmp: Path, sched: str | None, *args: str, trace: bool = True,
        record: bool = True, env: dict[str, str] | None = None) -> Run:
    """Run EXE (pool and trace in TMP) under CRASHCHECK_SCHED=SCHED; keep trace and schedule."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("CRASHCHECK_")}
    tr, sc = tmp / "run.trace", tmp / "run.schedule"
    for p in (tr, sc):
        p.unlink(missing_ok=True)
    if sched is not None:
        e["CRASHCHECK_SCHED"] = sched
    if trace:
        e["CRASHCHECK_TRACE"] = str(tr)
    if record:
        e["CRASHCHECK_SCHED_OUT"] = str(sc)
    e.update(env or {})
    res = subprocess.run([str(exe), str(tmp / "pool"), *args], env=e, capture_output=True,
                         text=True, timeout=TIMEOUT)
    return Run(res, tr if trace else None, sc if record else None)


def test_same_seed_same_schedule_and_trace(exe, tmp_path):
    for strategy in ("random:5", "pct:5:3"):
        runs = [run(exe["racy"], tmp_path, strategy, "3") for _ in range(3)]
        assert all(r.rc == 0 for r in runs), runs[0].stderr
        assert len({r.trace_masked for r in runs}) == 1, strategy
        assert len({tuple(r.switches) for r in runs}) == 1, strategy
        assert len({r.stdout for r in runs}) == 1


def test_different_seeds_different_schedules(exe, tmp_path):
    runs = [run(exe["racy"], tmp_path, f"random:{s}") for s in range(1, 6)]
    assert all(r.rc == 0 for r in runs)
    assert len({tuple(r.switches) for r in runs}) == 5
    assert len({r.trace_masked for r in runs}) == 5
    # the race is real: some interleavings lose updates (2 threads x 20 increments)
    assert len({r.stdout for r in runs}) > 1 or runs[0].stdout.strip() != "40"


@pytest.mark.parametrize("strategy", ["random:11", "pct:11:3", "pct:11:2:50", "stale:11:2"])
def test_replay_gives_the_same_trace(exe, tmp_path, strategy):
    first = run(exe["racy"], tmp_path, strategy, "3")
    assert first.rc == 0, first.stderr
    saved = tmp_path / "saved.schedule"
    saved.write_text(first.schedule)
    again = run(exe["racy"], tmp_path, f"replay:{saved}", "3")
    assert again.rc == 0, again.stderr
    assert again.trace_masked == first.trace_masked
    assert again.switches == first.switches
    assert again.meta("replay-ignored") == "0"
    assert again.stdout == first.stdout
    # the default rule's FAIR comes from the file, not from the environment
    other = run(exe["racy"], tmp_path, f"replay:{saved}", "3", env={"CRASHCHECK_SCHED_FAIR": "2"})
    assert other.trace_masked == first.trace_masked


def test_switches_are_marked_in_the_trace(exe, tmp_path):
    r = run(exe["racy"], tmp_path, "random:3")
    events = read_trace(r.trace_path).events
    marks = [(i, e.data.decode()) for i, e in enumerate(events) if e.kind == "mark"]
    assert marks[0][1] == "cc-sched start"
    switches = [(i, m) for i, m in marks if m.startswith("cc-sched switch ")]
    assert switches
    sites = read_trace(r.trace_path).sites
    for i, m in switches:
        fields = dict(f.split("=") for f in m.split()[2:])
        assert events[i].tid == int(fields["from"])
        # where the thread was switched away: the mark's site, or the interposed call's name
        assert ("at" in fields) != (0 <= events[i].site < len(sites)), m
        if i + 1 < len(events):   # the next event, a mark or not, is the new thread's
            assert events[i + 1].tid == int(fields["to"]), m


def test_empty_and_drawn_schedules_are_valid(exe, tmp_path):
    """Any list of (step, thread) pairs is a schedule: entries that cannot apply are skipped."""
    empty = tmp_path / "empty"
    empty.write_text("")
    a, b = (run(exe["racy"], tmp_path, f"replay:{empty}") for _ in range(2))
    assert a.rc == 0 and a.trace_masked == b.trace_masked
    assert a.switches == []                      # the default rule: no preemption recorded
    assert a.stdout.strip() == "40"              # no preemption inside an increment
    drawn = tmp_path / "drawn"
    drawn.write_text("# a fuzzer's draw\n3 2\n5 9\n7 1\n1000000 1\n")
    r = run(exe["racy"], tmp_path, f"replay:{drawn}")
    assert r.rc == 0, r.stderr
    assert int(r.meta("replay-ignored")) >= 2    # thread 9 does not exist; step 10^6 never comes


def test_two_lock_deadlock_is_found_and_replayed(exe, tmp_path):
    found = None
    for seed in range(1, 41):
        r = run(exe["deadlock"], tmp_path, f"random:{seed}")
        assert r.rc in (0, EXIT_DEADLOCK), r.stderr
        if r.rc == EXIT_DEADLOCK:
            found = (seed, r)
            break
    assert found, "no deadlock in 40 seeds"
    seed, r = found
    line, = [ln for ln in r.stderr.splitlines() if ln.startswith("crashcheck: sched: deadlock")]
    assert "held by thread" in line and "waits for mutex" in line
    assert r.meta("result") == "deadlock"
    marks = [e.data.decode() for e in read_trace(r.trace_path).events if e.kind == "mark"]
    assert marks[-1].startswith("cc-sched deadlock ")
    saved = tmp_path / "dl.schedule"
    saved.write_text(r.schedule)
    again = run(exe["deadlock"], tmp_path, f"replay:{saved}")
    assert again.rc == EXIT_DEADLOCK and again.trace_masked == r.trace_masked


@pytest.mark.parametrize("mode", ["cas", "tas", "spin", "flag"])
def test_spinning_code_makes_progress(exe, tmp_path, mode):
    for strategy in ("random:1", "random:2", "pct:1:3", "pct:2:2:200", "stale:1:2", "stale:2:1"):
        r = run(exe["spin"], tmp_path, strategy, mode)
        assert (r.rc, r.stdout.strip()) == (0, "150"), f"{mode} {strategy}: {r.stderr}"


def test_pct_finds_a_depth_two_bug(exe, tmp_path):
    """The lost update needs one preemption: PCT depth 1 (none) never finds it, depth 2 does."""
    for seed in range(1, 21):
        r = run(exe["atomicity"], tmp_path, f"pct:{seed}:1", trace=False)
        assert r.rc == 0, f"depth 1 seed {seed}: {r.stdout}{r.stderr}"
    steps = int(run(exe["atomicity"], tmp_path, "pct:1:1", trace=False).meta("steps"))
    hits = [s for s in range(1, 201)
            if run(exe["atomicity"], tmp_path, f"pct:{s}:2:{steps}", trace=False, record=False).rc == 1]
    assert hits, "PCT depth 2 missed the bug in 200 seeds"
    assert hits[0] <= 100


@pytest.mark.parametrize("mode, expect", [("cond", "420"), ("rwlock", "readers 3 value 1"),
                                          ("timed", "timeout"), ("barrier", "rounds 5")])
def test_conditions_and_rwlocks(exe, tmp_path, mode, expect):
    for strategy in ("random:1", "random:2", "random:3", "pct:4:3"):
        r = run(exe["sync"], tmp_path, strategy, mode)
        assert (r.rc, r.stdout.strip()) == (0, expect), f"{mode} {strategy}: {r.stderr}"


def test_cxx_threads_mutexes_and_conditions(exe, tmp_path):
    for strategy in ("random:1", "random:2", "pct:3:2"):
        r = run(exe["cxx_sync"], tmp_path, strategy, trace=False)
        assert (r.rc, r.stdout.strip()) == (0, "6"), f"{strategy}: {r.stderr}"
        assert int(r.meta("steps")) > 3      # the locks and waits were scheduling points


def test_threads_waiting_for_each_other_are_a_livelock(exe, tmp_path):
    for strategy in ("random:1", "pct:1:2"):
        r = run(exe["livelock"], tmp_path, strategy, "flags",
                env={"CRASHCHECK_SCHED_SPIN_LIMIT": "2000"})
        assert r.rc == EXIT_LIVELOCK, r.stderr
        assert "crashcheck: sched: livelock" in r.stderr and r.meta("result") == "livelock"


def test_an_operation_that_never_ends_is_a_livelock(exe, tmp_path):
    r = run(exe["livelock"], tmp_path, "random:1", "op", env={"CRASHCHECK_SCHED_OP_STEPS": "3000"})
    assert r.rc == EXIT_LIVELOCK, r.stderr
    assert "in operation 7 without finishing it" in r.stderr


def test_no_scheduling_point_is_a_hang(exe, tmp_path):
    r = run(exe["livelock"], tmp_path, "random:1", "plain", env={"CRASHCHECK_SCHED_HANG_MS": "300"})
    assert r.rc == EXIT_HANG, r.stderr
    assert "reached no scheduling point" in r.stderr


def test_off_by_default(exe, tmp_path):
    """Without CRASHCHECK_SCHED the threads are real and the locks libc's."""
    assert run(exe["sync"], tmp_path, None, "cond").stdout.strip() == "420"
    assert run(exe["spin"], tmp_path, None, "tas").stdout.strip() == "150"
    r = run(exe["racy"], tmp_path, None)
    assert r.rc == 0 and r.schedule is None
    assert not any(e.kind == "mark" for e in read_trace(r.trace_path).events)


@pytest.mark.parametrize("spec", ["fifo:1", "random:x", "pct:1:0", "stale:1", "stale:1:0",
                                  "replay:/nonexistent/schedule", "aim:1:1:5:1", "aim:1:0:5:1:1",
                                  "aim:1:1:5:0:1", "aim:1:1:5:1:0", "aim:1:1:x:1:1", "aim:1:1:5:1:1:1",
                                  "aim:1:1:5:1:1:1:5", "aim:1:1:5:1:1:0:5"])
def test_bad_settings_say_why(exe, tmp_path, spec):
    r = run(exe["racy"], tmp_path, spec)
    assert r.rc == 2 and "crashcheck" in r.stderr and r.stderr.count("\n") == 1


def test_schedule_file_names_its_strategy(exe, tmp_path):
    r = run(exe["racy"], tmp_path, "pct:3:2:40")
    assert r.schedule.startswith("# crashcheck-schedule 1\n")
    assert r.meta("strategy") == "pct:3:2:40" and r.meta("result") == "ok"
    assert int(r.meta("threads")) == 3 and int(r.meta("switches")) == len(r.switches)


@pytest.mark.parametrize("env, calls", [({}, 9), ({"CRASHCHECK_PASS_SCHED": "0"}, 0)])
def test_pass_adds_a_guarded_point_after_every_atomic(instrument_built, env, calls):
    """spin.c has 9 atomics, all on globals (DRAM): each gets `if (__cc_sched_on) call`."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("CRASHCHECK_")}
    e.update(env)
    ir = subprocess.run([str(CC), "-O2", "-pthread", "-S", "-emit-llvm", str(SRC / "spin.c"), "-o", "-"],
                        env=e, capture_output=True, text=True, check=True).stdout
    lines = ir.splitlines()
    sites = [i for i, ln in enumerate(lines) if "call void @__cc_sched_atomic(" in ln]
    assert len(sites) == calls
    guards = [ln for ln in lines if "load atomic i32, ptr @__cc_sched_on monotonic" in ln]
    assert len(guards) == calls


def aimed_load(exe, tmp_path) -> tuple[int, int]:
    """reclaim.c's reader's load of the value (the line marked AIM): its thread and site id."""
    line = next(i for i, text in enumerate((SRC / "reclaim.c").read_text().splitlines(), 1) if "AIM:" in text)
    t = read_trace(run(exe["reclaim"], tmp_path, "random:1").trace_path)
    ev = next(e for e in t.events if e.kind == "load" and t.site(e.site).line == line)
    return ev.tid, ev.site


def test_aim_holds_the_reader_until_the_writers_operations_end(exe, tmp_path):
    """aim:SEED:THREAD:SITE:NTH:OPS parks the thread before that load until the others end OPS
    operations: after the writer's publish alone the reader still reads one record; after the
    reuse too it reads the key of one and the value of another."""
    tid, site = aimed_load(exe, tmp_path)
    out = {ops: run(exe["reclaim"], tmp_path, f"aim:7:{tid}:{site}:1:{ops}").stdout.strip() for ops in (1, 2, 3)}
    assert out == {1: "ok", 2: "mismatch", 3: "mismatch"}
    # the second such load never comes: no park; nor at the key's load (both read after the reuse)
    assert run(exe["reclaim"], tmp_path, f"aim:7:{tid}:{site}:2:2").stdout.strip() == "ok"
    assert run(exe["reclaim"], tmp_path, f"aim:7:{tid}:{site - 1}:1:2").stdout.strip() == "ok"
    # under the random walk a load is no scheduling point: the window is never open
    assert {run(exe["reclaim"], tmp_path, f"random:{s}").stdout.strip() for s in range(1, 11)} == {"ok"}


def _marked(exe, tmp_path, name: str, marks: tuple[str, ...]) -> list[tuple[int, int]]:
    """NAME's accesses at the lines marked MARKS (`STORE:`, `LOAD:` comments): (thread, site) each."""
    text = (SRC / f"{name}.c").read_text().splitlines()
    t = read_trace(run(exe[name], tmp_path, "random:1").trace_path)
    out = []
    for mark in marks:
        line = next(i for i, x in enumerate(text, 1) if f"{mark}:" in x)
        ev = next(e for e in t.events if e.kind in ("store", "load") and t.site(e.site).line == line)
        out.append((ev.tid, ev.site))
    return out


def test_writer_aim_holds_the_writer_until_the_reader_read_its_pending_store(exe, tmp_path):
    """aim:SEED:THREAD:SITE:NTH:OPS:READER:RSITE parks the writer right after its store until the
    reader loaded it at RSITE and ended its operation: the reader sees the store still pending,
    although the writer held the lock at the store (woken because the reader waited for it, it
    is parked again right after its unlock). Without READER:RSITE (the reader's aim form at the
    store) it does not. The trace carries the lock and thread marks
    the window analysis reads (harness/check/race_windows.py)."""
    (wtid, store), (rtid, load) = _marked(exe, tmp_path, "pending", ("STORE", "LOAD"))
    aimed = run(exe["pending"], tmp_path, f"aim:3:{wtid}:{store}:1:4:{rtid}:{load}")
    assert aimed.stdout.strip() == "saw 7 pending", aimed.stderr
    marks = [e.data.decode() for e in read_trace(aimed.trace_path).events if e.kind == "mark"]
    syncs = [m for m in marks if m.startswith("cc-sync ")]
    assert {"cc-sync spawn 1", "cc-sync spawn 2", "cc-sync join 1", "cc-sync join 2"} <= set(syncs)
    assert syncs.count("cc-sync acq 1") == 2 and syncs.count("cc-sync rel 1") == 2
    assert run(exe["pending"], tmp_path, f"aim:3:{wtid}:{store}:1:4").stdout.strip() != "saw 7 pending"
    # a replay of the aimed run is the same run
    saved = tmp_path / "aimed.schedule"
    saved.write_text(aimed.schedule)
    again = run(exe["pending"], tmp_path, f"replay:{saved}")
    assert (again.trace_masked, again.stdout) == (aimed.trace_masked, aimed.stdout)


def test_writer_aim_holds_a_reader_that_comes_first_until_the_store(exe, tmp_path):
    """A writer aim holds the reader before its load at RSITE until the writer's aimed store, then
    the writer after it: a reader that reached its load first (in the run the aim was drawn
    from) reads the store pending, at every seed; and its trace says so: the load's event comes
    after the store's, since a load's event is logged after its scheduling point, where the reader
    was held (logged before it, the reader's load looked earlier than the store, and the aim
    that had just shown the race was judged "the reader never loaded it": lfhash clear-no-help)."""
    (wtid, store), (rtid, load) = _marked(exe, tmp_path, "pending", ("STORE", "LOAD"))
    for seed in (1, 2, 3, 4):
        aimed = run(exe["pending"], tmp_path, f"aim:{seed}:{wtid}:{store}:1:4:{rtid}:{load}", "early")
        assert aimed.stdout.strip() == "saw 7 pending", (seed, aimed.stderr)
        events = read_trace(aimed.trace_path).events
        at = {(e.kind, e.tid, e.site): i for i, e in reversed(list(enumerate(events)))}
        assert at["store", wtid, store] < at["load", rtid, load], seed


def _to_store(r: Run, tid: int, site: int) -> list[tuple]:
    """R's trace events up to thread TID's first store at SITE: kind, thread, site, mark text."""
    events = read_trace(r.trace_path).events
    end = next(i for i, e in enumerate(events) if e.kind == "store" and e.tid == tid and e.site == site)
    return [(e.kind, e.tid, e.site, e.data if e.kind == "mark" else b"") for e in events[:end + 1]]


def test_writer_aim_with_a_prefix_replays_the_clean_run_up_to_the_store(exe, tmp_path):
    """With CRASHCHECK_SCHED_PREFIX (a clean run's schedule file) a writer aim takes that run's
    choices up to the writer's aimed store (the same switches, at the same steps: the prefix's
    loads are no points, as in the random walk it came from), then parks the writer until the
    reader read the store pending; the aimed run's own schedule file says from which step loads
    were points, and its replay is the same run."""
    (wtid, store), (rtid, load) = _marked(exe, tmp_path, "pending", ("STORE", "LOAD"))
    prefix = tmp_path / "clean.schedule"
    differ = 0
    for seed in (1, 2, 3, 4, 5, 6):
        clean = run(exe["pending"], tmp_path, f"random:{seed}")
        prefix.write_text(clean.schedule)
        want = _to_store(clean, wtid, store)
        spec = f"aim:{seed + 10}:{wtid}:{store}:1:4:{rtid}:{load}"
        aimed = run(exe["pending"], tmp_path, spec, env={"CRASHCHECK_SCHED_PREFIX": str(prefix)})
        assert _to_store(aimed, wtid, store) == want, seed
        assert aimed.stdout.strip() == "saw 7 pending", (seed, aimed.stderr)
        assert aimed.meta("load-points") == "0" and int(aimed.meta("load-points-from")) > 0
        saved = tmp_path / "aimed.schedule"
        saved.write_text(aimed.schedule)
        again = run(exe["pending"], tmp_path, f"replay:{saved}")
        assert (again.trace_masked, again.stdout, again.meta("replay-ignored")) == (aimed.trace_masked, aimed.stdout, "0")
        differ += _to_store(run(exe["pending"], tmp_path, spec), wtid, store) != want
    assert differ      # the aim's own priorities take other paths to the store


@pytest.mark.parametrize("strategy", ["stale:3:1", "stale:5:2", "aim:7:1:SITE:1:2"])
def test_replay_of_a_run_with_load_points_gives_the_same_trace(exe, tmp_path, strategy):
    """Under stale and aim traced loads are scheduling points: the schedule file says so
    (`# load-points 1`) and its replay counts the same steps (a replay that did not took other
    threads at other places: 20 of 20 stale runs of Heart diverged)."""
    strategy = strategy.replace("SITE", str(aimed_load(exe, tmp_path)[1]))
    first = run(exe["reclaim"], tmp_path, strategy)
    assert first.meta("load-points") == "1" and first.switches
    saved = tmp_path / "saved.schedule"
    for text in (first.schedule, first.schedule.replace("# load-points 1\n", "")):
        # (a file written before the line existed: its stale or aim strategy line says it)
        saved.write_text(text)
        again = run(exe["reclaim"], tmp_path, f"replay:{saved}")
        assert (again.trace_masked, again.stdout, again.meta("replay-ignored")) == (first.trace_masked, first.stdout, "0")
    assert run(exe["reclaim"], tmp_path, "random:1").meta("load-points") == "0"
