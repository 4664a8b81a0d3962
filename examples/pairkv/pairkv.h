/*
 * pairkv.h -- a fixed table of 16-byte key/value slots in persistent memory, one lock for every
 * operation (examples/pairkv); key 0 marks an empty slot
 */
#ifndef PAIRKV_H
#define PAIRKV_H

#include <stdint.h>

enum { PAIRKV_OK = 0, PAIRKV_EXISTS = 1, PAIRKV_NOTFOUND = 2, PAIRKV_FULL = 3 };
#define PAIRKV_SLOTS 64       /* more than the 48 keys a fuzzed history loads at most */

struct pairkv_slot {
	uint64_t key;         /* 0: empty */
	uint64_t value;
} __attribute__((aligned(16)));

struct pairkv {
	struct pairkv_slot slot[PAIRKV_SLOTS];
};

int pairkv_recover(struct pairkv *t);
int pairkv_insert(struct pairkv *t, uint64_t key, uint64_t value);
int pairkv_update(struct pairkv *t, uint64_t key, uint64_t value);
int pairkv_delete(struct pairkv *t, uint64_t key);
int pairkv_get(struct pairkv *t, uint64_t key, uint64_t *value);

#endif /* PAIRKV_H */
