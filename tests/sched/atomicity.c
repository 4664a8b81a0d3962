/* atomicity.c -- an atomicity violation that needs exactly one preemption (a depth-2 bug for
 * PCT): each worker does some PM work, then reads the counter and writes it back plus one with
 * two separate atomic accesses.  A preemption between the two loses an update.
 * Exits 1 (and prints "lost update") when that happens.  Usage: atomicity POOL */
#include <crashcheck.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

static _Atomic uint64_t counter;
static volatile uint64_t *pm;

static void *worker(void *arg)
{
	int id = (int)(intptr_t)arg;
	for (int i = 0; i < 8; i++)
		pm[8 * id + i] = (uint64_t)i;         /* 8 scheduling points of noise */
	uint64_t v = atomic_load(&counter);
	atomic_store(&counter, v + 1);            /* should have been one fetch_add */
	for (int i = 0; i < 8; i++)
		pm[8 * id + i] = 0;
	return NULL;
}

int main(int argc, char **argv)
{
	pm = crashcheck_pool_open(argc > 1 ? argv[1] : "atomicity.pool", 1 << 16, 0, CRASHCHECK_POOL_CREATE);
	if (!pm)
		return 2;
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	if (atomic_load(&counter) != 2) {
		printf("lost update\n");
		return 1;
	}
	printf("ok\n");
	return 0;
}
