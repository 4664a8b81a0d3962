/* pending.c -- a writer that stores a PM word under a lock and makes it durable only after
 * releasing the lock, and a reader that reads the word under the same lock: the window of a
 * persistency race (examples/lockkv's persist-unlocked) in miniature.
 *
 * The writer (thread 1) stores 7 under the mutex (the line marked STORE), unlocks, then flushes
 * and fences.  The reader (thread 2) waits until the writer has begun, then takes the mutex and
 * loads the word (the line marked LOAD) and prints what it saw with "pending" when the store was
 * not yet durable.  A writer aim at the store (aim:...:READER:RSITE, docs/scheduler.md) holds
 * the writer after its store until the reader loaded it and ended its operation; built with
 * --crashcheck-loads.  With a second argument (early), the reader comes first and reads without
 * the lock (a lock-free reader): it does not wait, the writer waits until the reader has begun,
 * and without a hold the reader mostly loads 0; a writer aim holds the reader before its load
 * until the writer's store.
 * Usage: pending POOL [early] */
#include <crashcheck.h>
#include <immintrin.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>

struct pm { uint64_t word; uint64_t pad[7]; };

static struct pm *pm;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int begun, reader_begun, durable, early;
static uint64_t seen;
static int seen_pending;

static void *writer(void *arg)
{
	(void)arg;
	crashcheck_op_begin(1);
	while (early && !__atomic_load_n(&reader_begun, __ATOMIC_ACQUIRE))
		sched_yield();
	__atomic_store_n(&begun, 1, __ATOMIC_RELEASE);
	pthread_mutex_lock(&lock);
	pm->word = 7;   /* STORE: the writer aim parks right after it */
	pthread_mutex_unlock(&lock);
	_mm_clwb(&pm->word);
	_mm_sfence();
	__atomic_store_n(&durable, 1, __ATOMIC_RELEASE);
	crashcheck_op_end(1);
	return NULL;
}

static void *reader(void *arg)
{
	(void)arg;
	while (!early && !__atomic_load_n(&begun, __ATOMIC_ACQUIRE))
		sched_yield();
	crashcheck_op_begin(2);
	__atomic_store_n(&reader_begun, 1, __ATOMIC_RELEASE);
	if (!early)
		pthread_mutex_lock(&lock);
	seen = *(volatile uint64_t *)&pm->word;   /* LOAD: the reader's load */
	seen_pending = !__atomic_load_n(&durable, __ATOMIC_ACQUIRE);
	if (!early)
		pthread_mutex_unlock(&lock);
	crashcheck_op_end(2);
	return NULL;
}

int main(int argc, char **argv)
{
	early = argc > 2;
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
