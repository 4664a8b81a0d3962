"""The Python garbage collector's settings for a crashcheck command.

Owns: `tune()`, called once by the `crashcheck` command before it runs (and by the bench that
measures what fuzz runs, bench/crashsim_throughput); worker processes forked by the command
inherit it. Never turns the collector off (a long fuzz run makes reference cycles: Hypothesis's
data, tracebacks) and never changes it in a process crashcheck does not own (the pytest plugin
runs in the user's pytest).
"""
from __future__ import annotations

import gc

# Container objects allocated, net, between two collections of the youngest generation
# (CPython's default is 700). Exploring crash states allocates a few containers per checked
# state (its outcome, its keys in the dedup maps, its answer), most of which live until their
# batch's answers are in (256 states): with the default a young collection ran every hundred
# states or so and moved each batch into the older generations, whose collections walk the
# trace and everything else alive. A young collection of 100,000 objects takes a few ms, and
# the cycles it frees meanwhile are a few MB at most. Measured (bench/README.md, issue 51):
# woart's continuation 5.5% and wort's 3.5% more checked states per CPU-second.
YOUNG = 100_000


def tune() -> None:
    """Raise the youngest generation's threshold to YOUNG (the older two keep theirs); a
    higher one set by the embedding program is kept."""
    young, older, oldest = gc.get_threshold()
    if 0 < young < YOUNG:
        gc.set_threshold(YOUNG, older, oldest)
