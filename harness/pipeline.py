"""Checking one history end to end: trace it, crash it everywhere, recover, judge.

Owns the data flow of the design for a single history: run the traced driver on the history,
read the trace, stream crash points and states through crashsim.explore into the checker runner,
judge every answer with specs.oracle (consistency) and specs.leaks (leaks), and shrink a failing
crash state to the fewest lost pieces that still fail. Never decides what to fuzz (harness/fuzz.py)
and never formats reports (harness/records.py, harness/report.py).
"""
from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from crashsim.explore import StateOutcome, explore
from crashsim.image import apply_writes, decode_writes, encode_writes
from crashsim.model import ModelOptions, Piece
from crashsim.runner import CheckResult, Runner, RunnerError, Stopped
from crashsim.simulate import CrashPoint as SimPoint, Simulator
from crashsim.states import StateCodec
from crashsim.trace import Trace, TraceError, read_trace
from harness import workdir as workdirs
from harness.budget import Budget, OutOfTime
from harness.errors import SetupError
from harness.structures import Structure
from harness.supervise import RunEnd, run_supervised, run_timeout_s
from specs import leaks as leak_policy
from specs.ordered_map import Op, State, key_text, prefix_states, run as model_run
from specs.ordered_map import followup as ordered_map_followup
from specs.oracle import STOP_SIGNALS, CrashPoint, Verdict, judge_recovery

DEFAULT_POOL = 8 << 20      # bytes; small pools keep base-image loads cheap
DEFAULT_TIMEOUT_MS = 2000
DEFAULT_MEM_MB = 512
RUN_TIMEOUT_CAP_MS = 120_000


def _env_int(name: str, default: int) -> int:
    """An integer knob from the environment (tests make timeouts small with these)."""
    try:
        return int(os.environ.get(name, ""))
    except ValueError:
        return default


@dataclass
class Settings:
    """How a history is checked (one fuzz run uses one Settings)."""
    model: str = "adr"
    strategy: str = "bounded"
    limit: int = 64
    seed: int = 0
    pool_size: int = DEFAULT_POOL
    # Limits of one crash state's check (the runner's) and of the traced runs, which may take
    # run_timeout_ms plus op_timeout_ms per operation (at most RUN_TIMEOUT_CAP_MS). Defaults come
    # from $CRASHCHECK_TIMEOUT_MS, $CRASHCHECK_MEM_MB, $CRASHCHECK_RUN_TIMEOUT_MS and
    # $CRASHCHECK_OP_TIMEOUT_MS when set.
    timeout_ms: int = field(default_factory=lambda: _env_int("CRASHCHECK_TIMEOUT_MS", DEFAULT_TIMEOUT_MS))
    mem_mb: int = field(default_factory=lambda: _env_int("CRASHCHECK_MEM_MB", DEFAULT_MEM_MB))
    run_timeout_ms: int = field(default_factory=lambda: _env_int("CRASHCHECK_RUN_TIMEOUT_MS", 10_000))
    op_timeout_ms: int = field(default_factory=lambda: _env_int("CRASHCHECK_OP_TIMEOUT_MS", 100))
    followup: bool = True
    clflush_guarantees: bool = False
    # Post-crash images per history whose own recovery is traced and crashed (0: off). Recovery
    # must be idempotent: a crash while it repairs or replays a log, then recovery again, must
    # still end in a state acceptable for the original crash.
    recovery_crashes: int = 4

    def options(self) -> ModelOptions:
        return ModelOptions(model=self.model, clflush_guarantees=self.clflush_guarantees)


@dataclass
class Finding:
    """One failing crash state (or a failure of the crash-free run, with point None)."""
    cls: str
    detail: str
    group: tuple[str, str]               # (class, site key): findings alike are one bug
    expected: bool = False
    expected_reason: str = ""
    point: SimPoint | None = None
    choice: tuple[int, ...] = ()
    verdict: Verdict | None = None
    result: CheckResult | None = None
    leaks: list[dict] = field(default_factory=list)
    occurrences: int = 1
    # For a crash inside recovery: the original crash (its point index and choice) whose image
    # recovery was working on, and the trace of that recovery run (where `point` lives).
    recovery_of: tuple[int, tuple[int, ...]] | None = None
    recovery_trace: Trace | None = None
    history_point: CrashPoint | None = None      # the original crash, in history terms
    op_index: int | None = None                  # crash-free run: the operation that died or hung

    @property
    def lost(self) -> list[Piece]:
        return self.point.lost(self.choice) if self.point is not None else []

    @property
    def kept(self) -> list[Piece]:
        return self.point.kept(self.choice) if self.point is not None else []


