"""Multi-threaded histories: drawing them, running them under the scheduler, judging them.

Owns the concurrent side of checking a history (DESIGN.md "Concurrency"): a `Threaded` history (a
load phase plus T thread sections and the scheduler seed, drawn by Hypothesis so that all three
shrink), its text for the driver (`thread N` lines, docs/trees.md), the traced run under
CRASHCHECK_SCHED with the schedule written to a file, the History rebuilt from the driver's
`!call` / `!ret` lines, and the crash-free verdict: linearizability against the structure's model
(specs/linearizability.py), the scheduler's deadlock / livelock / hang, the structure's
invariants once every thread has ended.

Crash states of a threaded trace (a structure with PM) are explored under crashsim's per-thread
rules and judged by durable linearizability (`judge_state`, through harness/check/crash_oracle.py):
the recovered state must be the model's after a linearization of the operations completed
before the crash plus any subset of those in flight, and the follow-up workload must then
behave like the model from that state.
"""
from __future__ import annotations

import json
import re
from typing import TypeGuard

from crashcheck.harness.check.crash_free import allowed_text
from crashcheck.harness.check.findings import Finding, address_free
from crashcheck.specs import linearizability
from crashcheck.specs.history import History
from crashcheck.specs.oracle import Verdict, judge_durable
from crashcheck.specs.model import Model, Workload, answer_shape, replay_outputs

# the scheduler's exit statuses (docs/scheduler.md) and the finding each is
SCHED_EXIT = {86: "deadlock", 87: "livelock", 88: "operation-hang"}
# mixed: Hypothesis draws random, pct or stale for each history (docs/scheduler.md "How the harness
# uses it")
SCHED_KINDS = ("mixed", "random", "pct", "stale")
MIXED = ("random", "pct", "stale")      # shrinking goes toward the first
# stale: a thread is parked after about one in PERIOD accesses to a word another thread wrote
STALE_PERIODS = (8, 4, 16)
# the linearizability search's budget for one history: past it the history is "not checked"
LIN_STEPS = 200_000
LIN_TIMEOUT_S = 10.0
SCHED_HANG_MS = 3000


class Threaded(Workload):
    """A history of several threads, flattened in the driver's order: the load phase (thread 0),
    then thread 1's operations, thread 2's, ... `thread_of[i]` is operation i's thread; `nthreads`
    the number of sections (some may be empty); `sched` the scheduler setting (`random:SEED`,
    `pct:SEED:DEPTH:STEPS`, `stale:SEED:PERIOD`, or after a clean run `aim:...`: harness/check/aims.py);
    `schedule` a schedule file's text to replay instead; `prefix` (a writer aim's only) the
    schedule file's text of the clean run its candidate came from, replayed up to the writer's
    aimed store (docs/scheduler.md, CRASHCHECK_SCHED_PREFIX)."""
    thread_of: tuple[int, ...] = ()
    nthreads: int = 0
    sched: str = "random:0"
    schedule: str | None = None
    prefix: str | None = None

    def section(self, t: int) -> list:
        return [op for op, k in zip(self, self.thread_of) if k == t]


def is_threaded(ops: object) -> TypeGuard[Threaded]:
    """Whether history OPS has thread sections: every step that runs or judges a history asks
    this one question (a plain list or Workload is one thread), and after it OPS is typed."""
    return isinstance(ops, Threaded) and ops.nthreads > 0


def make_threaded(load: list, sections: list[list], sched: str, schedule: str | None = None) -> Threaded:
    """The Threaded history of LOAD then SECTIONS (thread 1's operations, thread 2's, ...)."""
    w = Threaded(list(load) + [op for sec in sections for op in sec])
    w.load = len(load)
    w.thread_of = tuple([0] * len(load) + [t + 1 for t, sec in enumerate(sections) for _ in sec])
    w.nthreads = len(sections)
    w.sched = sched
    w.schedule = schedule
    return w


