/*
 * pairkv.c -- a fixed table of 16-byte key/value slots in persistent memory, one mutex for every
 * operation (examples/pairkv)
 *
 * Written for crashcheck's tests of torn stores (README "Concurrent checking", the `torn-store`
 * class). A slot is published by its key: an insert makes the value durable first, then stores
 * and persists the key (one 8-byte store, failure-atomic); a delete clears the key; an update
 * rewrites the value (8 bytes) in place. Recovery counts the used slots again (a DRAM hint of
 * where the next insert looks first), so it reads every key.
 *
 * The seeded bug (bugs.json), BUG_PAIRKV_ONE_STORE: an insert writes the slot {key, value} with
 * one 16-byte SSE store and persists it once. A 16-byte store is not failure-atomic (x86
 * persists 8 bytes at a time): a crash can keep the key and lose the value, and the key then
 * names a value that was never written. With the store whole, or not at all, the crash is
 * harmless (the insert was in flight).
 */
#include "pairkv.h"

#include <emmintrin.h>
#include <pthread.h>

#include "persist.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int used;              /* DRAM: slots in use, recounted by recovery */

static struct pairkv_slot *find(struct pairkv *t, uint64_t key)
{
	for (int i = 0; i < PAIRKV_SLOTS; i++)
		if (t->slot[i].key == key)
			return &t->slot[i];
	return 0;
}

int pairkv_recover(struct pairkv *t)
{
	used = 0;
	for (int i = 0; i < PAIRKV_SLOTS; i++)
		used += t->slot[i].key != 0;
	return 0;
}

int pairkv_insert(struct pairkv *t, uint64_t key, uint64_t value)
{
	pthread_mutex_lock(&lock);
	struct pairkv_slot *s = find(t, key) ? 0 : (used < PAIRKV_SLOTS ? find(t, 0) : 0);
	if (!s) {
		int st = find(t, key) ? PAIRKV_EXISTS : PAIRKV_FULL;
		pthread_mutex_unlock(&lock);
		return st;
	}
#ifdef BUG_PAIRKV_ONE_STORE
	/* one aligned 16-byte store (movdqa): one instruction, yet two failure-atomic pieces */
	_mm_store_si128((__m128i *)s, _mm_set_epi64x((long long)value, (long long)key));
	persistent(s, sizeof(*s));
#else
	s->value = value;
	persistent(&s->value, sizeof(s->value));
	s->key = key;
	persistent(&s->key, sizeof(s->key));
#endif
	used++;
	pthread_mutex_unlock(&lock);
	return PAIRKV_OK;
}

int pairkv_update(struct pairkv *t, uint64_t key, uint64_t value)
{
	pthread_mutex_lock(&lock);
	struct pairkv_slot *s = key ? find(t, key) : 0;
	if (s) {
		s->value = value;
		persistent(&s->value, sizeof(s->value));
	}
	pthread_mutex_unlock(&lock);
	return s ? PAIRKV_OK : PAIRKV_NOTFOUND;
}

int pairkv_delete(struct pairkv *t, uint64_t key)
{
	pthread_mutex_lock(&lock);
	struct pairkv_slot *s = key ? find(t, key) : 0;
	if (s) {
		s->key = 0;
		persistent(&s->key, sizeof(s->key));
		used--;
	}
	pthread_mutex_unlock(&lock);
	return s ? PAIRKV_OK : PAIRKV_NOTFOUND;
}

int pairkv_get(struct pairkv *t, uint64_t key, uint64_t *value)
{
	pthread_mutex_lock(&lock);
	struct pairkv_slot *s = key ? find(t, key) : 0;
	if (s)
		*value = s->value;
	pthread_mutex_unlock(&lock);
	return s ? PAIRKV_OK : PAIRKV_NOTFOUND;
}
