"""What a generated target is, drawn from its seed: one dataclass of knobs per target.

A target is a structure (an adapter built with `crashcheck build`, fuzzed) or a program (built with
crashcheck-cc, checked with `crashcheck run`). Structures come in families of FAMILY consecutive
seeds sharing one build: each seed of a family is one seeded-"bug" variant (`--bug v<seed>`) of the
family's source, whose knobs are #if blocks of that source, so a family costs one build instead of
FAMILY. Every knob is legal code a user could write; none is a crash-consistency bug except `bug`
(an ordering bug, so that runs find something and write records to replay)."""
from __future__ import annotations

import random
from dataclasses import dataclass, field

FAMILY = 6                        # structure seeds per build

# a structure with 2^41+ states at a fence needs more than 5 s for its first history to end (and
# so to reach the summary's counts); these few targets are the brief's "few long ones"
BIG_BUDGET_S = 20

# phases a fault can hit: what calls the code that misbehaves
STRUCTURE_PHASES = ("create", "insert", "recover", "dump", "check", "lookup")
PROGRAM_PHASES = ("checker", "recover", "program")
# a hang in the program itself costs crashcheck's whole traced-run limit (60 s) per run: rarer
PROGRAM_PHASE_WEIGHTS = (9, 9, 2)
ACTIONS = ("loop", "sleep", "segv", "abort", "exit0", "exit3", "stop", "noise")


@dataclass
class Knobs:
    """The hostile code of one target (both kinds read the same knobs)."""
    memset: int = 0               # bytes memset in the scratch area before a fence, never flushed
    pending: int = 0              # distinct cache lines given one unflushed 8-byte store each
    wide: int = 0                 # a 16- or 32-byte vector store (0: none)
    torn: bool = False            # an 8-byte store straddling two cache lines
    nt: bool = False              # a non-temporal store (persisted by the next fence)
    nondet: str = ""              # "", "time", "pid", "addr": scratch values (and extra stores) from it
    fault_phase: str = ""         # where the fault is ("" none)
    fault_action: str = ""        # what it does (ACTIONS)
    fault_after_crash: bool = True  # recover/checker faults only on an image a crash left
    threads: int = 0              # threads each operation starts and joins (they store to scratch)
    noise: int = 0                # 0 quiet, 1 a line per operation on stdout and stderr, 2 4 MB once
    bug: bool = False             # publishes before persisting: a lost-durable-write / checker failure
    unflushed: bool = False       # the memset / pending lines are never flushed (scratch nobody reads)

    @property
    def nondeterministic(self) -> bool:
        return bool(self.nondet)


@dataclass
class Target:
    seed: int
    kind: str                     # "structure" | "program"
    lang: str                     # "c" | "c++"
    knobs: Knobs
    budget: int                   # seconds given to each fuzz (structures) or run (programs)
    max_ops: int = 10             # fuzz --max-ops (structures); operations of the program's run
    own_new: bool = False         # C++ structure: its own operator new/delete into the pool (old style)
    include_cpp: bool = False     # C++ structure: nodes in a .cpp the built source #includes (--pm-malloc)
    markers: str = "op"           # program: "op" (crashcheck_op_begin) | "pmreorder" | "none"
    mapper: str = "libpmem"       # program: "libpmem" (pmem_map_file) | "pool" (crashcheck_pool_open)
    family: list[int] = field(default_factory=list)   # structure: the seeds sharing its build

    @property
    def name(self) -> str:
        return f"sf{self.family[0]}" if self.kind == "structure" else f"sfp{self.seed}"

    @property
    def bug_name(self) -> str:
        return f"v{self.seed}"

    def describe(self) -> str:
        k = self.knobs
        bits = [self.kind, self.lang]
        for name in ("memset", "pending", "wide"):
            if getattr(k, name):
                bits.append(f"{name}={getattr(k, name)}")
        bits += [name for name in ("unflushed", "torn", "nt", "bug") if getattr(k, name)]
        if k.nondet:
            bits.append(f"nondet={k.nondet}")
        if k.fault_phase:
            bits.append(f"fault={k.fault_phase}:{k.fault_action}" + ("@crash" if k.fault_after_crash else ""))
        if k.threads:
            bits.append(f"threads={k.threads}")
        if k.noise:
            bits.append(f"noise={k.noise}")
        if self.own_new:
            bits.append("own-new")
        if self.include_cpp:
            bits.append("included-cpp")
        bits.append(f"ops={self.max_ops}")
        bits.append(f"budget={self.budget}")
        return " ".join(bits)


