"""Client of the checker runner (crashsim/runner/, in C): spawns `DRIVER serve ...` and talks
the protocol of docs/runner-protocol.md.

Owns: the Python end of the wire. Requests are queued and sent in batches; the answers come back
one JSON line per request, in order. Writing a whole batch before reading could deadlock once both
pipes are full, so a batch is exchanged with poll(): requests are written while answers are read.

    with Runner([driver, "serve", "--size", str(size)], pool_base=base, pool_size=size) as r:
        r.load_base(trace.regions[0].image)
        r.queue_state(0, writes, "")
        [res] = r.flush()
"""
from __future__ import annotations

import json
import os
import re
import select
import struct
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from .errors import CrashcheckError

REQ = struct.Struct("<IIQ")
_STATE_HEAD = struct.Struct("<IIQI")    # a STATE request's head and its followup length
REQ_BASE, REQ_PATCH, REQ_STATE, REQ_RESET, REQ_QUIT, REQ_LAZY, REQ_LIMIT, REQ_LAZY_BODY, REQ_FOLLOWUP = range(1, 10)
FU_STORED = 0xFFFFFFFF                  # a followup length that names the runner's stored followup
_STATE_KINDS = (REQ_STATE, REQ_LAZY)
_KEPT = (REQ_LIMIT, REQ_LAZY_BODY, REQ_FOLLOWUP)   # one of each is in force; the next replaces it
STATUSES = ("ok", "signal", "exit", "timeout", "oom", "runner-died")
# Most answers are duplicates; parse those without the JSON decoder, and acknowledgements too
# (a patch's and a followup's per crash point).
_DUP = re.compile(rb'\{"state":(\d+),"dup_of":(\d+)\}')
_ACK = re.compile(rb'\{"ack":"([a-z-]+)","id":(\d+)\}')


class RunnerError(CrashcheckError):
    """The runner could not be started or broke the protocol; the message carries its stderr."""


class Stopped(Exception):
    """The caller's stop condition became true while waiting for answers (a time budget ran
    out, or the user interrupted the run). The runner was killed; unanswered states are lost."""


class _RunnerDied(Exception):
    """The runner process ended in the middle of an exchange (internal: flush() may restart it)."""

    def __init__(self, msg: str, lines: list[bytes]) -> None:
        super().__init__(msg)
        self.lines = lines


@dataclass(frozen=True)
class CheckResult:
    """How one check ended. Shared by every state whose answer was identical (see `first`).

    status   "ok" (exit 0), "exit" (non-zero exit), "signal", "timeout" (wall clock or CPU
             limit, or it stopped itself: then signal is the stop signal), "oom" (ended
             abnormally with its address-space limit exhausted), "runner-died" (the runner
             process died while it checked this state: the check killed its parent; made up by
             the client, which then started a new runner, see Runner(restart=True))
    signal   the signal that ended it, or None
    exit     its exit status, or None
    result   the check's JSON object, or None if it wrote none or an invalid one
    stderr   the last lines of its stdout/stderr
    output   the raw text it wrote when that was not one JSON object, else None
    first    the state that first produced this answer
    stray    the check left a process running after it ended (the runner killed it)
    lazy     for a lazy execution (Runner.queue_lazy): {"branches": [classes at each branch
             point], "allowed": [[group, [variants]], ...] for the groups it narrowed,
             "diverged": 0/1, "truncated": 0/1}; else None
    limit_ms a check that ran out of time under the shorter limit of Runner.queue_limit: that
             limit (it was not given the full one); else None
    """
    status: str
    signal: int | None
    exit: int | None
    result: dict[str, Any] | None
    stderr: str
    output: str | None
    first: int
    stray: bool = False
    lazy: dict[str, Any] | None = None
    limit_ms: int | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok" and self.result is not None


@dataclass
class RunnerStats:
    requests: int = 0
    states: int = 0
    dups: int = 0          # answers the runner deduplicated
    wait_s: float = 0.0    # time spent waiting for the runner inside flush()
    bytes_out: int = 0
    restarts: int = 0      # runners started again after a check killed one


