#!/bin/sh
# bench/heart/run.sh -- a sanity check of Heart's native speed, one run each (not a timed test):
#  1. Heart with 1 and 2 threads: insert and lookup Mops/s of N random 8-byte keys (heart_bench.c);
#  2. Heart against WOART, single thread, through the same driver-native `run` of N inserts then
#     N lookups (history parsing included for both), and the ratio WOART time / Heart time.
# Usage: sh bench/heart/run.sh [N]   (default 200000).  Needs `make trees` (driver-native builds).
# PM accesses per operation (XPLines read per node, bytes written per update) against WOART:
#   .venv/bin/python bench/heart/pm_access.py [--n 2000]   (traced, load-logging drivers)
set -e
cd "$(dirname "$0")/../.."
N=${1:-200000}
OUT=${TMPDIR:-/tmp}/heart-bench.$$
mkdir -p "$OUT"
trap 'rm -rf "$OUT"' EXIT
ROOT=$(pwd)
. "$ROOT/bench/toolchain.sh"
"$CLANG" -O2 -std=gnu11 -pthread -DHEART_NO_MODEL_FENCE -Itrees/common -Iinstrument/include -o "$OUT/hb" \
  bench/heart/heart_bench.c trees/heart/heart.c trees/heart/heart_mem.c trees/heart/heart_recover.c \
  trees/common/pm_alloc.c build/libcrashcheck_rt.a -lpthread -ldl
echo "Heart native, $N keys (pool in $OUT; DRAM-backed):"
r1=$("$OUT/hb" "$OUT/pool1" "$N" 1); echo "  $r1"
r2=$("$OUT/hb" "$OUT/pool2" "$N" 2); echo "  $r2"
python3 - "$r1" "$r2" <<'PY'
import sys
a, b = (l.split() for l in sys.argv[1:3])
print(f"  2-thread / 1-thread: insert {float(b[3]) / float(a[3]):.2f}x, lookup {float(b[5]) / float(a[5]):.2f}x")
PY
python3 - "$N" > "$OUT/hist" <<'PY'
import sys
n = int(sys.argv[1])
keys = [(i * 0x9E3779B97F4A7C15) % (1 << 64) for i in range(n)]
print("\n".join(f"insert {k} 1" for k in keys))
print("\n".join(f"lookup {k}" for k in keys))
PY
t() { s=$(date +%s.%N); build/trees/$1/driver-native run --pool "$OUT/$1.pool" --create --size 1g "$OUT/hist" > /dev/null; e=$(date +%s.%N); python3 -c "print(f'{$e - $s:.3f}')"; }
th=$(t heart); tw=$(t woart)
echo "single thread, driver-native, $N inserts + $N lookups: heart ${th}s, woart ${tw}s, woart/heart $(python3 -c "print(f'{$tw / $th:.2f}')")x"