def _knobs(rng: random.Random, phases: tuple[str, ...], weights: tuple[int, ...]) -> Knobs:
    k = Knobs()
    # big counts are the point of a few targets, not all: a run of one costs a whole budget
    roll = rng.random()
    if roll < 0.07:
        k.memset = rng.choice([328, 1024, 4096, 16384])          # 2^41 .. 2^2048 states at one fence
    elif roll < 0.12:
        k.pending = rng.choice([65, 70, 1100])                   # past 2^64 / past 2^1000
    elif roll < 0.30:
        k.memset = rng.choice([8, 24, 40, 64])
    k.wide = rng.choice([0, 0, 16, 32])
    k.torn = rng.random() < 0.25
    k.nt = rng.random() < 0.25
    k.nondet = rng.choice(["", "", "", "", "time", "pid", "addr"])
    if rng.random() < 0.35:
        k.fault_phase = rng.choices(phases, weights)[0]
        k.fault_action = rng.choice(ACTIONS)
        k.fault_after_crash = rng.random() < 0.8
    k.threads = rng.choice([0, 0, 0, 2])
    k.noise = rng.choice([0, 0, 0, 1, 1, 2])
    k.bug = rng.random() < 0.5
    return k


def _unflushed(seed: int, k: Knobs) -> None:
    """Scratch stores left pending for good (what the pending-lines warning is about), drawn apart
    from the other knobs so that adding it changed no seed's other knobs."""
    k.unflushed = bool(k.memset or k.pending) and random.Random(f"unflushed {seed}").random() < 0.5


def _budget(rng: random.Random) -> int:
    # mostly short runs; a few long ones (the oracle's deadline is budget + grace)
    return rng.choice([5] * 20 + [10, 20, 60])


def family_of(seed: int) -> list[int]:
    start = seed - seed % FAMILY
    return list(range(start, start + FAMILY))


def kind_of(seed: int) -> str:
    """Structure or program: decided per family, so a family is all one kind."""
    return "structure" if random.Random(f"kind {family_of(seed)[0]}").random() < 0.5 else "program"


def draw(seed: int) -> Target:
    """The target of SEED (the same on every machine and run)."""
    rng = random.Random(seed)
    kind = kind_of(seed)
    if kind == "structure":
        knobs = _knobs(rng, STRUCTURE_PHASES, (1,) * len(STRUCTURE_PHASES))
        _unflushed(seed, knobs)
        budget = _budget(rng)
        if knobs.memset >= 328 or knobs.pending >= 65:
            budget = max(budget, BIG_BUDGET_S)      # else no history of it ends within the budget
        fam = family_of(seed)
        frng = random.Random(f"family {fam[0]}")      # what the family's one build shares
        lang = frng.choice(["c", "c", "c++"])
        own_new = lang == "c++" and frng.random() < 0.5
        include_cpp = lang == "c++" and not own_new and frng.random() < 0.6
        return Target(seed, kind, lang, knobs, budget,
                      max_ops=rng.choice([10, 10, 10, 30]), own_new=own_new, include_cpp=include_cpp,
                      family=fam)
    knobs = _knobs(rng, PROGRAM_PHASES, PROGRAM_PHASE_WEIGHTS)
    _unflushed(seed, knobs)
    return Target(seed, kind, "c", knobs, _budget(rng),
                  max_ops=rng.choice([3, 3, 5, 8, 40]), markers=rng.choice(["op", "pmreorder", "none"]),
                  mapper=rng.choice(["libpmem", "pool"]))