@dataclass
class HistoryOutcome:
    ops: list[Op]
    followup: list[Op]
    trace: Trace | None
    findings: list[Finding]
    crash_points: int = 0
    states_legal: int = 0
    states_explored: int = 0
    states_checked: int = 0
    elapsed: float = 0.0
    partial: bool = False        # the budget ran out (or a stop came) before every state was checked


RECOVERY_CRASH_PREFIX = "crash during recovery, then recovery again: "


def followup_ops(ops: list[Op], key_kind: str, value_size: int) -> list[Op]:
    """The ordered map's follow-up workload run after every recovery (specs.ordered_map.followup)."""
    return ordered_map_followup(ops, key_kind=key_kind, value_size=value_size)


def history_text(ops: list[Op]) -> str:
    return "".join(op.text() + "\n" for op in ops)


def site_key(trace: Trace, site_id: int, caller: bool = False) -> str:
    """file:line of a site; with CALLER, of the line it was inlined into (a fence inside a
    persist helper is best named by the line that called the helper)."""
    site = trace.site(site_id)
    if site is None:
        return "?"
    if caller and site.inlined_line:
        return f"{site.inlined_file}:{site.inlined_line}"
    return f"{site.file}:{site.line}"


def finding_group(trace: Trace, f: "Finding") -> tuple[str, str]:
    """Findings with the same class and the same first lost store (or, with nothing lost, the
    same crash site) are one bug; broken invariants are one bug per broken rule (the first
    violation's text without its addresses and numbers), wherever the crash fell, because the
    structure's check names the rule better than the crash names its cause (a recovery that
    misses one case breaks the same rule after crashes all over the code). Crashes inside
    recovery are told apart by a prefix.

    A recovery whose process ended abnormally (a signal, an exit, a hang, a stop, killing the
    checker, exit(0) without a result, a process left running) is one bug per way it ended,
    wherever the crash fell: such a recovery usually fails the same way on every image that
    reaches the faulty code, and grouping by lost store would make one cause dozens of bugs. (Two
    different faults that die of the same signal are then one bug; its record shows the first.)"""
    pre = "in recovery: " if f.recovery_of is not None else ""
    if f.verdict is not None and f.verdict.group:
        return (f.cls, pre + f.verdict.group)
    res = f.result
    if f.cls in ("recovery-crash", "recovery-hang") and res is not None and (
            res.status != "ok" or res.result is None or res.stray):
        return (f.cls, pre + "recovery: " + _recovery_end(res))
    violations = (f.result.result or {}).get("violations") if f.result is not None else None
    if f.cls == "invariant-violation" and violations:
        return (f.cls, pre + "rule: " + _address_free(violations[0]))
    if f.recovery_of is not None and f.recovery_trace is not None:
        trace = f.recovery_trace
    lost = f.lost
    if lost:
        return (f.cls, pre + site_key(trace, store_site(trace, lost[0])))
    return (f.cls, pre + "crash@" + site_key(trace, _crash_site(trace, f.point), caller=True))


def _recovery_end(res: CheckResult) -> str:
    """How a recovery's process ended, without numbers that vary (part of a group)."""
    if res.status == "signal":
        return f"signal {res.signal}"
    if res.status == "exit":
        return f"exit {res.exit}"
    if res.status == "timeout":
        return "stopped" if res.signal in STOP_SIGNALS else "timeout"
    if res.status == "ok":
        return "exit 0 early" if res.result is None else "stray process"
    return res.status          # oom, runner-died


def store_site(trace: Trace, piece: Piece) -> int:
    return trace.events[piece.seq].site


def oracle_point(cp: SimPoint, nops: int) -> CrashPoint:
    """Crash point in history terms: completed operations and the one in flight."""
    done = (cp.last_done + 1) if cp.last_done is not None else 0
    if cp.op is not None:
        done = min(done, cp.op)
    return CrashPoint(min(done, nops), cp.op)


