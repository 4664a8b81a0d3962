"""Reaching given crash states of a trace again, outside a full exploration.

Owns going back to one crash point of a trace (by its index, which is the same on every run of
the same history: traces are deterministic), building the post-crash image of a chosen state,
and checking chosen states there with the runner. Shrinking (harness/check/state_shrink.py), crashes
inside recovery (harness/check/recovery_crashes.py) and replay (harness/cli/cmd_replay.py) use it.
"""
from __future__ import annotations

from typing import Callable

from crashcheck.crashsim.explore import queue_initial_image
from crashcheck.crashsim.image import apply_writes, decode_writes, encode_writes
from crashcheck.crashsim.runner_client import CheckResult
from crashcheck.crashsim.simulate import CrashPoint, Simulator
from crashcheck.crashsim.states import StateCodec
from crashcheck.crashsim.trace import Trace
from crashcheck.harness.check.session import Session


def point_at(session: Session, trace: Trace, cp_index: int) -> CrashPoint:
    """Crash point CP_INDEX of TRACE; ValueError if the trace has no such point."""
    sim = Simulator.from_trace(trace, session.settings.options())
    for cp in sim.crash_points(wanted=lambda k: k == cp_index):
        if cp.index == cp_index:
            return cp
    raise ValueError(f"no crash point {cp_index} in {trace.path}")


def images_at(session: Session, trace: Trace, states: list[tuple[int, tuple[int, ...]]]
              ) -> list[tuple[CrashPoint, bytes]]:
    """The post-crash images of several crash states (point index, choice), in one pass over
    the trace."""
    wanted: dict[int, list[int]] = {}
    for i, (cp_index, _) in enumerate(states):
        wanted.setdefault(cp_index, []).append(i)
    out: list[tuple[CrashPoint, bytes] | None] = [None] * len(states)
    sim = Simulator.from_trace(trace, session.settings.options())
    for cp in sim.crash_points(wanted=wanted.__contains__):
        for i in wanted.pop(cp.index, []):
            _, writes = StateCodec(cp, sim.image).encode(tuple(states[i][1]))
            image = bytearray(sim.image.base)
            apply_writes(image, decode_writes(writes))
            out[i] = (cp, bytes(image))
        if not wanted:
            break
    if wanted:
        raise ValueError(f"no crash point {min(wanted)} in {trace.path}")
    return out        # type: ignore[return-value]


def image_at(session: Session, trace: Trace, cp_index: int, choice: tuple[int, ...]) -> tuple[CrashPoint, bytes]:
    """The post-crash image of one crash state (for tracing its recovery)."""
    return images_at(session, trace, [(cp_index, choice)])[0]


def state_checker(session: Session, trace: Trace, cp_index: int, follow_text: str,
                  limit: tuple[int, int, int] | None = None
                  ) -> Callable[[list[tuple[int, ...]]], list[CheckResult]]:
    """Simulate TRACE up to crash point CP_INDEX once, with the runner's image following, and
    return a function that checks choice vectors there (with the runner's own time limit, or
    LIMIT: Runner.queue_limit's, counted from the first check). Valid until the runner is used for
    anything else."""
    runner = session.runner(trace)
    sim = Simulator.from_trace(trace, session.settings.options())
    queue_initial_image(runner, trace, sim)      # a base: the runner's own limit again
    for cp in sim.crash_points(wanted=lambda k: k == cp_index):
        if cp.patch:
            runner.queue_patch(encode_writes(cp.patch))
        if cp.index == cp_index:
            codec = StateCodec(cp, sim.image)
            break
    else:
        raise ValueError(f"no crash point {cp_index} in {trace.path}")
    if limit is not None:
        runner.queue_limit(*limit)

    def check(choices: list[tuple[int, ...]]) -> list[CheckResult]:
        ids = []
        session.next_state = session.free_state_id()
        for choice in choices:
            _, writes = codec.encode(tuple(choice))
            ids.append(session.next_state)
            runner.queue_state(session.next_state, writes, follow_text)
            session.next_state += 1
        answers = dict(runner.flush(session.budget.expired))
        return [answers[i] for i in ids]
    return check


__all__ = ["image_at", "images_at", "point_at", "state_checker"]
