/*
 * workload.c -- the scheduling-point workload of bench/sched
 *
 * THREADS threads each do N/THREADS iterations of one scheduling point:
 *   atomic  an atomic fetch-add on a DRAM counter (the pass's __cc_sched_atomic)
 *   store   a plain 8-byte store into the PM pool (a traced store; run with CRASHCHECK_TRACE)
 * Prints the nanoseconds from the first pthread_create to the last pthread_join.
 * Usage: workload POOL MODE N [THREADS]
 */
#include <crashcheck.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static _Atomic uint64_t counter;
static volatile uint64_t *pool;
static uint64_t per_thread;
static int store_mode;

static void *worker(void *arg)
{
	uint64_t id = (uintptr_t)arg;
	for (uint64_t i = 0; i < per_thread; i++) {
		if (store_mode)
			pool[(id * 4096 + i) % 65536] = i;
		else
			atomic_fetch_add_explicit(&counter, 1, memory_order_relaxed);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: %s POOL atomic|store N [THREADS]\n", argv[0]);
		return 2;
	}
	store_mode = strcmp(argv[2], "store") == 0;
	uint64_t n = strtoull(argv[3], NULL, 0);
	int threads = argc > 4 ? atoi(argv[4]) : 2;
	pool = crashcheck_pool_open(argv[1], 1 << 20, 0, CRASHCHECK_POOL_CREATE);
	if (!pool) {
		fprintf(stderr, "workload: %s\n", crashcheck_last_error());
		return 2;
	}
	per_thread = n / (uint64_t)threads;
	pthread_t t[64];
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%lld\n", (long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
	return 0;
}
