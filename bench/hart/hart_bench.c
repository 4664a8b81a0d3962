/*
 * hart_bench.c -- recovery time of HART next to the time to build it by inserts
 *
 * Usage: hart_bench POOL NKEYS [SEED]
 *
 * Inserts NKEYS random keys (8..16 bytes, 16-byte values) into a fresh pool
 * and times it; then drops the DRAM side (hart_close) and times
 * hart_open + hart_recover (Algorithm 7: leaf chunks -> hash table + ARTs),
 * and checks a sample of lookups.  Built natively by run.sh (clang -O2, the
 * real clflush/mfence instructions on a file-backed mapping).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "crashcheck.h"
#include "pm_alloc.h"
#include "hart.h"

/* now -- seconds on the monotonic clock */
static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* make_key -- key I: 8..16 bytes from a 64-bit mix of I and SEED (internal) */
static size_t make_key(uint8_t *k, unsigned long i, unsigned long seed)
{
	uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ULL ^ seed;
	x ^= x >> 31;
	x *= 0xBF58476D1CE4E5B9ULL;
	x ^= x >> 29;
	memcpy(k, &x, 8);
	size_t extra = i % 9;
	uint64_t y = x * 0x94D049BB133111EBULL + i;
	memcpy(k + 8, &y, 8);
	return 8 + extra;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: hart_bench POOL NKEYS [SEED]\n");
		return 2;
	}
	unsigned long n = strtoul(argv[2], NULL, 10), seed = argc > 3 ? strtoul(argv[3], NULL, 10) : 1;
	size_t size = ((size_t)n * 160 + (64u << 20)) & ~(size_t)4095;
	void *pool = crashcheck_pool_open(argv[1], size, 0, CRASHCHECK_POOL_CREATE);
	struct hart *t;
	if (!pool || pm_pool_format(pool, size) || !(t = hart_create())) {
		fprintf(stderr, "hart_bench: cannot set up the pool: %s\n", crashcheck_last_error());
		return 2;
	}
	uint8_t key[16], val[16];
	double t0 = now();
	unsigned long inserted = 0;
	for (unsigned long i = 0; i < n; i++) {
		size_t kl = make_key(key, i, seed);
		memcpy(val, key, 16);
		inserted += hart_insert(t, key, kl, val, 16) == CC_OK;
	}
	double t_build = now() - t0;
	hart_close(t);
	t0 = now();
	if (!(t = hart_open()) || hart_recover(t)) {
		fprintf(stderr, "hart_bench: recovery failed\n");
		return 1;
	}
	double t_recover = now() - t0;
	unsigned long found = 0;
	for (unsigned long i = 0; i < n; i += 97) {
		size_t kl = make_key(key, i, seed), vl;
		found += hart_lookup(t, key, kl, val, &vl) == CC_OK && !memcmp(val, key, 16);
	}
	printf("{\"keys\": %lu, \"inserted\": %lu, \"build_s\": %.3f, \"recover_s\": %.3f, \"ratio\": %.1f, "
	       "\"sample_found\": %lu, \"sample\": %lu}\n",
	       n, inserted, t_build, t_recover, t_build / t_recover, found, (n + 96) / 97);
	hart_close(t);
	return 0;
}
