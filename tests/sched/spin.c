/* spin.c -- spinning code must not hang the scheduler.  Usage: spin POOL MODE, MODE one of
 *   cas   a CAS-retry loop incrementing a shared counter (global, DRAM)
 *   tas   a test-and-set spin lock (atomic exchange) around a PM update
 *   spin  pthread_spin_lock around a PM update
 *   flag  worker 1 waits (`while (!flag)`, atomic loads) for worker 0 to set a flag
 * Prints the counter; 3 threads x ITERS increments each, so the right answer is 3*ITERS. */
#include <crashcheck.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define THREADS 3
#define ITERS 50

static const char *mode;
static _Atomic uint64_t counter;
static atomic_int tas, flag;
static pthread_spinlock_t sl;
static volatile uint64_t *pm;

static void *worker(void *arg)
{
	int id = (int)(intptr_t)arg;
	if (strcmp(mode, "flag") == 0) {
		if (id == 1)
			while (!atomic_load(&flag))
				;
		else if (id == 0)
			atomic_store(&flag, 1);
	}
	for (int i = 0; i < ITERS; i++) {
		if (strcmp(mode, "cas") == 0 || strcmp(mode, "flag") == 0) {
			uint64_t old = atomic_load(&counter);
			while (!atomic_compare_exchange_weak(&counter, &old, old + 1))
				;
		} else if (strcmp(mode, "tas") == 0) {
			while (atomic_exchange(&tas, 1))
				;
			pm[0] = pm[0] + 1;
			atomic_fetch_add(&counter, 1);
			atomic_store(&tas, 0);
		} else {
			pthread_spin_lock(&sl);
			pm[0] = pm[0] + 1;
			atomic_fetch_add(&counter, 1);
			pthread_spin_unlock(&sl);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pm = crashcheck_pool_open(argc > 1 ? argv[1] : "spin.pool", 1 << 16, 0, CRASHCHECK_POOL_CREATE);
	mode = argc > 2 ? argv[2] : "cas";
	if (!pm)
		return 2;
	pthread_spin_init(&sl, 0);
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	printf("%llu\n", (unsigned long long)atomic_load(&counter));
	return 0;
}
