/*
 * heart_bench.c -- native insert/lookup throughput of Heart with 1..T threads
 *
 * Usage: heart_bench POOL KEYS THREADS
 * Each thread inserts, then looks up, its share of KEYS random 8-byte keys;
 * prints "threads T insert Mops/s lookup Mops/s".  A sanity check, not a
 * measurement of the paper's numbers (DRAM-backed pool, no PM).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "crashcheck.h"
#include "pm_alloc.h"
#include "../../trees/heart/heart.h"

static struct heart *tree;
static size_t nkeys;
static int nthreads;
static pthread_barrier_t bar;

static void key_of(size_t i, uint8_t k[8])
{
	uint64_t x = i * 0x9E3779B97F4A7C15ULL;
	for (int b = 0; b < 8; b++)
		k[b] = (uint8_t)(x >> (56 - 8 * b));
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *run(void *arg)
{
	size_t t = (size_t)arg;
	uint8_t k[8], v[8] = {1}, got[16];
	size_t glen;
	pthread_barrier_wait(&bar);
	for (size_t i = t; i < nkeys; i += (size_t)nthreads) {
		key_of(i, k);
		if (heart_insert(tree, k, 8, v, 8) != CC_OK)
			abort();
	}
	pthread_barrier_wait(&bar);
	for (size_t i = t; i < nkeys; i += (size_t)nthreads) {
		key_of(i, k);
		if (heart_lookup(tree, k, 8, got, &glen) != CC_OK)
			abort();
	}
	pthread_barrier_wait(&bar);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	nkeys = strtoul(argv[2], NULL, 10);
	nthreads = atoi(argv[3]);
	size_t size = (size_t)1 << 30;
	void *pool = crashcheck_pool_open(argv[1], size, 0, CRASHCHECK_POOL_CREATE);
	if (!pool || pm_pool_format(pool, size) || !(tree = heart_create()))
		return 2;
	pthread_t th[64];
	pthread_barrier_init(&bar, NULL, (unsigned)nthreads + 1);
	for (int t = 0; t < nthreads; t++)
		pthread_create(&th[t], NULL, run, (void *)(size_t)t);
	pthread_barrier_wait(&bar);
	double t0 = now();
	pthread_barrier_wait(&bar);
	double t1 = now();
	pthread_barrier_wait(&bar);
	double t2 = now();
	for (int t = 0; t < nthreads; t++)
		pthread_join(th[t], NULL);
	printf("threads %d insert %.2f lookup %.2f\n", nthreads, nkeys / (t1 - t0) / 1e6, nkeys / (t2 - t1) / 1e6);
	return 0;
}