class Runner:
    """One runner process. Not thread-safe."""

    def __init__(self, argv: Sequence[str], *, pool_base: int | None = None, pool_size: int | None = None,
                 env: dict[str, str] | None = None, cwd: str | None = None,
                 stall_timeout: float = 120.0, restart: bool = False,
                 vet: Callable[[CheckResult], None] | None = None) -> None:
        """RESTART: when the runner dies while it checks a state (a check that kills its parent
        cannot be prevented), answer that state "runner-died", start a new runner, bring its base
        to where the old one's was, and go on with the remaining requests, instead of raising
        RunnerError. VET: called with every new answer before it is handed on; what it raises
        ends the exchange (harness/target/own_fault.py: a check that died in crashcheck's own code)."""
        self.argv = list(argv)
        self.vet = vet
        self.stall_timeout = stall_timeout
        self.restart = restart
        self._env, self._cwd = env, cwd
        self._pool_want = (pool_base, pool_size)
        # The requests that made the current base: the last BASE and the PATCHes after it, and
        # the last request since that base of each kind the runner keeps (_KEPT), by kind.
        self._base_log: list[bytes] = []
        self._base_kept: dict[int, bytes] = {}
        self._rest = b""
        self._queue: list[bytes] = []
        self._kinds: list[int] = []
        self._queued_states = 0        # states in _queue (explore asks after every state)
        self._next_id = 0
        self.next_state = 0            # state ids must increase within a session (dup_of names them)
        self._unique: dict[int, CheckResult] = {}
        self._fu_text, self._fu_bytes = "", b""      # the last follow-up queued, encoded
        self._fu_stored: str | None = None            # the follow-up the runner keeps (REQ_FOLLOWUP)
        self.stats = RunnerStats()
        self._start()

    def _start(self) -> None:
        """Spawn the runner process and read its hello."""
        pool_base, pool_size = self._pool_want
        # Bind every symbol at start-up: the runner's reused check process restores its memory
        # (the GOT included) after each check, so lazily bound calls would be bound again and
        # again (docs/runner-protocol.md, "The reused check process").
        env = dict(os.environ if self._env is None else self._env, LD_BIND_NOW="1")
        cwd = self._cwd
        self._err = tempfile.TemporaryFile()
        try:
            self._proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=self._err, env=env, cwd=cwd)
        except OSError as exc:
            raise RunnerError(f"cannot start the runner {self.argv[0]}: {exc.strerror}") from None
        self._in = self._proc.stdin.fileno()
        self._out = self._proc.stdout.fileno()
        os.set_blocking(self._in, False)
        self._rest = b""
        self.closed = False
        [hello] = self._read_lines(1, b"", startup=True)
        if "error" in hello:
            self._fail(f"runner refused to start: {hello['error']}")
        if hello.get("runner") != 1:
            self._fail(f"not a crashcheck runner (first line {hello!r})")
        self.hello = hello
        self._fu_stored = None
        self.pool_base = int(hello["pool"], 16)
        self.pool_size = int(hello["size"])
        self.pid = int(hello["pid"])
        if pool_base is not None and pool_base != self.pool_base:
            self._fail(f"runner maps the pool at 0x{self.pool_base:x}, the trace's pool is at "
                       f"0x{pool_base:x} (set CRASHCHECK_POOL_ADDR for both)")
        if pool_size is not None and pool_size != self.pool_size:
            self._fail(f"runner's pool has {self.pool_size} bytes, the trace's {pool_size} "
                       f"(pass the trace's size to the driver)")

    # -- queueing --------------------------------------------------------------------------

    def _push(self, kind: int, body: bytes, ident: int | None = None) -> None:
        if ident is None:
            ident = self._next_id
            self._next_id += 1
        self._queue.append(REQ.pack(kind, len(body), ident) + body)
        self._kinds.append(kind)
        self._queued_states += kind in _STATE_KINDS

    def queue_base(self, path: str | os.PathLike) -> None:
        """Load an image file as the base (the runner zeroes the pool first)."""
        self._push(REQ_BASE, os.fsencode(os.path.abspath(path)))
        # a restarted runner is brought back from the last base on (_base_after): a followup
        # stored before it would not be sent again, so the next state stores its own anew
        self._fu_stored = None

    def queue_patch(self, writes: bytes) -> None:
        """Apply encoded writes (crashcheck.crashsim.image.encode_writes) to the base."""
        self._push(REQ_PATCH, writes)

    def queue_state(self, state: int, writes: bytes, followup: str = "") -> None:
        """Check base + WRITES as state number STATE. Ids must increase within a session: the
        runner's dup_of answers name earlier states by id."""
        if state < self.next_state:
            raise ValueError(f"state id {state} reused (the next free id is {self.next_state})")
        self.next_state = state + 1
        # one pack for the request head and the body's followup length: this runs per state
        if self._store_followup(followup):
            self._queue.append(_STATE_HEAD.pack(REQ_STATE, 4 + len(writes), state, FU_STORED) + writes)
        else:
            fu = self._fu_bytes
            self._queue.append(_STATE_HEAD.pack(REQ_STATE, 4 + len(fu) + len(writes), state, len(fu)) + fu + writes)
        self._kinds.append(REQ_STATE)
        self._queued_states += 1

    def _store_followup(self, followup: str) -> bool:
        """Whether a state may name FOLLOWUP as the runner's stored followup, queueing a
        FOLLOWUP request first when it is not the one stored: the explorer hands every state of
        a crash point the same text (a continuation's is a few KiB), which then crosses the pipe
        and the runner's hand-over once per point, not once per state. An empty one is sent as it
        is (it costs nothing)."""
        if followup is not self._fu_text:
            self._fu_text, self._fu_bytes = followup, followup.encode()
        if not followup or not self.hello.get("followup_stored"):
            return False
        if followup is not self._fu_stored and followup != self._fu_stored:
            self._push(REQ_FOLLOWUP, self._fu_bytes)
            self._fu_stored = followup
        return True

    def queue_lazy(self, state: int, spec: bytes, followup: str = "", writes: bytes = b"") -> None:
        """One lazy execution (crashsim/lazy.py builds SPEC: groups of undetermined lines with
        their variants, and the decision list); its result carries the exploration log."""
        if not self.hello.get("lazy"):
            raise RunnerError("this driver's code was compiled without check loads: lazy "
                              "exploration cannot see its reads (rebuild it with the crashcheck "
                              "pass, without CRASHCHECK_PASS_CHECK_LOADS=0)")
        if state < self.next_state:
            raise ValueError(f"state id {state} reused (the next free id is {self.next_state})")
        self.next_state = state + 1
        if self._store_followup(followup):
            head = struct.pack("<I", FU_STORED)
        else:
            head = struct.pack("<I", len(self._fu_bytes)) + self._fu_bytes
        self._push(REQ_LAZY, head + struct.pack("<I", len(spec)) + spec + writes, state)

    def queue_lazy_body(self, body: bytes) -> None:
        """Store BODY (crashsim/lazy.py LazyPlan.body: a crash point's groups) in the runner, for
        the LAZY requests after it whose spec names it (LazyPlan.spec_stored): a point's plan
        then crosses the pipe once, not once per execution."""
        self._push(REQ_LAZY_BODY, body)

    @property
    def lazy_body_supported(self) -> bool:
        return bool(self.hello.get("lazy_body"))

    @property
    def lazy_supported(self) -> bool:
        return bool(self.hello.get("lazy"))

    def queue_limit(self, timeout_ms: int, after: int = 0, short_ms: int = 0) -> None:
        """The wall-clock limit of the states queued after this: TIMEOUT_MS, until AFTER of them
        (0: any number) have run out of it; the states after those get SHORT_MS, and an answer
        that runs out of that says so (CheckResult.limit_ms). Until the next limit or base (a base
        puts back the limit the runner started with)."""
        self._push(REQ_LIMIT, struct.pack("<III", timeout_ms, after, short_ms))

    def queue_reset(self) -> None:
        self._push(REQ_RESET, b"")

    @property
    def queued(self) -> int:
        return len(self._queue)

    @property
    def queued_states(self) -> int:
        return self._queued_states

    def flush(self, stop: Callable[[], bool] | None = None) -> list[tuple[int, CheckResult]]:
        """Send every queued request; return (state id, result) for the queued states, in order.
        Raises RunnerError if the runner rejects a request or dies, and Stopped (after killing
        the runner) if STOP() becomes true before every answer is in."""
        if not self._queue:
            return []
        reqs, kinds = self._queue, self._kinds
        self._queue, self._kinds = [], []
        self._queued_states = 0
        self.stats.requests += len(kinds)
        answers: list[dict[str, Any]] = []
        # The runner holds answers while more requests are buffered, so when it dies, answers it
        # had computed may die with it: which request killed it is not known yet. Then the
        # unanswered requests go to a new runner one at a time (each answered at once) until the
        # one that kills it again is found, and batching resumes after it.
        careful = False
        while len(answers) < len(reqs):
            start = len(answers)
            chunk = reqs[start:start + 1] if careful else reqs[start:]
            payload = b"".join(chunk)
            self.stats.bytes_out += len(payload)
            try:
                answers += self._read_lines(len(chunk), payload, stop=stop)
            except _RunnerDied as died:
                answers += self._parse(died.lines)
                i = len(answers)          # the first request without an answer
                if not self.restart or (careful and kinds[i] not in _STATE_KINDS):
                    self._fail(str(died))
                if careful:               # request i alone killed it: a check killed its runner
                    _, _, sid = REQ.unpack_from(reqs[i])
                    answers.append({"state": sid, "status": "runner-died", "signal": None, "exit": None,
                                    "result": None, "stderr": "", "dup_of": None})
                careful = not careful
                self._respawn(*self._base_after(reqs[:len(answers)], kinds[:len(answers)]))
        self._base_log, self._base_kept = self._base_after(reqs, kinds)
        out = []
        for kind, ans in zip(kinds, answers):
            if "error" in ans:
                raise RunnerError(f"runner rejected a request: {ans['error']}")
            if kind not in _STATE_KINDS:
                continue
            self.stats.states += 1
            if type(ans) is tuple:        # _parse: a duplicate's short answer, most of them
                sid, dup = ans
            else:
                sid, dup = ans["state"], ans.get("dup_of")
            if dup is not None:
                self.stats.dups += 1
                res = self._unique.get(dup)
                if res is None:
                    raise RunnerError(f"runner answered state {sid} as a duplicate of unknown state {dup}")
            else:
                res = CheckResult(ans["status"], ans["signal"], ans["exit"], ans["result"],
                                  ans["stderr"], ans.get("output"), sid, bool(ans.get("stray")),
                                  ans.get("lazy"), ans.get("limit_ms"))
                self._unique[sid] = res
                if self.vet is not None:
                    self.vet(res)
            out.append((sid, res))
        return out

    def _base_after(self, reqs: list[bytes], kinds: list[int]) -> tuple[list[bytes], dict[int, bytes]]:
        """The requests that make the base after REQS (which follow the current base): the last
        base and the patches after it, and by kind the last limit since that base (a restarted
        runner counts the states out of time anew), stored lazy body and stored followup (the
        requests after them name them). Linear in REQS: the log is copied once per exchange,
        not once per patch, and a kept kind is replaced in the dict (a crash point's followup
        used to rebuild the whole log: quadratic in the crash points of a trace)."""
        log, kept = self._base_log, self._base_kept
        fresh = False                  # LOG and KEPT are this call's own (not the current base's)
        for req, kind in zip(reqs, kinds):
            if kind == REQ_BASE:
                log, kept, fresh = [req], {}, True
            elif kind == REQ_PATCH or kind in _KEPT:
                if not fresh:
                    log, kept, fresh = list(log), dict(kept), True
                if kind == REQ_PATCH:
                    log.append(req)
                else:
                    kept[kind] = req
        return log, kept

    def _respawn(self, base_log: list[bytes], kept: dict[int, bytes]) -> None:
        """A new runner process in place of a dead one, its base rebuilt from BASE_LOG (the base
        and its patches), then the requests in KEPT (a limit, a lazy body, a followup)."""
        self.close(kill=True)
        self._start()
        self.stats.restarts += 1
        replay = base_log + list(kept.values())
        if replay:
            answers = self._read_lines(len(replay), b"".join(replay))
            bad = next((a for a in answers if "error" in a), None)
            if bad is not None:
                self._fail(f"the restarted runner rejected the base: {bad['error']}")

    # -- convenience -------------------------------------------------------------------------

    def load_base(self, path: str | os.PathLike) -> None:
        self.queue_base(path)
        self.flush()

    def patch(self, writes: bytes) -> None:
        self.queue_patch(writes)
        self.flush()

    def check(self, states: Sequence[tuple[int, bytes, str]]) -> list[tuple[int, CheckResult]]:
        for sid, writes, followup in states:
            self.queue_state(sid, writes, followup)
        return self.flush()

    # -- the wire ----------------------------------------------------------------------------

    def _stderr_tail(self, limit: int = 2000) -> str:
        try:
            self._err.seek(0, os.SEEK_END)
            size = self._err.tell()
            self._err.seek(max(0, size - limit))
            return self._err.read().decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            return ""

    def _fail(self, msg: str) -> None:
        self.close(kill=True)
        tail = self._stderr_tail()
        raise RunnerError(msg + (f"; runner stderr: {tail}" if tail else ""))

    def _read_lines(self, n: int, payload: bytes, startup: bool = False,
                    stop: Callable[[], bool] | None = None) -> list[dict[str, Any]]:
        """Write PAYLOAD while reading N answer lines (poll-driven, so neither side blocks).
        STOP is polled at least every 200 ms."""
        lines: list[bytes] = []
        buf = self._rest
        view = memoryview(payload)
        pos = 0
        poller = select.poll()
        if payload:
            poller.register(self._in, select.POLLOUT)
        poller.register(self._out, select.POLLIN)
        last = time.monotonic()
        t0 = last
        while True:
            if len(lines) < n and b"\n" in buf:
                # one split per chunk read (cutting a line at a time copies the rest each time)
                parts = buf.split(b"\n")
                buf = parts.pop()
                need = n - len(lines)
                if len(parts) > need:         # more lines than asked for: keep them for later
                    buf = b"\n".join(parts[need:] + [buf])
                    del parts[need:]
                lines += parts
            if len(lines) >= n:
                break
            if stop is not None and stop():
                self.close(kill=True)
                raise Stopped(f"stopped after {len(lines)} of {n} answers")
            events = poller.poll(200 if stop is not None else 1000)
            if not events:
                if self._proc.poll() is not None:
                    self._rest = buf
                    raise _RunnerDied(f"runner exited with status {self._proc.returncode} "
                                      f"after {len(lines)} of {n} answers", lines)
                if time.monotonic() - last > self.stall_timeout:
                    self._fail(f"runner made no progress for {self.stall_timeout:.0f} s")
                continue
            for fd, ev in events:
                if fd == self._in:
                    if ev & (select.POLLERR | select.POLLHUP):
                        poller.unregister(self._in)
                        continue
                    try:
                        pos += os.write(self._in, view[pos:pos + (1 << 20)])
                    except BlockingIOError:
                        pass
                    except BrokenPipeError:
                        poller.unregister(self._in)
                        continue
                    if pos >= len(payload):
                        poller.unregister(self._in)
                else:
                    chunk = os.read(self._out, 1 << 20)
                    if not chunk:
                        self._proc.wait()
                        what = "could not start" if startup else "died"
                        msg = (f"runner {what} (status {self._proc.returncode}) "
                               f"after {len(lines)} of {n} answers")
                        if startup:
                            self._fail(msg)
                        raise _RunnerDied(msg, lines)
                    buf += chunk
                    last = time.monotonic()
        self._rest = buf
        if not startup:
            self.stats.wait_s += time.monotonic() - t0
        return self._parse(lines)

    def _parse(self, lines: list[bytes]) -> list[dict[str, Any] | tuple[int, int]]:
        """The answer LINES as dicts, but a duplicate's `{"state":N,"dup_of":M}` as (N, M):
        most answers are those, and flush needs only the two numbers (no dict built per state)."""
        out = []
        match, ack = _DUP.fullmatch, _ACK.fullmatch
        try:
            for line in lines:
                m = match(line)
                if m:
                    out.append((int(m[1]), int(m[2])))
                elif (a := ack(line)):
                    out.append({"ack": a[1].decode(), "id": int(a[2])})
                else:
                    out.append(json.loads(line))
        except json.JSONDecodeError as exc:
            self._fail(f"runner sent a line that is not JSON ({exc})")
        return out

    def close(self, kill: bool = False) -> int | None:
        """Ask the runner to quit (or kill it); returns its exit status."""
        if self.closed:
            return self._proc.returncode
        self.closed = True
        if not kill and self._proc.poll() is None:
            try:
                os.set_blocking(self._in, True)
                os.write(self._in, REQ.pack(REQ_QUIT, 0, self._next_id))
                self._proc.stdin.close()
                self._proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                kill = True
        if kill and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        for f in (self._proc.stdin, self._proc.stdout):
            try:
                f.close()
            except OSError:
                pass
        return self._proc.returncode

    def __enter__(self) -> "Runner":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close(kill=exc[0] is not None)

    def __del__(self) -> None:
        if not getattr(self, "closed", True):
            self.close(kill=True)