class Checker:
    """Checks histories for one structure (or seeded-bug variant) with one runner process."""

    def __init__(self, structure: Structure, bug: str | None, settings: Settings,
                 workdir: str | os.PathLike | None = None, budget: Budget | None = None) -> None:
        self.structure = structure
        self.bug = bug
        self.settings = settings
        self.budget = budget or Budget()
        self.driver = structure.driver(bug)
        self._driver_id = _file_id(self.driver)
        self._tmp = workdirs.make_workdir(settings.pool_size) if workdir is None else None
        self.workdir = Path(workdir or self._tmp.name)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._runner: Runner | None = None
        self._next_state = 0
        self._hung: dict[tuple[str, ...], Finding] = {}    # operations up to one that hung
        self.key_kind = structure.key_kind
        self.value_size = structure.value_size
        self.value_min = structure.value_min

    # -- the runner ------------------------------------------------------------------------

    def runner(self) -> Runner:
        if self._runner is None or self._runner.closed:
            s = self.settings
            self.check_driver()
            try:
                self._runner = Runner([str(self.driver), "serve", "--size", str(s.pool_size),
                                       "--timeout-ms", str(s.timeout_ms), "--mem-mb", str(s.mem_mb)],
                                      env=_clean_env(), restart=True)
            except RunnerError as exc:
                raise SetupError(f"{self.structure.name}: cannot start the checker runner: {exc}") from None
            self._next_state = 0
        return self._runner

    def check_driver(self) -> None:
        """Refuse to go on with a driver that was rebuilt (or removed) since the run started:
        its traces would not match the ones already judged."""
        if _file_id(self.driver) != self._driver_id:
            raise SetupError(f"the driver {self.driver} changed during the run (rebuilt?); "
                             "run crashcheck again once the build is finished")

    def close(self) -> None:
        if self._runner is not None:
            self._runner.close()
            self._runner = None
        if self._tmp is not None:
            self._tmp.cleanup()

    def __enter__(self) -> "Checker":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- tracing ---------------------------------------------------------------------------

    def trace(self, ops: list[Op], deadline: float | None = None) -> tuple[Trace, list[str]]:
        """Run the traced driver on OPS, checking the structure's invariants after every
        operation; returns the trace and the driver's result lines (results and `!` lines).
        Raises RunFailure when the structure misbehaved (died, hung, exited early): its
        `finding` says how and in which operation. DEADLINE (time.monotonic()) bounds the run."""
        hist = self.workdir / "history"
        hist.write_text(history_text(ops))
        return self._run_traced(self.workdir / "pool", hist, "trace", create=True, check=True,
                                what=f"the traced run of {self.structure.name} died", ok=(0, 1),
                                ops=ops, deadline=deadline)

    def crash_free_findings(self, ops: list[Op], lines: list[str]) -> list[Finding]:
        """What the crash-free run (the output of `trace`) already shows: a result the model
        disagrees with, or an operation after which the structure's own check fails. Recovery
        may repair such damage, so no crash state would show it."""
        results = [line for line in lines if not line.startswith("!")]
        broken = [line.split(" ", 2) for line in lines if line.startswith("!invariant ")]
        _, want = model_run(ops)
        if results[:len(want)] != want:
            i = next((i for i, (a, b) in enumerate(zip(results, want)) if a != b),
                     min(len(results), len(want)))
            got = results[i] if i < len(results) else "nothing"
            return [Finding("wrong-value", f"without any crash, `{ops[i].text()}` returned `{got}`, the "
                            f"model `{want[i] if i < len(want) else 'nothing'}`",
                            ("no-crash", ops[i].kind if i < len(ops) else "end"))]
        if broken:
            i = int(broken[0][1])
            texts = [b[2] for b in broken if len(b) == 3]
            more = f" (and {len(texts) - 1} more)" if len(texts) > 1 else ""
            return [Finding("invariant-violation", f"without any crash, after `{ops[i].text()}` "
                            f"(operation {i}): {texts[0] if texts else '?'}{more}",
                            ("no-crash-invariant", _address_free(texts[0] if texts else "")))]
        return []

    def _run_traced(self, pool: Path, history: str | os.PathLike, tag: str, *, create: bool,
                    what: str, ok: tuple[int, ...] = (0,), check: bool = False,
                    ops: list[Op] | None = None, deadline: float | None = None) -> tuple[Trace, list[str]]:
        """`driver run` on POOL with HISTORY (the operations OPS), traced into workdir/TAG (with
        CHECK, invariants checked after every operation), supervised (harness/supervise.py);
        the trace and the result lines. A run that died, hung, stopped, left a process behind or
        ended without its `!end` line raises RunFailure; any other exit status outside OK raises
        DriverFailure(WHAT ...)."""
        ops = ops or []
        trace_path = self.workdir / tag
        results = self.workdir / f"{tag}.results"
        env = _clean_env()
        env["CRASHCHECK_TRACE"] = str(trace_path)
        argv = ([str(self.driver), "run", "--pool", str(pool)] + (["--create"] if create else [])
                + (["--check"] if check else []) + ["--results", str(results)])
        s = self.settings
        self.check_driver()
        self.budget.check()
        if self.budget.hard is not None:
            deadline = self.budget.hard if deadline is None else min(deadline, self.budget.hard)
        results.unlink(missing_ok=True)
        end = run_supervised(argv + ["--size", str(s.pool_size), str(history)], env=env,
                             output=self.workdir / f"{tag}.output", mem_bytes=(s.mem_mb << 20) + s.pool_size,
                             timeout_s=run_timeout_s(len(ops), s.run_timeout_ms, s.op_timeout_ms,
                                                     RUN_TIMEOUT_CAP_MS, deadline))
        if end.status in ("timeout", "stopped") and self.budget.expired():
            raise OutOfTime()        # the budget ended the run, not a hang of the structure
        try:
            lines = results.read_bytes().decode("utf-8", "replace").splitlines()
        except OSError:
            lines = []
        if "!ready" not in lines or end.code not in ok:
            self._setup_fault(trace_path, end.code, end.output, ready="!ready" in lines)
        failure = _run_failure(end, lines, ops)
        if failure is not None:
            raise RunFailure(failure, end)
        if end.code not in ok:
            raise DriverFailure(f"{what} ({end.how()}): {end.output.strip()[-300:]}")
        try:
            trace = read_trace(trace_path)
        except TraceError as exc:
            self._setup_fault(trace_path, end.code, end.output, ready=True)
            raise DriverFailure(f"the traced run left no readable trace: {exc}") from None
        if not trace.complete:
            self._setup_fault(trace_path, end.code, end.output, ready=True)
        return trace, lines

    def _setup_fault(self, trace_path: Path, status: int | None, stderr: str, ready: bool) -> None:
        """Raise SetupError if a failed traced run is the machine's fault, not the structure's:
        the work folder filled up, or the driver refused to start (exit 2 with its one-line
        reason before its `!ready` line: the pool could not be created or mapped)."""
        if workdirs.nearly_full(self.workdir, self.settings.pool_size) or "No space left on device" in stderr:
            raise workdirs.full_error(self.workdir)
        if status == 2 and not ready and not _began_any_operation(trace_path):
            lines = [line for line in stderr.strip().splitlines() if line.strip()]
            reason = lines[-1] if lines else "no reason given"
            raise SetupError(f"the driver of {self.structure.name} could not start: {reason}")

    # -- checking --------------------------------------------------------------------------

    def check(self, ops: list[Op], progress=None, crashes: bool = True,
              deadline: float | None = None) -> HistoryOutcome:
        """Judge one history: its crash-free run, then (with CRASHES) its crash states.
        DEADLINE (time.monotonic()) bounds the crash-free run."""
        t0 = time.monotonic()
        self.budget.check()
        follow = followup_ops(ops, self.key_kind, self.value_size) if self.settings.followup else []
        states = prefix_states(ops)
        texts = [op.text() for op in ops]
        hung = next((self._hung[tuple(texts[:k])] for k in range(1, len(ops) + 1)
                     if tuple(texts[:k]) in self._hung), None) if self._hung else None
        if hung is not None:
            return HistoryOutcome(ops, follow, None, [replace(hung)], elapsed=time.monotonic() - t0)
        try:
            trace, lines = self.trace(ops, deadline)
        except RunFailure as exc:
            f = exc.finding
            if f.cls == "operation-hang" and f.op_index is not None:
                # The driver is deterministic: any history with the same operations up to the one
                # that hung hangs there too. Shrinking tries dozens of such histories, each of which
                # would cost the whole timeout again.
                self._hung[tuple(texts[:f.op_index + 1])] = f
            return HistoryOutcome(ops, follow, None, [f], elapsed=time.monotonic() - t0)
        except DriverFailure as exc:
            f = Finding("operation-crash", str(exc), ("run-failure", str(exc)[:60]))
            return HistoryOutcome(ops, follow, None, [f], elapsed=time.monotonic() - t0)
        outcome = HistoryOutcome(ops, follow, trace, [])
        # The crash-free run must already agree with the model and keep the invariants.
        outcome.findings = self.crash_free_findings(ops, lines)
        if outcome.findings or not crashes:
            outcome.elapsed = time.monotonic() - t0
            return outcome
        runner = self.runner()
        checked_before = runner.stats.states
        follow_text = history_text(follow)
        by_group: dict[tuple[str, str], Finding] = {}
        verdicts: dict[tuple[int, int, int | None], tuple[Verdict, list[dict]]] = {}
        points = set()
        # Post-crash images to crash again inside their recovery: recovered fine, mid-operation,
        # some pending stores persisted and some lost (a half-done change is where recovery has
        # work), distinct images only.
        candidates: list[tuple[int, tuple[int, ...]]] = []
        seen_images: set[int] = set()
        # Crash points before the first operation fall in pool formatting and the structure's
        # create, which are set-up, not part of the history.
        # The same goes for a history's load phase (strategies.History.load).
        load = getattr(ops, "load", 0)
        first_op = next((i for i, ev in enumerate(trace.events) if ev.kind == "op_begin" and ev.addr == load),
                        len(trace.events))
        try:
            for out in explore(trace, options=self.settings.options(), strategy=self.settings.strategy,
                               limit=self.settings.limit, seed=self.settings.seed, runner=runner,
                               followup=follow_text, first_state=self._next_state, progress=progress,
                               start_event=first_op, stop=self.budget.expired):
                self._next_state = out.id + 1
                _count_point(outcome, points, out)
                if (out.point.op is not None and out.fp not in seen_images and out.result is not None
                        and out.result.ok and any(k < len(u.pieces) for u, k in zip(out.point.units, out.choice))
                        and any(k > 0 for k in out.choice)):
                    seen_images.add(out.fp)
                    candidates.append((out.point.index, tuple(out.choice)))
                for f in self._judge(trace, ops, states, follow, out, verdicts):
                    _add_finding(by_group, f)
            outcome.states_checked = runner.stats.states - checked_before
            if self.settings.recovery_crashes and candidates:
                for f in self.crash_recoveries(trace, ops, states, follow, candidates, outcome):
                    _add_finding(by_group, f)
        except (Stopped, OutOfTime):
            # What was judged before the stop stands; the rest of this history is unexplored.
            outcome.partial = True
            outcome.states_checked = max(0, runner.stats.states - checked_before)
        outcome.findings = list(by_group.values())
        outcome.elapsed = time.monotonic() - t0
        return outcome

    def _judge(self, trace: Trace, ops: list[Op], states: list[State], follow: list[Op],
               out: StateOutcome, cache: dict) -> list[Finding]:
        res = out.result
        if res is None:
            return []
        point = oracle_point(out.point, len(ops))
        key = (res.first, point.done, point.inflight)
        if key not in cache:
            verdict = judge_recovery(ops, point, result_dict(res), follow, states)
            leaked = leak_policy.unreachable(res.result) if verdict.ok or verdict.cls != "recovery-crash" else []
            cache[key] = (verdict, leaked)
        verdict, leaked = cache[key]
        leak_key = ("leak", res.first, out.point.index)
        found: list[Finding] = []
        if not verdict.ok:
            f = Finding(verdict.cls, verdict.detail, (verdict.cls, ""), point=out.point,
                        choice=out.choice, verdict=verdict, result=res)
            f.group = finding_group(trace, f)
            found.append(f)
        if leaked:
            if leak_key not in cache:
                index = cache.get("leak-index")
                if index is None:
                    index = cache["leak-index"] = leak_policy.LeakIndex(trace)
                objs = index.attribute(leaked, out.point.event)
                cache[leak_key] = (objs, leak_policy.expected(self.structure.known, objs,
                                                              index.touched_in_flight(out.point.event)))
            objs, known = cache[leak_key]
            first = objs[0]
            group_site = f"{first['site']['file']}:{first['site']['line']}" if first.get("site") else "?"
            # Expected and unexpected leaks from one allocation site are different findings.
            f = Finding("leak", leak_policy.describe(objs),
                        ("leak", group_site + (" (expected)" if known is not None else "")),
                        expected=known is not None, expected_reason=(known or {}).get("reason", ""),
                        point=out.point, choice=out.choice, result=res, leaks=objs)
            found.append(f)
        return found

    # -- shrinking a crash state -----------------------------------------------------------

    def recheck(self, trace: Trace, cp_index: int, choices: list[tuple[int, ...]], follow_text: str
                ) -> list[CheckResult]:
        """Check specific choice vectors at one crash point of TRACE (used by shrinking/replay)."""
        return self.state_checker(trace, cp_index, follow_text)(choices)

    def state_checker(self, trace: Trace, cp_index: int, follow_text: str):
        """Simulate TRACE up to crash point CP_INDEX once, with the runner's image following, and
        return a function that checks choice vectors there. Valid until the runner is used for
        anything else."""
        runner = self.runner()
        sim = Simulator.from_trace(trace, self.settings.options())
        runner.queue_base(trace.regions[0].image)
        for cp in sim.crash_points():
            if cp.patch:
                runner.queue_patch(encode_writes(cp.patch))
            if cp.index == cp_index:
                codec = StateCodec(cp, sim.image)
                break
        else:
            raise ValueError(f"no crash point {cp_index} in {trace.path}")

        def check(choices: list[tuple[int, ...]]) -> list[CheckResult]:
            ids = []
            for choice in choices:
                _, writes = codec.encode(tuple(choice))
                ids.append(self._next_state)
                runner.queue_state(self._next_state, writes, follow_text)
                self._next_state += 1
            answers = dict(runner.flush(self.budget.expired))
            return [answers[i] for i in ids]
        return check

    def point_at(self, trace: Trace, cp_index: int) -> SimPoint:
        sim = Simulator.from_trace(trace, self.settings.options())
        for cp in sim.crash_points():
            if cp.index == cp_index:
                return cp
        raise ValueError(f"no crash point {cp_index} in {trace.path}")

    # -- crashes inside recovery -----------------------------------------------------------

    def image_at(self, trace: Trace, cp_index: int, choice: tuple[int, ...]) -> tuple[SimPoint, bytes]:
        """The post-crash image of one crash state (for tracing its recovery)."""
        return self.images_at(trace, [(cp_index, choice)])[0]

    def images_at(self, trace: Trace, states: list[tuple[int, tuple[int, ...]]]
                  ) -> list[tuple[SimPoint, bytes]]:
        """The post-crash images of several crash states, in one pass over the trace."""
        wanted: dict[int, list[int]] = {}
        for i, (cp_index, _) in enumerate(states):
            wanted.setdefault(cp_index, []).append(i)
        out: list[tuple[SimPoint, bytes] | None] = [None] * len(states)
        sim = Simulator.from_trace(trace, self.settings.options())
        for cp in sim.crash_points():
            for i in wanted.pop(cp.index, []):
                _, writes = StateCodec(cp, sim.image).encode(tuple(states[i][1]))
                image = bytearray(sim.image.base)
                apply_writes(image, decode_writes(writes))
                out[i] = (cp, bytes(image))
            if not wanted:
                break
        if wanted:
            raise ValueError(f"no crash point {min(wanted)} in {trace.path}")
        return out

    def trace_recovery(self, image: bytes, tag: str = "recovery") -> Trace:
        """Run the structure's recovery (an empty history on IMAGE) with tracing on."""
        pool = self.workdir / f"{tag}.pool"
        pool.write_bytes(image)
        trace, _ = self._run_traced(pool, os.devnull, f"{tag}.trace", create=False,
                                    what="recovery of a post-crash image failed in the traced run")
        return trace

    def crash_recoveries(self, trace: Trace, ops: list[Op], states: list[State], follow: list[Op],
                         candidates: list[tuple[int, tuple[int, ...]]], outcome: HistoryOutcome
                         ) -> list[Finding]:
        """Crash inside the recovery of a few post-crash images; judge each second recovery
        against what the original crash allowed."""
        n = self.settings.recovery_crashes
        # Spread the picks over the history: evenly spaced candidates.
        picks = [candidates[round(i * (len(candidates) - 1) / max(1, n - 1))] for i in range(min(n, len(candidates)))]
        runner = self.runner()
        follow_text = history_text(follow)
        found: dict[tuple[str, str], Finding] = {}
        picks = list(dict.fromkeys(picks))
        for (cp_index, choice), (cp, image) in zip(picks, self.images_at(trace, picks)):
            try:
                rtrace = self.trace_recovery(image)
            except (DriverFailure, TraceError):
                continue      # the plain check of this state already judged its recovery (also
                #               when recovery misbehaves: it did the same under the runner)
            if not any(ev.kind in ("store", "ntstore") for ev in rtrace.events):
                continue      # recovery wrote nothing: crashing inside it changes nothing
            point = oracle_point(cp, len(ops))
            before = runner.stats.states
            rpoints: set[int] = set()
            for out in explore(rtrace, options=self.settings.options(), strategy=self.settings.strategy,
                               limit=self.settings.limit, seed=self.settings.seed, runner=runner,
                               followup=follow_text, first_state=self._next_state,
                               stop=self.budget.expired):
                self._next_state = out.id + 1
                _count_point(outcome, rpoints, out)
                res = out.result
                if res is None:
                    continue
                verdict = judge_recovery(ops, point, result_dict(res), follow, states)
                if verdict.ok:
                    continue
                f = Finding(verdict.cls, RECOVERY_CRASH_PREFIX + verdict.detail,
                            (verdict.cls, ""), point=out.point, choice=out.choice, verdict=verdict,
                            result=res, recovery_of=(cp_index, tuple(choice)), recovery_trace=rtrace,
                            history_point=point)
                f.group = finding_group(trace, f)
                _add_finding(found, f)
            outcome.states_checked += runner.stats.states - before
        return list(found.values())

    def finalize(self, outcome: HistoryOutcome, f: Finding) -> None:
        """Make F, found while fuzzing, ready to report: trace its history again (traces are
        deterministic, so its crash point has the same index), shrink its crash state, and
        recompute its group from the shrunk state."""
        if f.point is None or f.cls == "leak":
            return
        trace, _ = self.trace(outcome.ops)
        outcome.trace = trace
        if f.recovery_of is not None:
            cp_index, choice = f.recovery_of
            _, image = self.image_at(trace, cp_index, choice)
            rtrace = self.trace_recovery(image, "recovery-final")
            f.recovery_trace = rtrace
            f.point = self.point_at(rtrace, f.point.index)
            states = prefix_states(outcome.ops)
            orig = oracle_point(self.point_at(trace, cp_index), len(outcome.ops))
            f.history_point = orig
            self.shrink_state(rtrace, outcome.ops, states, outcome.followup, f, orig)
            f.group = finding_group(trace, f)
            return
        f.point = self.point_at(trace, f.point.index)
        if len(f.point.units) != len(f.choice):
            raise DriverFailure(f"{self.structure.name}: the same history traced twice gave different "
                                "traces (the structure or its driver is not deterministic)")
        self.shrink_state(trace, outcome.ops, prefix_states(outcome.ops), outcome.followup, f)
        f.group = finding_group(trace, f)

    def shrink_state(self, trace: Trace, ops: list[Op], states: list[State], follow: list[Op],
                     f: Finding, point: CrashPoint | None = None) -> None:
        """Move F to the state with the fewest lost pieces that still fails with F's class:
        first let whole units persist, then let each remaining unit keep as much as it can.
        Candidates are checked in batches (one pass over the trace per batch)."""
        cp = f.point
        radices = cp.radices
        follow_text = history_text(follow)
        point = point or oracle_point(cp, len(ops))

        check = self.state_checker(trace, cp.index, follow_text)

        def failing(cands: list[tuple[int, ...]]) -> list[bool]:
            out = []
            for res in check(cands):
                v = judge_recovery(ops, point, result_dict(res), follow, states)
                out.append(not v.ok and v.cls == f.cls)
            return out

        def release(choice: tuple[int, ...], moves: list[tuple[int, int]]) -> tuple[int, ...]:
            c = list(choice)
            for j, k in moves:
                c[j] = k
            return tuple(c)

        choice = tuple(f.choice)
        # 1. Units that can persist entirely, each alone; then all of them together.
        units = [j for j in range(len(choice)) if choice[j] < radices[j]]
        cands = [release(choice, [(j, radices[j])]) for j in units]
        ok = [j for j, good in zip(units, failing(cands) if cands else []) if good]
        if ok:
            together = release(choice, [(j, radices[j]) for j in ok])
            if len(ok) == 1 or failing([together])[0]:
                choice = together
            else:
                for j in ok:      # greedy, one at a time
                    cand = release(choice, [(j, radices[j])])
                    if failing([cand])[0]:
                        choice = cand
        # 2. For each unit still holding pieces back, the longest prefix that still fails.
        moves, cands = [], []
        for j in range(len(choice)):
            for k in range(radices[j] - 1, choice[j], -1):
                moves.append((j, k))
                cands.append(release(choice, [(j, k)]))
        best: dict[int, int] = {}
        for (j, k), good in zip(moves, failing(cands) if cands else []):
            if good and k > best.get(j, -1):
                best[j] = k
        if best:
            together = release(choice, list(best.items()))
            if len(best) == 1 or failing([together])[0]:
                choice = together
        if choice != tuple(f.choice):
            [res] = check([choice])
            v = judge_recovery(ops, point, result_dict(res), follow, states)
            pre = RECOVERY_CRASH_PREFIX if f.recovery_of is not None else ""
            f.choice, f.result, f.verdict, f.detail = choice, res, v, pre + v.detail