def threaded_histories(base, threads: int, sched: str = "mixed", sections=None, contend=None):
    """Hypothesis strategy of Threaded histories and a scheduler seed. The operations: SECTIONS
    when the model draws its own (a strategy of (load, [ops of thread 1, ...]), the model's
    `thread_histories`), else a history drawn from BASE (the model's own strategy; its load
    phase stays the load phase), in half of them its next operations up to a drawn point too (a
    set-up run before the threads start), each later operation given to one of THREADS threads.
    Everything shrinks toward thread 1 and seed 0: fewer threads, fewer operations, no set-up,
    the first schedules.

    Why the set-up: a base history inserts its keys as it goes (a ycsb history inserts them all
    first), so spread over threads those inserts race with the operations on their keys, which
    mostly find nothing. A race on a key that is present all along (a lookup that holds a leaf
    while another thread replaces and frees it, two deletes of one key) needs the key inserted
    before the threads start.

    Why contention (CONTEND, the model's `contend`): operations dealt at random over a pool of up
    to 48 keys seldom meet; a reader holding a leaf another thread replaces and a third
    reallocates needs three operations of three threads on one or two keys. In half the dealt
    histories the threads' operations are re-aimed at a few hot keys present when they start.

    Why mixed schedules: the random walk picks a thread uniformly at every scheduling point, so it
    preempts often but never keeps one thread stopped for long: a reader stopped between reading
    a pointer and reading through it resumes within a few points, long before another thread
    could replace, free and reallocate the object (a lock-free structure's reclamation bugs).
    PCT keeps a thread it demoted stopped while the others run on, but preempts rarely. Stale
    parks a thread right after it read or published a shared word until others have changed it
    (the window of lock-free bugs: a successor read before a mark, a level marked too early),
    which neither of the other two holds open. With `mixed` each history draws one of the three
    (shrinking toward random)."""
    if sched not in SCHED_KINDS:
        raise ValueError(f"scheduler strategy {sched!r}: one of {', '.join(SCHED_KINDS)}")
    # imported here: the rest of this module serves `crashcheck run`, which draws no history, and
    # Hypothesis is most of the import time of a run of a small program
    from hypothesis import strategies as st

    @st.composite
    def dealt(draw):
        w = draw(base)
        load = getattr(w, "load", 0)
        if draw(st.booleans()):
            load += draw(st.integers(0, len(w) - load))
        if contend is not None and draw(st.booleans()):
            w = contend(draw, w, load)
        rest = list(w)[load:]
        owner = draw(st.lists(st.integers(1, threads), min_size=len(rest), max_size=len(rest)))
        return list(w)[:load], [[op for op, k in zip(rest, owner) if k == t] for t in range(1, threads + 1)]

    @st.composite
    def threaded(draw):
        load, secs = draw(sections if sections is not None else dealt())
        seed = draw(st.integers(0, 2 ** 32 - 1))
        kind = draw(st.sampled_from(MIXED)) if sched == "mixed" else sched
        n = sum(len(sec) for sec in secs)
        if kind == "random":
            setting = f"random:{seed}"
        elif kind == "pct":
            setting = f"pct:{seed}:3:{max(100, 50 * n)}"
        else:
            setting = f"stale:{seed}:{draw(st.sampled_from(STALE_PERIODS))}"
        return make_threaded(load, secs, setting)

    return threaded()


def history_text(model: Model, ops: Threaded) -> str:
    """OPS as the driver's history text: the load phase, then `thread N` and its operations."""
    lines = [model.op_text(op) for op in ops[:ops.load]]
    for t in range(1, ops.nthreads + 1):
        lines.append(f"thread {t}")
        lines += [model.op_text(op) for op, k in zip(ops, ops.thread_of) if k == t]
    return "".join(line + "\n" for line in lines)


def parse_text(model: Model, text: str, sched: str = "random:0", schedule: str | None = None) -> Workload:
    """A history text (as history_text writes it) back into operations: a Threaded history when
    it has `thread N` lines, else a plain Workload."""
    load: list = []
    sections: list[list] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r"thread\s+(\d+)", line)
        if m:
            if int(m.group(1)) != len(sections) + 1:
                raise ValueError(f"expected 'thread {len(sections) + 1}', got {line!r}")
            sections.append([])
            continue
        (sections[-1] if sections else load).append(model.parse_op(line))
    if not sections:
        w = Workload(load)
        return w
    return make_threaded(load, sections, sched, schedule)


def sched_env(ops: Threaded, schedule_in, schedule_out) -> dict[str, str]:
    """The scheduler's environment for a run of OPS: its strategy, or a replay of SCHEDULE_IN when
    OPS carries a schedule to replay; the schedule taken goes to SCHEDULE_OUT."""
    # a loop over plain memory holds the token: the scheduler's watchdog reports it (exit 88)
    # well before the supervisor's own time limit would
    env = {"CRASHCHECK_SCHED_OUT": str(schedule_out), "CRASHCHECK_SCHED_HANG_MS": str(SCHED_HANG_MS),
           # the loads of a driver built with them (a thread-safe tree's): persistency races
           # (harness/check/persistency_race.py) are pairs of another thread's store and a load;
           # from the threads' start on (a load phase before it, replayed up to a capacity point,
           # may run hundreds of operations whose loads nothing reads)
           "CRASHCHECK_TRACE_LOADS": "threads"}
    if ops.schedule is not None:
        schedule_in.write_text(ops.schedule)
        env["CRASHCHECK_SCHED"] = f"replay:{schedule_in}"
    else:
        env["CRASHCHECK_SCHED"] = ops.sched
        prefix = getattr(ops, "prefix", None)
        if prefix is not None and ops.sched.startswith("aim:"):
            path = schedule_in.with_name("schedule.prefix")
            path.write_text(prefix)
            env["CRASHCHECK_SCHED_PREFIX"] = str(path)
    return env


