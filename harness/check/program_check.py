"""Program mode's judge: a post-crash image of a user's program, its own recovery and checker
commands, and their verdict.

Owns the commands (`--recover 'CMD {image}'`, `--checker 'CMD {image}'`: `{image}` is region 0's
post-crash file, `{image1}`, `{image2}` ... the regions past it, in the order the program mapped
them), writing one crash state's regions to files, running recovery then the checker on them
(supervised: own process group, a timeout, output kept only as a tail, so a checker that hangs,
crashes or prints megabytes is a finding and never a stall), and the verdict: exit 0 is
consistent; any other end of either command is a finding of a class below. Also the check of
the crash-free image (every store of the run persisted), which must pass before any crash state
means anything. Never enumerates crash states (harness/check/program_explore.py) or builds records.
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from crashcheck.crashsim.trace import Trace
from crashcheck.crashsim.layout import Layout
from crashcheck.harness.core import defaults
from crashcheck.harness.core.budget import OutOfTime
from crashcheck.harness.core.errors import UsageError
from crashcheck.harness.core.supervise import RunEnd, run_supervised
from crashcheck.harness.check import program_reads
from crashcheck.harness.check.program_reads import Reads
from crashcheck.harness.target.program import program_env

# Classes of program findings: the checker said no (exit status), the checker died of a signal,
# the checker did not finish; recovery's failures take the classes fuzz uses for them.
PROGRAM_CLASSES = ("checker-failure", "checker-crash", "checker-hang")
RECOVERY_CLASSES = ("recovery-crash", "recovery-hang")
PLACEHOLDER = re.compile(r"\{image(\d*)\}")
DEFAULT_TIMEOUT_S = 10.0
# A line of a command's output that says what went wrong (a checker's banner or progress line
# does not): the first such line of stderr is the one a finding shows (telling_line)
ERROR_LOOKING = re.compile(r"error|fail|assert|abort|corrupt|invalid|inconsisten|mismatch|panic|fatal|"
                           r"wrong|unexpected|expected|violat|missing|cannot|can't|unable|bad\b|broken|"
                           r"lost|not found|illegal", re.IGNORECASE)


@dataclass(frozen=True)
class Command:
    """A user's command with `{image}` placeholders, split as a shell would (never run by one)."""
    text: str
    words: tuple[str, ...]
    option: str

    @staticmethod
    def parse(text: str, option: str) -> "Command":
        try:
            words = tuple(shlex.split(text))
        except ValueError as exc:
            raise UsageError(f"{option} {text!r}: {exc}") from None
        if not words:
            raise UsageError(f"{option} is empty: give a command with {{image}} where the image file goes")
        if not any(PLACEHOLDER.search(w) for w in words):
            raise UsageError(f"{option} {text!r} has no {{image}}: put {{image}} where the post-crash "
                             "image file goes")
        exe = words[0]
        if not PLACEHOLDER.search(exe):
            found = shutil.which(exe) if "/" not in exe else exe
            if found is None or not os.path.isfile(found) or not os.access(found, os.X_OK):
                raise UsageError(f"{option} {text!r}: {exe!r} is not an executable file"
                                 + ("" if "/" in exe else " on PATH"))
        return Command(text, words, option)

    def regions_named(self) -> set[int]:
        return {int(m[1] or 0) for w in self.words for m in PLACEHOLDER.finditer(w)}

    def argv(self, files: list[Path]) -> list[str]:
        return [PLACEHOLDER.sub(lambda m: str(files[int(m[1] or 0)]), w) for w in self.words]


@dataclass
class Verdict:
    """What recovery and the checker made of one image."""
    ok: bool
    cls: str | None = None
    how: str = ""          # in words: "the checker exited with status 1"
    key: str = ""          # `how` without varying numbers: part of a finding's group
    output: str = ""       # the tail of what the failing command printed (stdout's, then stderr's)
    errors: str = ""       # the tail of its stderr alone

    def same(self, other: "Verdict") -> bool:
        return not other.ok and other.cls == self.cls


def _verdict(stage: str, end: RunEnd) -> Verdict:
    if end.status == "ok":
        return Verdict(True)
    hang = end.status in ("timeout", "stopped")
    if stage == "recover":
        cls = "recovery-hang" if hang else "recovery-crash"
    else:
        cls = "checker-hang" if hang else "checker-crash" if end.status in ("signal", "parent-killed") \
            else "checker-failure"
    return Verdict(False, cls, f"{'recovery' if stage == 'recover' else 'the checker'} {end.how()}",
                   f"{stage}: {end.how_key()}", end.output, end.errors)