def _count_point(outcome: HistoryOutcome, seen: set[int], out: StateOutcome) -> None:
    """Count OUT's state as explored, and its crash point (with its legal states) once."""
    outcome.states_explored += 1
    if out.point.index not in seen:
        seen.add(out.point.index)
        outcome.crash_points += 1
        outcome.states_legal += out.point.legal


def _add_finding(groups: dict[tuple[str, str], Finding], f: Finding) -> None:
    """Keep the first finding of each group; later ones only add to its occurrences."""
    prev = groups.get(f.group)
    if prev is None:
        groups[f.group] = f
    else:
        prev.occurrences += f.occurrences


class DriverFailure(Exception):
    """The traced driver could not run the history."""


class RunFailure(DriverFailure):
    """The code under test misbehaved in a traced run; FINDING says how and where."""

    def __init__(self, finding: Finding, end: RunEnd) -> None:
        super().__init__(finding.detail)
        self.finding = finding
        self.end = end


def _run_failure(end: RunEnd, lines: list[str], ops: list[Op]) -> Finding | None:
    """The finding of a traced run that misbehaved, or None. Which operation was running: the
    one after the last result line (the driver flushes its results after every operation), or
    the one its `!orphan` line names; before the driver's `!ready` line it is the set-up (pool
    format, the structure's create, or recovery of an image). One cause is one bug: the group is
    the class, the kind of operation and how it ended (specs.oracle.end_key's words, shared with
    follow-up operations after recovery), never the operation's index or the history."""
    ready = "!ready" in lines
    orphan = next((int(x.split()[1]) for x in lines if x.startswith("!orphan ")), None)
    ended = any(x.startswith("!end ") for x in lines)
    stray = next((int(x.split()[1]) for x in lines if x.startswith("!stray ")), None)
    done = sum(1 for x in lines if not x.startswith("!"))
    cls, how, key = "operation-crash", end.how(), end.how_key()
    if orphan is not None or (end.status == "signal" and end.signal == 9 and ended):
        # The driver notices only after the kill has landed, which may be operations later: the
        # operation named is where it was noticed, so the group does not name its kind.
        how, key = "killed its parent process (crashcheck's supervisor)", "parent-killed"
        done = orphan if orphan is not None else done
    elif end.status in ("timeout", "stopped"):
        cls = "operation-hang"
    elif end.status == "parent-killed":
        pass
    elif end.status in ("signal", "exit") or end.memory_exhausted:
        if end.status == "exit" and end.code in (1, 2) and not ready:
            return None      # the driver's own errors (a usage error, a failed recovery)
    elif not ended and end.code == 0 and ops:
        how, key = "exited with status 0 before the history ended", "exit 0 early"
    elif stray is not None or end.stray:
        how, key = "left a process running (killed after the run)", "stray process"
        done = stray if stray is not None else done
    else:
        return None
    if done < len(ops) and ready:
        where, kind = f"`{ops[done].text()}` (operation {done})", ops[done].kind
    elif done >= len(ops) and ops:
        where, kind = "after the last operation", "end"
    else:
        where, kind = "the set-up (pool format, create or recovery)", "set-up"
    if key == "parent-killed" and kind != "set-up":
        where = ("an operation (the driver noticed it only at the end of the history)" if kind == "end"
                 else f"an operation (the driver noticed it after {where})")
        kind = ""
    detail = f"without any crash, {where} {how}"
    tail = end.output.strip()
    if tail:
        lines_ = tail.splitlines()[-5:]
        shown = " | ".join(lines_)
        detail += f"; its output ended: {shown[-400:]}"
    return Finding(cls, detail, (cls, f"{kind}: {key}" if kind else key),
                   op_index=done if done < len(ops) else None)



