#!/bin/sh
# run.sh -- build hart_bench natively and print recovery vs build times for 10^5 and 10^6 keys,
# then flushes per operation of HART next to WOART on the same workload (crashcheck stats).
# Run from anywhere: sh bench/hart/run.sh
set -e
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${TMPDIR:-/tmp}/hart_bench.$$
mkdir -p "$OUT"
. "$ROOT/bench/toolchain.sh"
"$CLANG" -O2 -g -std=gnu11 -Wall -Wextra -pthread -I"$ROOT/trees/common" -I"$ROOT/trees/hart" \
	-I"$ROOT/instrument/include" -o "$OUT/hart_bench" "$ROOT/bench/hart/hart_bench.c" \
	$(ls "$ROOT"/trees/hart/*.c | grep -v adapter.c) "$ROOT/trees/common/pm_alloc.c" \
	"$ROOT/build/libcrashcheck_rt.a" -lpthread -ldl
for n in 100000 1000000; do
	"$OUT/hart_bench" "$OUT/pool" "$n"
	rm -f "$OUT/pool"
done
rm -rf "$OUT"
for t in woart hart; do
	echo "$t (sparse keys, 10000 operations of each kind):"
	"$ROOT/.venv/bin/crashcheck" stats "$t" --keys sparse --ops 10000
done
