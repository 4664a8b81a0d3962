/* racy.c -- two (or N) threads update a PM counter without synchronisation, with flushes and
 * fences: the final value and the trace depend on the interleaving.  Usage: racy POOL [THREADS] */
#include <crashcheck.h>
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define ITERS 20

static volatile uint64_t *pm;

static void *worker(void *arg)
{
	uint64_t id = (uintptr_t)arg;
	for (int i = 0; i < ITERS; i++) {
		uint64_t v = pm[0];          /* not a scheduling point (plain load) */
		pm[1 + id] = v;              /* PM store: a scheduling point */
		pm[0] = v + 1;               /* lost updates when another thread ran in between */
		_mm_clwb((void *)pm);
		_mm_sfence();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 2 ? atoi(argv[2]) : 2;
	pm = crashcheck_pool_open(argv[1], 1 << 16, 0, CRASHCHECK_POOL_CREATE);
	if (!pm) {
		fprintf(stderr, "%s\n", crashcheck_last_error());
		return 2;
	}
	pthread_t t[16];
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("%llu\n", (unsigned long long)pm[0]);
	return 0;
}