def _crash_site(trace: Trace, cp: SimPoint) -> int:
    if cp.event < len(trace.events):
        return trace.events[cp.event].site
    return 0xFFFFFFFF


def result_dict(res: CheckResult) -> dict:
    """A runner answer in the form specs.oracle.judge_recovery reads."""
    return {"status": res.status, "signal": res.signal, "exit": res.exit, "result": res.result,
            "stderr": res.stderr, "stray": res.stray, "output": res.output}


def _file_id(path: Path) -> tuple[int, int, int, int] | None:
    """What changes when a file is rebuilt: inode, size, modification time (ns), device."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_dev)


def _began_any_operation(trace_path: Path) -> bool:
    """The (possibly cut or missing) trace holds an op_begin: the driver got past its set-up."""
    try:
        return any(ev.kind == "op_begin" for ev in read_trace(trace_path, check_images=False).events)
    except (TraceError, OSError):
        return False


def _address_free(text: str) -> str:
    """A violation's text without addresses and numbers, so one broken rule is one bug across
    histories."""
    return re.sub(r"0x[0-9a-fA-F]+|[0-9]+", "?", text)[:80]


def _clean_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("CRASHCHECK_TRACE", None)
    return env


__all__ = ["Checker", "Finding", "HistoryOutcome", "RunFailure", "Settings", "followup_ops", "history_text", "key_text"]