def build_history(model: Model, ops: Threaded, lines: list[str]) -> History | None:
    """The History of a finished run from its result lines: the load phase one operation after
    the other (thread 0), then each thread's operations with call and return positions in the
    order of the `!call T I` / `!ret T I OUTPUT` lines (the schedule's order). None when some
    operation never returned (the run did not finish)."""
    results = [x for x in lines if not x.startswith("!")]
    pos = 0
    rows: list[tuple] = []
    for i in range(ops.load):
        if i >= len(results):
            return None
        rows.append((0, ops[i], pos, pos + 1, model.parse_output(results[i])))
        pos += 2
    call: dict[int, int] = {}
    ret: dict[int, tuple[int, str]] = {}
    for x in lines:
        if x.startswith("!call "):
            _, _, i = x.split(" ", 2)
            call[int(i)] = pos
            pos += 1
        elif x.startswith("!ret "):
            parts = x.split(" ", 3)
            ret[int(parts[2])] = (pos, parts[3] if len(parts) > 3 else "")
            pos += 1
    for i in range(ops.load, len(ops)):
        if i not in call or i not in ret:
            return None
        rows.append((ops.thread_of[i], ops[i], call[i], ret[i][0], model.parse_output(ret[i][1])))
    return History.build(rows)


def sched_finding(code: int, output: str, ops: Threaded, lines: list[str], model: Model) -> Finding:
    """The finding of a run the scheduler ended (exit 86, 87, 88): its class, the scheduler's own
    line, and the operations in flight."""
    cls = SCHED_EXIT[code]
    line = next((x.strip() for x in reversed(output.splitlines()) if "crashcheck: sched:" in x),
                f"exit status {code}")
    called = {int(x.split()[2]): int(x.split()[1]) for x in lines if x.startswith("!call ")}
    done = {int(x.split()[2]) for x in lines if x.startswith("!ret ")}
    flight = [f"thread {t}: `{model.op_text(ops[i])}` (operation {i})" for i, t in sorted(called.items())
              if i not in done]
    detail = (f"without any crash, under the schedule {ops.sched}: {line.split('crashcheck: sched: ', 1)[-1]}"
              + (f"; in flight: {', '.join(flight)}" if flight else ""))
    # one bug whatever the threads' numbers, the step and the operations: what the threads wait
    # for (a deadlock: the kinds of lock in the cycle), else the kind of finding alone
    waits = sorted(set(re.findall(r"waits for ([a-z]+(?: \([a-z]+\))?)", line)) - {"join"})
    return Finding(cls, detail, (cls, " + ".join(waits) if waits else cls))


def judge(model: Model, ops: Threaded, lines: list[str]) -> tuple[list[Finding], bool]:
    """The crash-free verdict of a finished threaded run: (findings, checked). Results no
    linearization explains are a linearizability-violation; a search that ran out of budget is
    not checked (checked False, no finding: never a pass); then the invariants the driver checked
    once every thread had ended."""
    history = build_history(model, ops, lines)
    if history is None:
        done = sum(1 for x in lines if x.startswith("!ret ")) + min(ops.load, sum(1 for x in lines if not x.startswith("!")))
        return [Finding("operation-crash", f"without any crash, the threaded run ended after {done} of "
                        f"{len(ops)} operations returned", ("operation-crash", "threaded run ended early"))], True
    res = linearizability.check(history, model, max_steps=LIN_STEPS, timeout=LIN_TIMEOUT_S)
    if res.illegal and (wrong := sequential_wrong_value(model, ops, history)) is not None:
        return [wrong], True
    if res.illegal:
        detail = (f"without any crash, under the schedule {ops.sched}, the results of {ops.nthreads} threads "
                  f"are not linearizable: {res.reason}")
        # one group: which operation gets stuck varies with the history and says little of the cause
        return [Finding("linearizability-violation", detail, ("linearizability-violation", "results"))], True
    if res.unknown:
        return [], False
    final = next((x[len("!dump"):] for x in lines if x.startswith("!dump ") or x == "!dump"), None)
    if final is not None:
        # the state once every thread has ended must be the model's after a linearization of all
        # the operations: a range lost from the lock while its holder never asks for it again, a
        # map's write undone by another thread's copy of its node, shows only here
        state = final_state(model, final)
        fin = linearizability.check_durable(history, model, state, max_steps=LIN_STEPS, timeout=LIN_TIMEOUT_S)
        if fin.unknown:
            return [], False
        if fin.illegal:
            detail = (f"without any crash, under the schedule {ops.sched}, the state after {ops.nthreads} threads "
                      f"ended is not explained by their results: {fin.reason}")
            return [Finding("linearizability-violation", detail, ("linearizability-violation", "results"))], True
    broken = [x.split(" ", 2) for x in lines if x.startswith("!invariant ")]
    if broken:
        texts = [b[2] for b in broken if len(b) == 3]
        first = texts[0] if texts else "?"
        return [Finding("invariant-violation", f"without any crash, after {ops.nthreads} threads ran "
                        f"(schedule {ops.sched}): {first}",
                        ("no-crash-invariant", address_free(first)))], True
    return [], True


