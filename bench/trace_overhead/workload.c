/*
 * workload.c -- the store-heavy PM workload of bench/trace_overhead
 *
 * N 8-byte stores into the pool, a clwb every 8 stores (one per line) and an
 * sfence every 64, in a loop over a 16 MiB window.  Prints the nanoseconds
 * spent in the loop only, so pool mapping and trace start-up are not part
 * of the ratio.  Built twice: natively and with crashcheck-cc.
 */
#include <crashcheck.h>
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define WINDOW (16u << 20)

__attribute__((target("clwb")))
static void run(uint64_t *pool, uint64_t n)
{
	uint64_t words = WINDOW / 8;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t *p = &pool[i % words];
		*p = i * 0x9e3779b97f4a7c15ULL;
		if ((i & 7) == 7)
			_mm_clwb(p);
		if ((i & 63) == 63)
			_mm_sfence();
	}
}

int main(int argc, char **argv)
{
	uint64_t n = argc > 2 ? strtoull(argv[2], NULL, 0) : 10000000;
	if (argc < 2) {
		fprintf(stderr, "usage: %s POOL [STORES]\n", argv[0]);
		return 2;
	}
	uint64_t *pool = crashcheck_pool_open(argv[1], WINDOW, 0, CRASHCHECK_POOL_CREATE);
	if (pool == NULL) {
		fprintf(stderr, "workload: %s\n", crashcheck_last_error());
		return 2;
	}
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	run(pool, n);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%lld\n", (long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
	return 0;
}
