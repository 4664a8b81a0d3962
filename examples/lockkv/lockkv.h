/*
 * lockkv.h -- a fixed table of key/value slots behind one lock, safe from several threads
 * (examples/lockkv); key 0 marks an empty slot
 */
#ifndef LOCKKV_H
#define LOCKKV_H

#include <stdint.h>

enum { LOCKKV_OK = 0, LOCKKV_EXISTS = 1, LOCKKV_NOTFOUND = 2, LOCKKV_FULL = 3 };
#define LOCKKV_SLOTS 64       /* more than the 48 keys a fuzzed history loads at most */

struct lockkv_slot {
	uint64_t key;         /* 0: empty */
	uint64_t value;
};

struct lockkv {
	struct lockkv_slot slot[LOCKKV_SLOTS];
};

int lockkv_insert(struct lockkv *t, uint64_t key, uint64_t value);
int lockkv_update(struct lockkv *t, uint64_t key, uint64_t value);
int lockkv_delete(struct lockkv *t, uint64_t key);
int lockkv_get(struct lockkv *t, uint64_t key, uint64_t *value);

#endif /* LOCKKV_H */
