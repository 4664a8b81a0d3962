/* livelock.c -- threads that can never finish.  Usage: livelock POOL MODE
 *   flags   two threads each wait (atomic loads) for the other's flag, set only after the wait
 *   op      one thread, inside an operation, waits for a flag nobody sets while it keeps
 *           storing to PM (no spin visible: caught by the per-operation step bound)
 *   plain   one thread waits for a plain (non-atomic) flag: no scheduling point at all, so
 *           only the watchdog can tell (a hang) */
#include <crashcheck.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

atomic_int f[2], never; /* not static: the optimizer must not prove `never` constant */
static volatile uint64_t *pm;
static const char *mode;
volatile int plain_flag;

static void *worker(void *arg)
{
	int id = (int)(intptr_t)arg;
	if (strcmp(mode, "flags") == 0) {
		while (!atomic_load(&f[1 - id]))
			;
		atomic_store(&f[id], 1);
	} else if (strcmp(mode, "plain") == 0) {
		if (id == 0)
			while (!plain_flag)
				;
		else
			plain_flag = 0;
	} else if (id == 0) {
		crashcheck_op_begin(7);
		for (uint64_t i = 0; !atomic_load_explicit(&never, memory_order_relaxed); i++)
			pm[0] = i;
		crashcheck_op_end(7);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pm = crashcheck_pool_open(argc > 1 ? argv[1] : "livelock.pool", 1 << 16, 0, CRASHCHECK_POOL_CREATE);
	mode = argc > 2 ? argv[2] : "flags";
	if (!pm)
		return 2;
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("finished\n");
	return 0;
}