def final_state(model: Model, text: str):
    """The state the driver's final `dump` line (TEXT, after `dump`) shows: JSON (a structure
    that is no map: its items), else the model's own notation (a map's `K V K V ...`)."""
    text = text.strip()
    if model.parse_dump is not None and not text.startswith("["):
        return model.parse_dump(text)
    return model.dump_state(json.loads(text))


def sequential_wrong_value(model: Model, ops: Threaded, history: History) -> Finding | None:
    """A wrong-value finding when no two operations of HISTORY overlapped and one returned what the
    model does not allow after the ones before it: no interleaving is involved, so it reads as the
    single-threaded run's wrong value (crash_free.py), not as a race. Schedule shrinking
    (schedule_shrink.py) takes a linearizability violation down to this when it can."""
    order = history.one_at_a_time()
    if order is None:
        return None
    bad = replay_outputs(model, [o.op for o in order], [o.output for o in order], [model.init()])
    if bad is None:
        return None
    i, _, allowed = bad
    o = order[i]
    return Finding("wrong-value", f"without any crash, under the schedule {ops.sched}, with no two operations "
                   f"overlapping (so no interleaving explains it), `{model.op_text(o.op)}` (thread {o.thread}, "
                   f"operation {o.id}) returned `{model.output_text(o.output)}`, the model "
                   f"{allowed_text(model, allowed)}",
                   ("no-crash", answer_shape(model, o.op, model.output_text(o.output), allowed)))


def op_events(trace) -> tuple[dict[int, int], dict[int, int]]:
    """Each operation's op_begin and op_end event index in TRACE (by operation index)."""
    begin: dict[int, int] = {}
    end: dict[int, int] = {}
    for i, ev in enumerate(trace.events):
        if ev.kind == "op_begin":
            begin.setdefault(ev.addr, i)
        elif ev.kind == "op_end":
            end.setdefault(ev.addr, i)
    return begin, end


def history_at(ops: Threaded, complete: History, begin: dict[int, int], end: dict[int, int],
               event: int) -> History:
    """The History up to a crash before trace event EVENT: each operation begun before it, with
    its call and return at its op_begin / op_end events (the trace's order is the schedule's),
    completed ones with the output the crash-free run gave (COMPLETE), the others in flight."""
    rows = []
    for i in range(len(ops)):
        b = begin.get(i)
        if b is None or b >= event:
            continue
        e = end.get(i)
        done = e is not None and e < event
        rows.append((ops.thread_of[i], ops[i], b, e if done else None, complete[i].output if done else None))
    return History.build(rows)


def crash_key(history: History) -> tuple:
    """What a verdict at a crash depends on besides the recovered image: which operations completed
    and which were in flight (positions only order them, and the order is fixed by the trace)."""
    return tuple((o.call, o.ret) for o in history)


def judge_state(model: Model, history: History, result: dict, followup: list | None = None) -> Verdict:
    """Durable linearizability of one recovered crash state (specs/oracle.py judge_durable), and
    the follow-up workload FOLLOWUP from the recovered state."""
    return judge_durable(history, result, followup, model=model, max_steps=LIN_STEPS, timeout=LIN_TIMEOUT_S)


__all__ = ["LIN_STEPS", "SCHED_EXIT", "Threaded", "build_history", "crash_key", "history_at", "history_text",
           "is_threaded", "judge", "judge_state", "make_threaded", "op_events", "parse_text", "sched_env",
           "sched_finding", "sequential_wrong_value", "threaded_histories"]
