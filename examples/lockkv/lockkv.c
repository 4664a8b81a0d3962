/*
 * lockkv.c -- a fixed table of key/value slots in persistent memory, one mutex for every
 * operation (examples/lockkv)
 *
 * Written for crashcheck's tests of concurrent checking and persistency races (docs/scheduler.md
 * "Concurrent checking"). Every change is one 8-byte store made durable before the lock is
 * released: an insert writes and persists the value, then the key; a delete clears the key; an
 * update rewrites the value in place. The lock is DRAM, so nothing needs recovering.
 *
 * The seeded bug (bugs.json), BUG_LOCKKV_PERSIST_UNLOCKED: the store that publishes a change is
 * made durable only after the lock is released. Alone that is harmless (the operation is in
 * flight until its flush); with threads, a lookup in between returns a value a crash takes back.
 */
#include "lockkv.h"

#include <pthread.h>

#include "persist.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static struct lockkv_slot *find(struct lockkv *t, uint64_t key)
{
	for (int i = 0; i < LOCKKV_SLOTS; i++)
		if (t->slot[i].key == key)
			return &t->slot[i];
	return 0;
}

/* publish -- store V at *P and make it durable, then release the lock (the bug: the other way round) */
static void publish(uint64_t *p, uint64_t v)
{
	*p = v;
#ifdef BUG_LOCKKV_PERSIST_UNLOCKED
	pthread_mutex_unlock(&lock);
	persistent(p, sizeof(*p));
#else
	persistent(p, sizeof(*p));
	pthread_mutex_unlock(&lock);
#endif
}

int lockkv_insert(struct lockkv *t, uint64_t key, uint64_t value)
{
	pthread_mutex_lock(&lock);
	struct lockkv_slot *s = find(t, key) ? 0 : find(t, 0);
	if (!s) {
		int st = find(t, key) ? LOCKKV_EXISTS : LOCKKV_FULL;
		pthread_mutex_unlock(&lock);
		return st;
	}
	s->value = value;
	persistent(&s->value, sizeof(s->value));
	publish(&s->key, key);
	return LOCKKV_OK;
}

int lockkv_update(struct lockkv *t, uint64_t key, uint64_t value)
{
	pthread_mutex_lock(&lock);
	struct lockkv_slot *s = key ? find(t, key) : 0;
	if (!s) {
		pthread_mutex_unlock(&lock);
		return LOCKKV_NOTFOUND;
	}
	publish(&s->value, value);
	return LOCKKV_OK;
}

int lockkv_delete(struct lockkv *t, uint64_t key)
{
	pthread_mutex_lock(&lock);
	struct lockkv_slot *s = key ? find(t, key) : 0;
	if (!s) {
		pthread_mutex_unlock(&lock);
		return LOCKKV_NOTFOUND;
	}
	publish(&s->key, 0);
	return LOCKKV_OK;
}

int lockkv_get(struct lockkv *t, uint64_t key, uint64_t *value)
{
	pthread_mutex_lock(&lock);
	struct lockkv_slot *s = key ? find(t, key) : 0;
	if (s)
		*value = s->value;
	pthread_mutex_unlock(&lock);
	return s ? LOCKKV_OK : LOCKKV_NOTFOUND;
}
