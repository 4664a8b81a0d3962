/* pending_early.c -- a reader that comes to its load before the writer has stored: a writer aim
 * (aim:...:READER:RSITE, docs/scheduler.md) holds the reader before its load at RSITE until the
 * writer's aimed store, then the writer after it, so the load reads the store while pending.
 *
 * The reader (thread 2) begins its operation, then loads the PM word (the line marked LOAD)
 * and prints what it saw, with "pending" when the store was not yet durable.  The writer
 * (thread 1) waits until the reader has begun, stores 7 (the line marked STORE), then flushes
 * and fences.  Without a hold the reader, already running, mostly loads 0.  Built with
 * --crashcheck-loads.  Usage: pending_early POOL */
#include <crashcheck.h>
#include <immintrin.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>

struct pm { uint64_t word; uint64_t pad[7]; };

static struct pm *pm;
static int begun, durable;
static uint64_t seen;
static int seen_pending;

static void *writer(void *arg)
{
	(void)arg;
	crashcheck_op_begin(1);
	while (!__atomic_load_n(&begun, __ATOMIC_ACQUIRE))
		sched_yield();
	pm->word = 7;   /* STORE: the writer aim parks right after it */
	_mm_clwb(&pm->word);
	_mm_sfence();
	__atomic_store_n(&durable, 1, __ATOMIC_RELEASE);
	crashcheck_op_end(1);
	return NULL;
}

static void *reader(void *arg)
{
	(void)arg;
	crashcheck_op_begin(2);
	__atomic_store_n(&begun, 1, __ATOMIC_RELEASE);
	seen = *(volatile uint64_t *)&pm->word;   /* LOAD: the reader's load */
	seen_pending = !__atomic_load_n(&durable, __ATOMIC_ACQUIRE);
	crashcheck_op_end(2);
	return NULL;
}

int main(int argc, char **argv)
{
	(void)argc;
	pm = crashcheck_pool_open(argv[1], 1 << 16, 0, CRASHCHECK_POOL_CREATE);
	if (!pm) {
		fprintf(stderr, "%s\n", crashcheck_last_error());
		return 2;
	}
	pm->word = 0;
	_mm_clwb(pm);
	_mm_sfence();
	pthread_t t[2];
	pthread_create(&t[0], NULL, writer, NULL);
	pthread_create(&t[1], NULL, reader, NULL);
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	printf("saw %llu%s\n", (unsigned long long)seen, seen == 7 && seen_pending ? " pending" : "");
	return 0;
}
