"""The progress display of a fuzz run (`crashcheck fuzz`, `crashcheck campaign`) on stderr.

Owns turning the run's Progress reports (harness/run/results.py) into a live line on a terminal,
or into a line every PRINT_EVERY_S seconds otherwise, or nothing with --quiet. Never changes what
a run does: it only reads the reports.
"""
from __future__ import annotations

import sys
import time

from rich.console import Console
from rich.live import Live
from rich.text import Text

from crashcheck.harness.core.counts import big, per_second
from crashcheck.harness.run.results import Progress

PRINT_EVERY_S = 10.0             # without a terminal: a progress line this often at most


def states_text(p: Progress, elapsed: float) -> str:
    """The progress line's account of crash states: executions and covered points when lazy."""
    if p.executions and p.executions != p.states:
        return (f"{big(p.executions)} executions ({big(per_second(p.executions, elapsed))}/s) covering "
                f"{big(p.states)} crash states, {p.complete} of {p.points} crash points complete")
    return f"{big(p.states)} crash states checked ({big(per_second(p.states, elapsed))}/s)"


class ProgressDisplay:
    """Call it with each report; stop() when the run is over (a live line is then removed)."""

    def __init__(self, console: Console, quiet: bool) -> None:
        self.quiet = quiet
        self.last = time.monotonic()
        self.live: Live | None = None
        if not quiet and console.is_terminal:
            self.live = Live(Text("starting..."), console=console, transient=True, refresh_per_second=4)
            self.live.start()

    def __call__(self, p: Progress) -> None:
        el = max(p.elapsed, 1e-6)
        if self.live is not None:
            self.live.update(Text(f"{p.structure}{' --bug ' + p.bug if p.bug else ''}: "
                                  f"{p.histories} histories, {states_text(p, el)}, {p.bugs} bugs so far, "
                                  f"{el:.0f} s"))
            return
        if self.quiet or time.monotonic() - self.last < PRINT_EVERY_S:
            return
        self.last = time.monotonic()
        print(f"crashcheck: {p.structure}: {p.histories} histories, {states_text(p, el)}, "
              f"{p.bugs} bugs so far", file=sys.stderr)

    def stop(self) -> None:
        if self.live is not None:
            self.live.stop()


__all__ = ["ProgressDisplay", "states_text"]
