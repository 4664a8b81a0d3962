/*
 * slotkv.c -- a fixed table of key/value slots in persistent memory (examples/slotkv)
 *
 * Written for crashcheck's tests of reserved keys (docs/trees.md "Expectations"): a slot whose
 * key is 0 is empty, so key 0 cannot be stored, which expect.json declares ("reserved_keys").
 * Every change is published by one 8-byte store made durable after what it publishes: an insert
 * writes and persists the value, then the key; a delete clears the key; an update rewrites the
 * value in place.
 */
#include "slotkv.h"

#include "persist.h"

static struct slotkv_slot *find(struct slotkv *t, uint64_t key)
{
	for (int i = 0; i < SLOTKV_SLOTS; i++)
		if (t->slot[i].key == key)
			return &t->slot[i];
	return 0;
}

int slotkv_insert(struct slotkv *t, uint64_t key, uint64_t value)
{
	if (find(t, key))
		return SLOTKV_EXISTS;       /* key 0 "exists" in every empty slot: why it is reserved */
	struct slotkv_slot *s = find(t, 0);
	if (!s)
		return SLOTKV_FULL;
	s->value = value;
	persistent(&s->value, sizeof(s->value));
	s->key = key;
	persistent(&s->key, sizeof(s->key));
	return SLOTKV_OK;
}

int slotkv_update(struct slotkv *t, uint64_t key, uint64_t value)
{
	struct slotkv_slot *s = key ? find(t, key) : 0;
	if (!s)
		return SLOTKV_NOTFOUND;
	s->value = value;
	persistent(&s->value, sizeof(s->value));
	return SLOTKV_OK;
}

int slotkv_delete(struct slotkv *t, uint64_t key)
{
	struct slotkv_slot *s = key ? find(t, key) : 0;
	if (!s)
		return SLOTKV_NOTFOUND;
	s->key = 0;
	persistent(&s->key, sizeof(s->key));
	return SLOTKV_OK;
}

int slotkv_get(struct slotkv *t, uint64_t key, uint64_t *value)
{
	struct slotkv_slot *s = key ? find(t, key) : 0;
	if (!s)
		return SLOTKV_NOTFOUND;
	*value = s->value;
	return SLOTKV_OK;
}
