"""A self-fuzz campaign: N targets from a first seed through drive.py, judged by oracle.py, counted
per subcommand. bench/selffuzz/run and tests/e2e/test_selffuzz.py both call `campaign`.

Targets run in units (a structure family shares one build: its seeds run one after the other;
a program is a unit of its own), JOBS units at a time."""
from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import threading
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from .drive import CLI, drive
from .oracle import Outcome, judge
from .params import Target, draw


@dataclass
class Failure:
    seed: int
    sub: str
    verdict: str                  # "internal" | "oracle"
    reason: str
    argv: list[str]
    describe: str
    stderr_tail: str


@dataclass
class Tally:
    targets: int = 0
    runs: Counter = field(default_factory=Counter)          # per subcommand label
    internal: Counter = field(default_factory=Counter)
    oracle: Counter = field(default_factory=Counter)
    failures: list[Failure] = field(default_factory=list)
    seconds: Counter = field(default_factory=Counter)

    def line(self) -> str:
        return (f"{self.targets} targets, {sum(self.runs.values())} subcommand runs, "
                f"{sum(self.internal.values())} internal errors, {sum(self.oracle.values())} oracle failures")

    def table(self) -> str:
        rows = [f"{'subcommand':<34} {'runs':>5} {'internal':>8} {'oracle':>7} {'seconds':>8}"]
        for sub in sorted(self.runs):
            rows.append(f"{sub:<34} {self.runs[sub]:>5} {self.internal[sub]:>8} {self.oracle[sub]:>7} "
                        f"{self.seconds[sub]:>8.0f}")
        return "\n".join(rows)


def from_log(paths: list[Path]) -> Tally:
    """The tally of campaigns' --log files (JSON lines, one per run): a run stopped early still
    counts; a seed in several logs counts once as a target."""
    tally = Tally()
    seeds = set()
    for line in (ln for p in paths for ln in Path(p).read_text().splitlines()):
        row = json.loads(line)
        seeds.add(row["seed"])
        tally.runs[row["sub"]] += 1
        tally.seconds[row["sub"]] += row["elapsed"]
        if row["verdict"] == "ok":         # judged again: the oracle may have learnt a rule since
            row["verdict"], row["reason"] = judge(_outcome(row))
        if row["verdict"] != "ok":
            (tally.internal if row["verdict"] == "internal" else tally.oracle)[row["sub"]] += 1
            tally.failures.append(Failure(row["seed"], row["sub"], row["verdict"], row["reason"], row["argv"],
                                          draw(row["seed"]).describe(), row.get("stderr_tail", "")))
    tally.targets = len(seeds)
    return tally


def _outcome(row: dict) -> Outcome:
    """A logged run as an Outcome (its stderr tail for its stderr; stdout is not logged)."""
    fields = {k: row[k] for k in ("seed", "sub", "argv", "status", "elapsed", "deadline", "out_bytes", "expect_ok",
                                  "replay_class", "nondeterministic", "flood_ok")}
    return Outcome(**fields, stdout="", stderr=row.get("stderr_tail", ""),
                   results=Path(row["results"]) if row.get("results") else None)


def units(seeds: list[int]) -> list[list[Target]]:
    """SEEDS as units of work: a structure family's seeds together."""
    out: dict[str, list[Target]] = defaultdict(list)
    for seed in seeds:
        t = draw(seed)
        out[t.name].append(t)
    return list(out.values())


def dask_available() -> bool:
    """Dask's distributed in the interpreter that runs crashcheck (the checkout's venv)."""
    return subprocess.run([CLI[0], "-c", "import distributed"], capture_output=True).returncode == 0


def campaign(seeds: list[int], jobs: int = 1, work: Path | None = None, dask: bool | None = None,
             log: Path | None = None, echo: Callable[[str], None] = lambda s: None, quick: bool = False) -> Tally:
    """Run the targets of SEEDS; ECHO gets a line per failure as it happens, LOG (JSON lines) every
    outcome; QUICK (the CI subset): one fuzz per structure instead of two."""
    dask = dask_available() if dask is None else dask
    own = work is None
    work = Path(tempfile.mkdtemp(prefix="selffuzz-")) if own else work
    work.mkdir(parents=True, exist_ok=True)
    tally, lock = Tally(), threading.Lock()
    logf = open(log, "a") if log else None

    def one(unit: list[Target]) -> None:
        built: dict[str, Outcome] = {}
        for t in unit:
            for o in drive(t, work, work / "builds", built, dask=dask, quick=quick):
                verdict, reason = judge(o)
                with lock:
                    tally.runs[o.sub] += 1
                    tally.seconds[o.sub] += o.elapsed
                    if logf:
                        row = {k: v for k, v in asdict(o).items() if k not in ("stdout", "stderr")}
                        row.update(verdict=verdict, reason=reason, results=str(o.results) if o.results else None,
                                   stderr_tail=o.stderr[-600:])
                        logf.write(json.dumps(row) + "\n")
                        logf.flush()
                    if verdict != "ok":
                        (tally.internal if verdict == "internal" else tally.oracle)[o.sub] += 1
                        f = Failure(t.seed, o.sub, verdict, reason, o.argv, t.describe(), o.stderr[-1500:])
                        tally.failures.append(f)
                        echo(f"seed {t.seed} [{t.describe()}] {o.sub}: {verdict}: {reason}")
            with lock:
                tally.targets += 1

    try:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            for fut in [pool.submit(one, u) for u in units(seeds)]:
                fut.result()
    finally:
        if logf:
            logf.close()
        if own:
            shutil.rmtree(work, ignore_errors=True)
    return tally
