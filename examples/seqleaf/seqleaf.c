/*
 * seqleaf.c -- one sorted B+tree leaf in persistent memory (examples/seqleaf)
 *
 * Written for crashcheck's tests of persistency races (README "Concurrent checking"). Writers
 * take a mutex; an insert shifts the entries above the new key one place up (memmove) and writes
 * the new entry and the count, a delete shifts them down; an update rewrites a value in place.
 * Readers take no lock: they read a DRAM sequence number (odd while a writer changes the leaf),
 * search, and start again if it changed. A writer makes its change durable (flush, fence) before
 * it makes the sequence number even again, so a reader never returns what a crash can take back.
 * A crash inside a shift can leave the leaf with an entry twice or a hole, so each change first
 * makes a durable copy of the leaf and sets `undo`; recovery puts the copy back while `undo` is
 * set, and the change clears it once the shifted leaf is durable.
 *
 * The seeded bug (bugs.json), BUG_SEQLEAF_SHIFT_UNFLUSHED: an insert or delete ends the sequence
 * (even again, readers may go on) before it flushes the shifted entries; a lookup traversing the
 * leaf then finds the new key, or misses the deleted one, and returns, and a crash before the
 * flush takes the change back.
 */
#include "seqleaf.h"

#include <pthread.h>
#include <string.h>

#include "persist.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t seq;          /* DRAM: odd while a writer changes the leaf */

static void begin(void) { __atomic_fetch_add(&seq, 1, __ATOMIC_ACQ_REL); }
static void end(void) { __atomic_fetch_add(&seq, 1, __ATOMIC_ACQ_REL); }

/* find -- the index of the first entry with a key >= KEY */
static uint64_t find(const struct seqleaf *l, uint64_t n, uint64_t key)
{
	uint64_t i = 0;
	while (i < n && l->e[i].key < key)
		i++;
	return i;
}

/* start -- a change begins: the leaf copied and the copy made durable, then `undo` set */
static void start(struct seqleaf *l)
{
	begin();
	l->copy_n = l->n;
	memcpy(l->copy, l->e, sizeof(l->e));
	persistent(&l->copy_n, sizeof(l->copy_n) + sizeof(l->pad2) + sizeof(l->copy));
	l->undo = 1;
	persistent(&l->undo, sizeof(l->undo));
}

/* commit -- make the entries [FROM, N) and the count durable, clear `undo`, then end the
 * sequence (the bug: end it first) */
static void commit(struct seqleaf *l, uint64_t from, uint64_t n)
{
#ifdef BUG_SEQLEAF_SHIFT_UNFLUSHED
	end();
	pthread_mutex_unlock(&lock);
#endif
	if (n > from)
		persistent(&l->e[from], (n - from) * sizeof(l->e[0]));
	persistent(&l->n, sizeof(l->n));
	l->undo = 0;
	persistent(&l->undo, sizeof(l->undo));
#ifndef BUG_SEQLEAF_SHIFT_UNFLUSHED
	end();
	pthread_mutex_unlock(&lock);
#endif
}

int sl_insert(struct seqleaf *l, uint64_t key, uint64_t value)
{
	pthread_mutex_lock(&lock);
	uint64_t n = l->n, i = find(l, n, key);
	if ((i < n && l->e[i].key == key) || n == SL_SLOTS) {
		pthread_mutex_unlock(&lock);
		return n == SL_SLOTS ? SL_FULL : SL_EXISTS;
	}
	start(l);
	memmove(&l->e[i + 1], &l->e[i], (n - i) * sizeof(l->e[0]));
	l->e[i].key = key;
	l->e[i].value = value;
	l->n = n + 1;
	commit(l, i, n + 1);
	return SL_OK;
}

int sl_update(struct seqleaf *l, uint64_t key, uint64_t value)
{
	pthread_mutex_lock(&lock);
	uint64_t n = l->n, i = find(l, n, key);
	if (i == n || l->e[i].key != key) {
		pthread_mutex_unlock(&lock);
		return SL_NOTFOUND;
	}
	start(l);
	l->e[i].value = value;
	commit(l, i, i + 1);
	return SL_OK;
}

int sl_delete(struct seqleaf *l, uint64_t key)
{
	pthread_mutex_lock(&lock);
	uint64_t n = l->n, i = find(l, n, key);
	if (i == n || l->e[i].key != key) {
		pthread_mutex_unlock(&lock);
		return SL_NOTFOUND;
	}
	start(l);
	memmove(&l->e[i], &l->e[i + 1], (n - 1 - i) * sizeof(l->e[0]));
	l->n = n - 1;
	commit(l, i, n - 1);
	return SL_OK;
}

int sl_get(struct seqleaf *l, uint64_t key, uint64_t *value)
{
	for (;;) {
		uint64_t s = __atomic_load_n(&seq, __ATOMIC_ACQUIRE);
		if (s & 1)
			continue;                 /* a writer is shifting: the scheduler sees this spin */
		uint64_t n = *(volatile uint64_t *)&l->n;
		if (n > SL_SLOTS)
			n = SL_SLOTS;
		uint64_t i = find(l, n, key);
		int found = i < n && l->e[i].key == key;
		uint64_t v = found ? l->e[i].value : 0;
		if (__atomic_load_n(&seq, __ATOMIC_ACQUIRE) != s)
			continue;
		if (found)
			*value = v;
		return found ? SL_OK : SL_NOTFOUND;
	}
}

void sl_recover(struct seqleaf *l)
{
	if (l->undo) {
		l->n = l->copy_n;
		memcpy(l->e, l->copy, sizeof(l->e));
		persistent(l, sizeof(l->n) + sizeof(l->undo) + sizeof(l->pad) + sizeof(l->e));
		l->undo = 0;
		persistent(&l->undo, sizeof(l->undo));
	}
	if (l->n > SL_SLOTS)
		l->n = SL_SLOTS;
}
