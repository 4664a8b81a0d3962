#!/bin/sh
# run.sh -- build rl_bench natively and print tryLock/releaseLock pairs per second of the
# lock-free skip list and of the mutex-protected list (the thesis' coarse baseline) at 1 and
# 2 threads, for W1 (lock one range, release it) and W2 (lock 16, release them), with ratios.
# One run each (MS milliseconds, default 2000); on a shared 2-core machine expect noise.
# Run from anywhere: sh bench/rangelock/run.sh [MS]
set -e
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
MS=${1:-2000}
OUT=${TMPDIR:-/tmp}/rl_bench.$$
mkdir -p "$OUT"
. "$ROOT/bench/toolchain.sh"
"$CLANG" -O2 -g -std=gnu11 -Wall -Wextra -pthread -I"$ROOT/trees/rangelock" -o "$OUT/rl_bench" \
	"$ROOT/bench/rangelock/rl_bench.c" "$ROOT/trees/rangelock/rangelock.c"
printf '%-4s %-8s %14s %14s %8s\n' work threads skiplist/s mutex/s ratio
for w in 1 16; do
	for t in 1 2; do
		a=$("$OUT/rl_bench" skiplist "$t" "$MS" "$w")
		b=$("$OUT/rl_bench" mutex "$t" "$MS" "$w")
		name=W1; [ "$w" = 16 ] && name=W2
		printf '%-4s %-8s %14s %14s %8s\n' "$name" "$t" "$a" "$b" \
			"$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2fx", a / b }')"
	done
done
rm -rf "$OUT"
