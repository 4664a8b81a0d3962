/*
 * lfhash.h -- a lock-free hash map in persistent memory whose readers help make durable what
 * they read (examples/lfhash): a directory of segments published on first use, slots claimed by
 * their key, each slot's record published by one pointer CAS
 */
#ifndef LFHASH_H
#define LFHASH_H

#include <stdint.h>

enum { LFH_OK = 0, LFH_EXISTS = 1, LFH_NOTFOUND = 2, LFH_FULL = 3 };
#define LFH_SEGS 4           /* directory entries: segment of a key = key % LFH_SEGS */
#define LFH_SLOTS 32         /* slots per segment (4 x 32 > the 48 keys of a history) */
#define LFH_RECS 4096        /* records, never reused: one per insert or update */

struct lfh_rec {
	uint64_t key;
	uint64_t value;
};

struct lfh_slot {
	uint64_t key;        /* 0: free; claimed by CAS, never cleared */
	uint64_t rec;        /* the record's address | LFH_DIRTY while not yet durable; 0: absent */
};

struct lfh_seg {
	struct lfh_slot slot[LFH_SLOTS];
};

struct lfhash {
	uint64_t dir[LFH_SEGS];               /* &seg[i] | LFH_DIRTY once published; 0: unused */
	struct lfh_seg seg[LFH_SEGS];
	struct lfh_rec recs[LFH_RECS];
};

int lfh_insert(struct lfhash *h, uint64_t key, uint64_t value);
int lfh_update(struct lfhash *h, uint64_t key, uint64_t value);
int lfh_delete(struct lfhash *h, uint64_t key);
int lfh_get(struct lfhash *h, uint64_t key, uint64_t *value);
/* recovery: clear the dirty marks left by a crash and find the next free record */
void lfh_recover(struct lfhash *h);
/* the value of each present key, in slot order (the dump sorts) */
void lfh_each(struct lfhash *h, void (*fn)(void *ctx, uint64_t key, uint64_t value), void *ctx);

#endif /* LFHASH_H */
