/*
 * seqleaf.h -- one sorted B+tree leaf in persistent memory: writers under a lock shift entries
 * to keep the keys sorted, readers take no lock and validate by a sequence number
 * (examples/seqleaf); key 0 is never stored
 */
#ifndef SEQLEAF_H
#define SEQLEAF_H

#include <stdint.h>

enum { SL_OK = 0, SL_EXISTS = 1, SL_NOTFOUND = 2, SL_FULL = 3 };
#define SL_SLOTS 64           /* more than the 48 keys a fuzzed history loads at most */

struct sl_entry {
	uint64_t key;
	uint64_t value;
};

struct seqleaf {
	uint64_t n;                       /* entries in use, sorted by key */
	uint64_t undo;                    /* 1: a change is under way, recovery restores the copy */
	uint64_t pad[6];
	struct sl_entry e[SL_SLOTS];
	uint64_t copy_n;                  /* the leaf before the change under way */
	uint64_t pad2[7];
	struct sl_entry copy[SL_SLOTS];
};

int sl_insert(struct seqleaf *l, uint64_t key, uint64_t value);
int sl_update(struct seqleaf *l, uint64_t key, uint64_t value);
int sl_delete(struct seqleaf *l, uint64_t key);
int sl_get(struct seqleaf *l, uint64_t key, uint64_t *value);
/* recovery: a change a crash interrupted is undone */
void sl_recover(struct seqleaf *l);

#endif /* SEQLEAF_H */
