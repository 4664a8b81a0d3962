/*
 * heart_mem.c -- Heart's thread-safe allocation and epoch-based reclamation
 *
 * Allocation
 * ----------
 * trees/common's pm_alloc keeps its DRAM view (free slot hints, chunk
 * bitmaps) without any lock, so Heart serialises pm_alloc and pm_free behind
 * one spinlock.  The allocation site is the caller's (heart_alloc macro), so
 * a leak report names Heart's line, not this file's.
 *
 * Epochs
 * ------
 * A thread announces the global epoch while it runs an operation
 * (epoch_enter) and withdraws it when done (epoch_exit).  An object unlinked
 * from the tree is retired with the epoch current at the unlink; the global
 * epoch advances only when every announcing thread has seen it, so an object
 * retired at epoch e is freed once the global epoch reaches e + 2: every
 * thread that could still hold a pointer to it has left.  A thread drains its
 * own retired list at epoch_exit (single-threaded: at once, so no retired
 * object outlives its operation).  Retired lists live in DRAM and are lost at
 * a crash; recovery frees their objects because the root no longer reaches
 * them.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include "heart_internal.h"
#include "pm_alloc.h"

#define MAXTHR 128

struct limbo_ent {
	void *p;
	uint64_t epoch;
};

static struct thr {
	uint64_t ann;             /* 0 outside operations, else the epoch announced */
	int used;
	struct limbo_ent *limbo;  /* retired by this thread, oldest first */
	size_t n, cap;
	char pad[64];
} thr[MAXTHR];

static uint64_t global_epoch = 1;
static int nthr;
static __thread int my_tid = -1;
static int alloc_lock;

/* lock / unlock -- the allocator's spinlock (internal) */
static void lock(void)
{
	while (__atomic_exchange_n(&alloc_lock, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(&alloc_lock, __ATOMIC_RELAXED))
			sched_yield();
}

static void unlock(void) { __atomic_store_n(&alloc_lock, 0, __ATOMIC_RELEASE); }

/* heart_alloc_at -- pm_alloc under the allocator lock */
void *heart_alloc_at(size_t n, crashcheck_site_t site)
{
	lock();
	void *p = pm_alloc_at(n, site);
	unlock();
	return p;
}

/* heart_free -- pm_free under the allocator lock */
void heart_free(void *p)
{
	lock();
	pm_free(p);
	unlock();
}

/* me -- this thread's record, registered on first use (internal) */
static struct thr *me(void)
{
	if (my_tid < 0) {
		int i = __atomic_fetch_add(&nthr, 1, __ATOMIC_SEQ_CST);
		if (i >= MAXTHR) {
			fprintf(stderr, "heart: more than %d threads\n", MAXTHR);
			abort();
		}
		my_tid = i;
		__atomic_store_n(&thr[i].used, 1, __ATOMIC_RELEASE);
	}
	return &thr[my_tid];
}

/* epoch_enter -- announce the current epoch before touching the tree */
void epoch_enter(void)
{
	struct thr *t = me();
	uint64_t e = __atomic_load_n(&global_epoch, __ATOMIC_ACQUIRE);
	__atomic_store_n(&t->ann, e, __ATOMIC_SEQ_CST);
}

/* try_advance -- move the global epoch on if every active thread has seen it (internal) */
static void try_advance(void)
{
	uint64_t g = __atomic_load_n(&global_epoch, __ATOMIC_SEQ_CST);
	int n = __atomic_load_n(&nthr, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n && i < MAXTHR; i++) {
		uint64_t a = __atomic_load_n(&thr[i].ann, __ATOMIC_SEQ_CST);
		if (a && a != g)
			return;
	}
	__atomic_compare_exchange_n(&global_epoch, &g, g + 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
}

/* reclaim -- free T's retired objects that no thread can hold any more (internal) */
static void reclaim(struct thr *t)
{
	uint64_t g = __atomic_load_n(&global_epoch, __ATOMIC_ACQUIRE);
	size_t k = 0;
	while (k < t->n && t->limbo[k].epoch + 2 <= g)
		heart_free(t->limbo[k++].p);
	if (k) {
		for (size_t j = k; j < t->n; j++)
			t->limbo[j - k] = t->limbo[j];
		t->n -= k;
	}
}

/* epoch_exit -- withdraw the announcement; free what has become safe */
void epoch_exit(void)
{
	struct thr *t = me();
	__atomic_store_n(&t->ann, 0, __ATOMIC_RELEASE);
	if (t->n) {
		try_advance();
		try_advance();
		reclaim(t);
	}
}

/* epoch_retire -- free P once no thread active now can reach it */
void epoch_retire(void *p)
{
	struct thr *t = me();
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;
		struct limbo_ent *l = realloc(t->limbo, cap * sizeof(*l));
		if (!l) {
			fprintf(stderr, "heart: out of DRAM for retired objects\n");
			abort();
		}
		t->limbo = l;
		t->cap = cap;
	}
	t->limbo[t->n++] = (struct limbo_ent){p, __atomic_load_n(&global_epoch, __ATOMIC_ACQUIRE)};
}

/* epoch_drain -- free every retired object of every thread (no operation may run) */
void epoch_drain(void)
{
	for (int i = 0; i < nthr && i < MAXTHR; i++) {
		for (size_t k = 0; k < thr[i].n; k++)
			heart_free(thr[i].limbo[k].p);
		thr[i].n = 0;
	}
}

/* epoch_reset -- forget retired objects without freeing them (recovery sweeps them) */
void epoch_reset(void)
{
	for (int i = 0; i < nthr && i < MAXTHR; i++) {
		thr[i].n = 0;
		thr[i].ann = 0;
	}
	alloc_lock = 0;
}
