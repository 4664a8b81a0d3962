"""PM regions past the pool: post-crash images carry every region (crashsim/layout.py), and
recovery gets each one back when it registers it again (instrument/runtime/rt_supply.c).

- The layout keeps each region's alignment modulo a page.
- On random traces over three regions the simulator's images of every legal state equal the
  brute-force reference's, region by region.
- `driver check --region IMAGE` and `serve --region OFFSET:SIZE` hand a region's image to a
  recovery that registers it again, and refuse one of another size.
- End to end: tests/fixtures/sideregion (its count in memory it registers itself), the
  pmemfile fixture built with its count in a second pmem_map_file file, and
  tests/fixtures/pmobjcount (its count in a second libpmemobj pool) pass when correct, and their
  seeded bugs are found with their classes (and replay).
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crashcheck.crashsim.explore import explore
from crashcheck.crashsim.image import apply_writes, decode_writes
from crashcheck.crashsim.layout import PAGE, layout, trace_layout
from crashcheck.crashsim.persistency import ModelOptions
from crashcheck.crashsim.reference import reference
from crashcheck.crashsim.simulate import Simulator
from crashcheck.crashsim.states import StateCodec, exhaustive
from crashcheck.crashsim.trace import read_trace
from crashcheck.crashsim.trace_writer import TraceWriter

from cli_run import ROOT, run_cli
from userbuild import build_once

# (offset from the pool's base, size) of regions 0, 1 and 2: region 1 is not page-aligned
REGIONS = [(0, 128), (0x10040, 128), (0x30000, 64)]


def test_the_layout_keeps_each_regions_alignment_in_a_page():
    lay = layout([(0x600000000000, 8192), (0x7f0000001040, 100), (0x7f0000005000, 4096)])
    assert lay.offsets == (0, 8192 + 0x40, 3 * PAGE)
    assert lay.total == 4 * PAGE
    assert lay.serve_args() == ["--region", f"{8192 + 0x40}:100", "--region", f"{3 * PAGE}:4096"]
    one = layout([(0x600000000000, 5000)])
    assert one.total == 5000 and one.serve_args() == []


action = st.one_of(
    st.tuples(st.just("store"), st.integers(0, 2), st.integers(0, 15), st.sampled_from([1, 4, 8]),
              st.binary(min_size=8, max_size=8)),
    st.tuples(st.just("flush"), st.integers(0, 2), st.integers(0, 1)),
    st.tuples(st.just("fence")),
)


def _trace(actions, images, tmp: Path):
    w = TraceWriter(pool_size=REGIONS[0][1], image=images[0])
    for (off, size), image in zip(REGIONS[1:], images[1:]):
        w.region(off, size, image)
    w.op_begin(0)
    for a in actions:
        if a[0] == "store":
            _, r, slot, size, data = a
            base, rsize = REGIONS[r]
            at = (slot * 8) % rsize
            w.store(base + at, data[:size])
        elif a[0] == "flush":
            _, r, line = a
            base, rsize = REGIONS[r]
            w.flush(base + (line * 64) % rsize)
        else:
            w.fence()
    w.op_end(0)
    return read_trace(w.write(tmp / "t.trace"))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(actions=st.lists(action, min_size=1, max_size=10), seed=st.integers(0, 255))
def test_images_carry_every_region_as_the_reference_does(actions, seed, tmp_path):
    images = [bytes((seed + 7 * i + r) % 256 for i in range(size)) for r, (_, size) in enumerate(REGIONS)]
    trace = _trace(actions, images, tmp_path)
    lay = trace_layout(trace)
    initial = bytearray(lay.total)
    for off, image in zip(lay.offsets, images):
        initial[off:off + len(image)] = image
    opts = ModelOptions()
    ref_points, pieces = reference(trace.events, opts, line_size=64)
    sim = Simulator.from_trace(trace, opts)
    assert sim.image.size == lay.total and bytes(sim.image.base) == bytes(initial)
    for cp, rp in zip(sim.crash_points(), ref_points):
        codec = StateCodec(cp, sim.image)
        states = set()
        for choice in exhaustive(cp.radices):
            kept = frozenset(p.key for p in cp.kept(choice))
            states.add(kept)
            _, blob = codec.encode(choice)
            got = bytes(apply_writes(bytearray(sim.image.base), decode_writes(blob)))
            assert got == rp.image(bytes(initial), pieces, kept, lay.offsets), (cp.event, sorted(kept))
        assert states == rp.states


# -- the driver hands images to recovery ------------------------------------------------------

def _sideregion() -> Path:
    return build_once("sideregion", "--adapter", ROOT / "tests" / "fixtures" / "sideregion" / "adapter.c")


def _traced_run(driver: Path, tmp: Path, history: str) -> Path:
    (tmp / "h").write_text(history)
    res = subprocess.run([str(driver), "run", "--pool", str(tmp / "pool"), "--create", "--size", "1m",
                          str(tmp / "h")], capture_output=True, text=True, timeout=60,
                         env={"CRASHCHECK_TRACE": str(tmp / "t"), "PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.stderr
    return tmp / "t"


def test_check_gives_recovery_the_image_of_the_region_it_registers(instrument_built, tmp_path):
    """The side region's count says how many pool entries recovery sees: with the traced run's
    region image all three, with a count of 1 written into it one, and a region image of
    another size is refused by the registration (the structure cannot open)."""
    driver = _sideregion() / "driver"
    trace = read_trace(_traced_run(driver, tmp_path, "insert 1 10\ninsert 2 20\ninsert 3 30\n"))
    assert [r.size for r in trace.regions] == [1 << 20, 4096]
    # the final images: the pool file the run left, and the side region rebuilt from the trace
    sim = Simulator.from_trace(trace)
    for _ in sim.crash_points():
        pass
    lay = trace_layout(trace)
    side = bytes(sim.image.base[lay.offsets[1]:lay.offsets[1] + 4096])
    assert int.from_bytes(side[:8], "little") == 3
    (tmp_path / "side").write_bytes(side)

    def check(*region: Path) -> dict:
        args = [str(driver), "check", "--pool", str(tmp_path / "pool")]
        for r in region:
            args += ["--region", str(r)]
        res = subprocess.run(args, capture_output=True, text=True, timeout=60)
        assert res.returncode == 0, res.stderr
        return json.loads(res.stdout)

    assert len(check(tmp_path / "side")["dump"]) == 3
    (tmp_path / "one").write_bytes((1).to_bytes(8, "little") + side[8:])
    assert len(check(tmp_path / "one")["dump"]) == 1
    assert check()["dump"] == []                 # no image: the region starts as recovery makes it
    missing = subprocess.run([str(driver), "check", "--pool", str(tmp_path / "pool"), "--region",
                              str(tmp_path / "nope")], capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2
    assert missing.stderr == f"sideregion: cannot open region image {tmp_path / 'nope'}: No such file or directory\n"
    (tmp_path / "short").write_bytes(side[:2048])
    out = check(tmp_path / "short")
    assert out["recovered"] is False and out["dump"] == []


def test_serve_maps_the_regions_past_the_pool_and_checks_their_states(instrument_built, tmp_path):
    """Through the runner: every crash state of the side region's count store is judged on an
    image whose side region is the state's, so the states that keep the count see one entry
    more than those that lose it."""
    from crashcheck.crashsim.runner_client import Runner

    driver = _sideregion() / "driver-native"
    trace = read_trace(_traced_run(_sideregion() / "driver", tmp_path, "insert 1 10\n"))
    lay = trace_layout(trace)
    with Runner([str(driver), "serve", "--size", str(lay.sizes[0]), *lay.serve_args()],
                pool_base=trace.regions[0].base, pool_size=lay.total) as runner:
        seen = {}
        first_op = next(i for i, ev in enumerate(trace.events) if ev.kind == "op_begin")
        for out in explore(trace, runner=runner, strategy="exhaustive", start_event=first_op):
            dumped = len(out.result.result["dump"])
            if any(p.region == 1 for u in out.point.units for p in u.pieces):
                # the count's store is pending: the state decides whether the entry is there
                seen.setdefault(any(p.region == 1 for p in out.kept), set()).add(dumped)
            elif out.point.kind == "op_end":
                seen.setdefault("done", set()).add(dumped)
    assert seen == {False: {0}, True: {1}, "done": {1}}


# -- end to end --------------------------------------------------------------------------------

def _fuzz(name: str, tmp: Path, *args: str) -> tuple[int, dict]:
    res = run_cli("fuzz", name, "--seed", "1", "--json", tmp / f"{name}.json", "--quiet", *args)
    assert res.returncode in (0, 1), res.stdout + res.stderr
    return res.returncode, json.loads((tmp / f"{name}.json").read_text())


@pytest.mark.parametrize("bug, cls", [("count-first", "wrong-value"), ("no-flush-count", "lost-durable-write")])
def test_a_bug_in_memory_the_structure_registers_itself_is_found(instrument_built, tmp_path, bug, cls):
    _sideregion()
    rc, ok = _fuzz("sideregion", tmp_path, "--examples", "8")
    assert rc == 0 and ok["bugs"] == [] and ok["stats"]["crash_points"] > 20
    rc, bad = _fuzz("sideregion", tmp_path, "--bug", bug, "--examples", "16")
    [found] = bad["bugs"]
    assert rc == 1 and found["class"] == cls and found["lost"][0]["site"]["func"] == "a_insert"
    record = tmp_path / "sideregion.bugs" / f"{found['id']}.json"
    replay = run_cli("replay", record)
    assert replay.returncode == 1 and f"reproduced: {cls}" in replay.stdout, replay.stdout + replay.stderr


def test_a_second_file_mapped_with_pmem_map_file_is_part_of_the_images(instrument_built, tmp_path):
    if not Path("/usr/include/libpmem.h").exists():
        pytest.skip("libpmem-dev not installed (scripts/setup installs it)")
    build_once("pmemcount", "--adapter", ROOT / "tests" / "fixtures" / "pmemfile" / "adapter.c",
               "--ldflags", "-lpmem", "--cflags=-DPMEMFILE_COUNT_FILE")
    rc, ok = _fuzz("pmemcount", tmp_path, "--examples", "6")
    assert rc == 0 and ok["bugs"] == []
    rc, bad = _fuzz("pmemcount", tmp_path, "--bug", "count-first", "--examples", "8")
    [found] = bad["bugs"]
    assert rc == 1 and found["class"] == "wrong-value"
    # the lost store is the entry's (in the pool); the count it was published by is region 1's
    assert "region" not in found["lost"][0]


def test_a_second_libpmemobj_pool_is_part_of_the_images(instrument_built, tmp_path):
    """tests/fixtures/pmobjcount keeps its count in a second libpmemobj pool, which recovery
    opens by name next to the pool the checker gives it. (Its adapter has no `check`: the
    crash-free run's `--check` must skip it, not call a null pointer.)"""
    if not Path("/usr/include/libpmemobj.h").exists():
        pytest.skip("libpmemobj-dev not installed (scripts/setup installs it)")
    build_once("pmobjcount", "--adapter", ROOT / "tests" / "fixtures" / "pmobjcount" / "adapter.c",
               "--ldflags", "-lpmemobj")
    rc, ok = _fuzz("pmobjcount", tmp_path, "--examples", "4")
    assert rc == 0 and ok["bugs"] == [] and ok["stats"]["crash_points"] > 20
    rc, bad = _fuzz("pmobjcount", tmp_path, "--bug", "count-first", "--examples", "8", "--shrink", "4")
    [found] = bad["bugs"]
    assert rc == 1 and found["class"] == "wrong-value" and found["lost"][0]["site"]["func"] == "a_insert"


def test_a_traced_recovery_starts_its_second_pool_from_the_image_it_was_given(tmp_path):
    """harness/target/tracers.import_trace, as a traced recovery under --tracer pmemcheck calls it
    (`driver run --region` of a post-crash image): the log holds no file contents, so each region
    past the pool starts from the image the run was given, not all zero (before, the correct
    pmobjcount got a false recovery-crash bug). The whole run, slow: the test after this one."""
    from crashcheck.harness.target.tracers import import_trace
    log = tmp_path / "open.log"
    log.write_text(
        "==7== START|REGISTER_FILE;/x/p;0x5200000;0x2000;0x0|STORE;0x5200000;0x1;0x8"
        "|REGISTER_FILE;/x/q;0x6600000;0x3000;0x0|STORE;0x6602000;0x2;0x8|STOP\n")
    pool, second = tmp_path / "pool.img", tmp_path / "q.img"
    pool.write_bytes(b"\x11" * 0x2000)
    second.write_bytes(b"\x22" * 0x3000)
    import_trace(log, tmp_path / "t", pool, [second])
    trace = read_trace(tmp_path / "t")
    assert trace.region_image(0) == b"\x11" * 0x2000
    assert trace.region_image(1) == b"\x22" * 0x3000


@pytest.mark.slow     # ~90 s of runs under Valgrind; the import it needs is the test above's
def test_under_pmemcheck_a_recovery_given_a_second_pool_starts_from_its_image(instrument_built, pmemcheck,
                                                                             tmp_path):
    """--tracer pmemcheck: the store log records no file contents, so a traced recovery of a
    post-crash image learns its second pool's starting bytes from the image the driver was given
    (`run --region`); without them it started all zero, and crashing inside the recovery of the
    correct map reported a recovery-crash bug ('invalid major version (0)')."""
    if not Path("/usr/include/libpmemobj.h").exists():
        pytest.skip("libpmemobj-dev not installed (scripts/setup installs it)")
    build_once("pmobjcount", "--adapter", ROOT / "tests" / "fixtures" / "pmobjcount" / "adapter.c",
               "--ldflags", "-lpmemobj")
    res = run_cli("fuzz", "pmobjcount", "--tracer", "pmemcheck", "--examples", "2", "--limit", "4",
                  "--seed", "1", "--json", tmp_path / "r.json", "--quiet",
                  env_extra={"CRASHCHECK_PMEMCHECK": pmemcheck}, timeout=900)
    assert res.returncode == 0, res.stdout + res.stderr
    r = json.loads((tmp_path / "r.json").read_text())
    assert r["bugs"] == [] and r["tracer"] == "pmemcheck" and r["stats"]["crash_points"] > 100
