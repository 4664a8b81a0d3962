/*
 * slotkv.h -- a fixed table of key/value slots; key 0 marks an empty slot (examples/slotkv)
 */
#ifndef SLOTKV_H
#define SLOTKV_H

#include <stdint.h>

enum { SLOTKV_OK = 0, SLOTKV_EXISTS = 1, SLOTKV_NOTFOUND = 2, SLOTKV_FULL = 3 };
#define SLOTKV_SLOTS 64       /* more than the 48 keys a fuzzed history loads at most */

struct slotkv_slot {
	uint64_t key;         /* 0: empty */
	uint64_t value;
};

struct slotkv {
	struct slotkv_slot slot[SLOTKV_SLOTS];
};

int slotkv_insert(struct slotkv *t, uint64_t key, uint64_t value);
int slotkv_update(struct slotkv *t, uint64_t key, uint64_t value);
int slotkv_delete(struct slotkv *t, uint64_t key);
int slotkv_get(struct slotkv *t, uint64_t key, uint64_t *value);

#endif /* SLOTKV_H */
