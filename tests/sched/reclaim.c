/* reclaim.c -- a reader of a PM record that a writer replaces and then reuses, with no
 * reclamation scheme: the window of a leaf freed while a reader holds it, in miniature.
 *
 * The reader (thread 1) loads the slot, then the record's key, then its value, and prints
 * "mismatch" when the two are not one record's.  The writer (thread 2) runs two operations: it
 * waits until the reader has read the slot, then publishes a new record in the slot, then
 * overwrites the old one (the reuse).  Only a reader
 * held between its key and its value until both operations ended sees the mismatch.  Built with
 * --crashcheck-loads, so the loads are traced and are scheduling points under stale and aim.
 * Usage: reclaim POOL */
#include <crashcheck.h>
#include <immintrin.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>

struct rec { uint64_t key, val; };
struct pm { uint64_t slot; uint64_t pad[7]; struct rec recs[2]; };

static struct pm *pm;
static uint64_t got_key, got_val;
static int started;   /* the reader holds the slot: the writer may go on (whatever the seed) */

static void *reader(void *arg)
{
	(void)arg;
	crashcheck_op_begin(1);
	uint64_t s = __atomic_load_n(&pm->slot, __ATOMIC_ACQUIRE);
	volatile struct rec *r = &pm->recs[s];
	__atomic_store_n(&started, 1, __ATOMIC_RELEASE);
	got_key = r->key;
	got_val = r->val;   /* AIM: the reader's load an aim holds */
	crashcheck_op_end(1);
	return NULL;
}

static void *writer(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&started, __ATOMIC_ACQUIRE))
		sched_yield();
	crashcheck_op_begin(2);
	pm->recs[1] = (struct rec){ 2, 20 };
	_mm_clwb(&pm->recs[1]);
	_mm_sfence();
	__atomic_store_n(&pm->slot, 1, __ATOMIC_RELEASE);
	crashcheck_op_end(2);
	crashcheck_op_begin(3);
	pm->recs[0] = (struct rec){ 3, 30 };   /* the old record reused at once */
	_mm_clwb(&pm->recs[0]);
	_mm_sfence();
	crashcheck_op_end(3);
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
	pm->slot = 0;
	pm->recs[0] = (struct rec){ 1, 10 };
	_mm_clwb(pm);
	_mm_sfence();
	pthread_t t[2];
	pthread_create(&t[0], NULL, reader, NULL);
	pthread_create(&t[1], NULL, writer, NULL);
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	printf("%s\n", got_val == got_key * 10 ? "ok" : "mismatch");
	return 0;
}