def telling_line(v: Verdict) -> str:
    """The line of the failing command's output that says why it failed, "" if none does: the
    first error-looking line of its stderr, else stderr's first line, else the first error-looking
    line of its stdout, else (a checker that says why on stdout alone, as many pmreorder checkers
    do: `puts("b persisted without a")`) stdout's last line, which the exit status or signal
    (`how`) is shown before."""
    err = [ln.strip() for ln in v.errors.splitlines() if ln.strip()]
    stdout_part = v.output[:len(v.output) - len(v.errors)] if v.errors and v.output.endswith(v.errors) else v.output
    out = [ln.strip() for ln in stdout_part.splitlines() if ln.strip()]
    telling = ([ln for ln in err if ERROR_LOOKING.search(ln)] + err[:1]
               + [ln for ln in out if ERROR_LOOKING.search(ln)] + out[-1:])
    return telling[0] if telling else ""


class ImageChecker:
    """Writes crash states of one trace's regions to files in FOLDER and runs the commands."""

    def __init__(self, trace: Trace, layout: Layout, checker: Command, recover: Command | None,
                 folder: Path, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.trace = trace
        self.layout = layout
        self.checker = checker
        self.recover = recover
        self.folder = folder
        self.timeout_s = timeout_s
        self.runs = 0                   # command runs (recovery and checker count one each)
        nregions = len(layout.sizes)
        for cmd in filter(None, (checker, recover)):
            extra = sorted(n for n in cmd.regions_named() if n >= nregions)
            if extra:
                raise UsageError(f"{cmd.option} names {{image{extra[0]}}}, but the program mapped "
                                 f"{nregions} PM region{'s' if nregions != 1 else ''} ({{image}}"
                                 + "".join(f", {{image{i}}}" for i in range(1, nregions)) + ")")
        folder.mkdir(parents=True, exist_ok=True)
        self.files = [folder / ("image" if i == 0 else f"image{i}") for i in range(nregions)]
        self._data_pages: tuple[int | None, list[list[int]]] = (None, [])   # (base_fp, per region)
        # Hangs: once HANG_AFTER commands of this run used the whole timeout, the others get a
        # shorter one (a hanging checker must not cost the whole timeout at every state); one that
        # runs out of it is a hang only when it hung the way a full-timeout one did (the same
        # stage, the same output), else it gets the whole timeout again (defaults.hang_short_ms)
        self.hang_after = defaults.from_env("hang_after")
        self.hangs: list[tuple[str, str]] = []     # (stage, output) of each full-timeout hang
        self.slowest_ok = 0.0                      # seconds: the slowest command that passed
        self.hung_short = 0                        # hangs answered under the shorter limit
        self.rechecked = 0                         # runs out of it run again with the whole timeout
        self.on_shorten: Callable[[str], None] | None = None   # told once when the limit shortens
        # --strategy lazy: each command logs its reads of the image (program_reads); last_reads
        # holds those of the last check, recovery's first (None: not asked, or a command hung)
        self.log_reads = False
        self.last_reads: list[Reads] | None = None
        # variables the commands get on top of the program's environment (PMREORDER_MARKERS:
        # set per crash point by the explorer, harness/check/engines.py)
        self.env: dict[str, str] = {}
        # --budget: no command runs past this time.monotonic() (the one in flight is killed at it,
        # and OutOfTime raised: the state is not judged); None: no budget
        self.deadline: float | None = None

    def _within(self, timeout_s: float) -> float:
        """TIMEOUT_S cut to the budget's deadline; OutOfTime when it has passed."""
        if self.deadline is None:
            return timeout_s
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise OutOfTime()
        return min(timeout_s, left)

    def _cut(self, end: RunEnd, wanted_s: float) -> None:
        """OutOfTime when END is a command the budget's deadline killed (not a hang of its own)."""
        if end.status == "timeout" and end.timeout_s < wanted_s:
            raise OutOfTime()

    @property
    def short_s(self) -> float | None:
        """The shorter per-command timeout in force (None: every command gets the whole timeout):
        an eighth of it, at least 50 ms, and at least 4 times the slowest command that passed."""
        if not self.hang_after or len(self.hangs) < self.hang_after:
            return None
        short = max(defaults.hang_short_ms(int(self.timeout_s * 1000)) / 1000, 4 * self.slowest_ok)
        return short if short < self.timeout_s else None

    def _run_one(self, stage: str, cmd: Command, env: dict[str, str]) -> RunEnd:
        """One command with the timeout in force (see __init__ on hangs)."""
        argv, out, err = cmd.argv(self.files), self.folder / f"{stage}.out", self.folder / f"{stage}.err"
        short = self.short_s
        if self.log_reads:
            env = {**env, **program_reads.env(self._log(stage), self.files)}
            program_reads.clear(self._log(stage))
        end = run_supervised(argv, env=env, output=out, errors=err, timeout_s=self._within(short or self.timeout_s))
        self._cut(end, short or self.timeout_s)
        if short is not None and end.status in ("timeout", "stopped"):
            if (stage, end.output) in self.hangs:
                self.hung_short += 1
                return end
            self.rechecked += 1
            if self.log_reads:
                program_reads.clear(self._log(stage))
            end = run_supervised(argv, env=env, output=out, errors=err, timeout_s=self._within(self.timeout_s))
            self._cut(end, self.timeout_s)
        if end.status == "ok":
            self.slowest_ok = max(self.slowest_ok, end.elapsed)
        elif end.status in ("timeout", "stopped") and end.timeout_s >= self.timeout_s:
            before = self.short_s
            self.hangs.append((stage, end.output))
            if before is None and self.short_s is not None and self.on_shorten is not None:
                self.on_shorten(f"{len(self.hangs)} commands used the whole {self.timeout_s:g} s timeout: the "
                                f"other crash states of this run get {self.short_s:.2f} s (one that runs out of "
                                f"it without hanging the same way gets the whole timeout again; "
                                f"CRASHCHECK_HANG_AFTER=0 gives every state all of it)")
        return end

    def write(self, base, writes: list[tuple[int, bytes]], base_fp: int | None = None) -> None:
        """Write the image BASE (the whole layout) with WRITES (image offsets) over it, one file per
        region. BASE_FP, BASE's fingerprint when known: the pages of BASE holding data are found
        once per base (an mmap'd base is slow to scan), not once per state written over it."""
        lay = self.layout
        if base_fp is None or self._data_pages[0] != base_fp:
            self._data_pages = (base_fp, [data_pages(base, off, size) for off, size in zip(lay.offsets, lay.sizes)])
        writes = sorted(writes, key=lambda w: w[0])     # (units' writes come unit by unit)
        for path, off, size, pages in zip(self.files, lay.offsets, lay.sizes, self._data_pages[1]):
            # a new file each time: whatever the last commands left there (a file they still map,
            # made read-only, or replaced by a folder) is not written through
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            elif path.exists() or path.is_symlink():
                path.unlink()
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            try:
                os.ftruncate(fd, size)
                k = 0                  # writes are sorted and do not overlap: one pass
                for a, b in written_pages(pages, off, size, writes):
                    buf = bytearray(memoryview(base)[a:b])
                    while k < len(writes) and writes[k][0] + len(writes[k][1]) <= a:
                        k += 1
                    for i in range(k, len(writes)):
                        woff, data = writes[i]
                        if woff >= b:
                            break
                        x, y = max(woff, a), min(woff + len(data), b)
                        buf[x - a:y - a] = data[x - woff:y - woff]
                    os.pwrite(fd, buf, a - off)
            finally:
                os.close(fd)

    def _log(self, stage: str) -> Path:
        return self.folder / f"{stage}.reads"

    def run(self) -> Verdict:
        """Recovery (if any), then the checker, on the files written last."""
        env = command_env(self.env)
        reads: list[Reads] | None = [] if self.log_reads else None
        self.last_reads = None
        v = Verdict(True)
        for stage, cmd in (("recover", self.recover), ("checker", self.checker)):
            if cmd is None:
                continue
            self.runs += 1
            end = self._run_one(stage, cmd, env)
            v = _verdict(stage, end)
            if reads is not None:
                who = "recovery" if stage == "recover" else "the checker"
                # a hang was cut short: what it would have read after the kill is not known
                reads.append(Reads([], f"{who} hung") if end.status in ("timeout", "stopped")
                             else program_reads.collect(self._log(stage), cmd.regions_named(), who))
            if not v.ok:
                break
        self.last_reads = reads
        return v

    def check(self, base, writes: list[tuple[int, bytes]], base_fp: int | None = None) -> Verdict:
        self.write(base, writes, base_fp)
        return self.run()


# glibc's malloc for the commands of a judged image: its heap on transparent huge pages and grown
# 32 MiB at a time. libpmemobj's open mallocs about 15 MiB of run-time state (its 1,024 lanes'
# logs and locks) and touching it page by page was most of a libpmemobj checker's CPU (3,880 page
# faults, 12.1 ms of a 16 MiB pool's `pmemobj_check` + `pmemobj_open`; 286 faults and 4.9 ms
# so). What the program computes is the same (a correct program cannot tell): only the pages under
# the heap differ. A GLIBC_TUNABLES of the user's own (even empty) is left as it is.
MALLOC_TUNABLES = "glibc.malloc.hugetlb=1:glibc.malloc.top_pad=33554432"


def command_env(extra: dict[str, str]) -> dict[str, str]:
    """The environment of a judged image's commands: the program's (program_env) with EXTRA,
    and glibc's malloc tuned (MALLOC_TUNABLES) unless the user set GLIBC_TUNABLES."""
    env = program_env(extra)
    env.setdefault("GLIBC_TUNABLES", MALLOC_TUNABLES)
    return env


PAGE = 4096
ZERO_PAGE = bytes(PAGE)


def data_pages(base, off: int, size: int) -> list[int]:
    """The pages (image offsets, from OFF) of the region [OFF, OFF+SIZE) of BASE that hold a
    non-zero byte."""
    end = off + size
    zero = base.startswith if hasattr(base, "startswith") else \
        (lambda page, p: base[p:p + len(page)] == page)          # an mmap'd base (a large image)
    return [p for p in range(off, end, PAGE) if not zero(ZERO_PAGE[:min(PAGE, end - p)], p)]


def written_pages(pages: list[int], off: int, size: int, writes: list[tuple[int, bytes]]) -> list[tuple[int, int]]:
    """The runs [a, b) of the region [OFF, OFF+SIZE)'s pages (from OFF) that hold data of its base
    (PAGES, data_pages') or a byte of WRITES: the rest of the file is left a hole, which reads as
    zeros. A pool is mostly zeros (an 8 MiB libpmemobj pool after its first transaction: 774 of
    2048 pages hold data), and writing the holes cost most of an image's write, once per state."""
    end = off + size
    marks = list(pages)
    for woff, data in writes:
        a, b = max(woff, off), min(woff + len(data), end)
        if a < b:
            marks.extend(range(a - (a - off) % PAGE, b, PAGE))
    runs: list[tuple[int, int]] = []
    for p in sorted(set(marks)):
        if runs and runs[-1][1] == p:
            runs[-1] = (runs[-1][0], min(p + PAGE, end))
        else:
            runs.append((p, min(p + PAGE, end)))
    return runs


def crash_free_image(trace: Trace, layout: Layout, stores: bool = True) -> bytearray:
    """The image the run leaves when nothing is lost: every region's initial bytes with every
    store of the trace applied in order (STORES false: none, the image the run started from)."""
    image = bytearray(layout.total)
    for region, off in zip(trace.regions, layout.offsets):
        data = trace.region_image(region.index)
        image[off:off + len(data)] = data
    for ev in trace.events if stores else []:
        if ev.kind in ("store", "ntstore") and ev.region is not None and ev.off is not None \
                and ev.region < len(layout.offsets):
            start = layout.offsets[ev.region] + ev.off
            image[start:start + len(ev.data)] = ev.data
    return image


def crash_free_failure(trace: Trace, checker: ImageChecker, stores: bool = True) -> str:
    """How the commands failed on the crash-free image (STORES false: on the start image) and the
    line that says why (telling_line), or "" when they pass."""
    v = checker.check(crash_free_image(trace, checker.layout, stores), [])
    if v.ok:
        return ""
    why = telling_line(v)
    return v.how + (f": {why[:200]}" if why else "")


def check_crash_free(trace: Trace, checker: ImageChecker, failed: str | None = None) -> None:
    """The commands must pass on the crash-free image, or they cannot judge crash states: a
    UsageError naming what failed (FAILED: crash_free_failure's answer, when known) and why."""
    failed = crash_free_failure(trace, checker) if failed is None else failed
    if failed:
        how, _, why = failed.partition(": ")
        raise UsageError(f"{how} on the crash-free image (every store of the run persisted), so it "
                         f"cannot judge crash images" + (f": {why}" if why else ""))


__all__ = ["Command", "DEFAULT_TIMEOUT_S", "ImageChecker", "PROGRAM_CLASSES", "RECOVERY_CLASSES", "Verdict",
           "check_crash_free", "crash_free_failure", "crash_free_image", "telling_line"]
