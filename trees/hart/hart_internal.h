/*
 * hart_internal.h -- HART's PM layout, DRAM structures and the helpers its files share
 *
 * PM layout
 * ---------
 * The first word of the pool's root area points at the meta object (one
 * pm_alloc object) holding the persistent chain heads, the chunk-allocation
 * flag, the recycle log and HART_ULOGS update-log slots.  A chunk (one
 * pm_alloc object) is
 *     hdr   8 bytes: bits 0..55 slot bitmap, bits 56..61 index of the lowest
 *           free slot (56 when full), bits 62..63 full indicator (0 free, 1 full)
 *     next  8 bytes: PNext
 *     56 slots of the chain's slot size
 * Chain 0 holds leaves (40 bytes: key[24], key length, tagged value pointer),
 * chains 1 and 2 hold 8- and 16-byte values.  The header is always written
 * as one 8-byte store, so bitmap, next-free index and full indicator agree
 * in every image.
 *
 * The value pointer of a leaf carries the value's length in its top byte
 * (pool addresses are below 2^48), so an update swings pointer and length in
 * one failure-atomic store.
 *
 * DRAM
 * ----
 * A chunk index (sorted by address) maps any slot to its chunk and keeps the
 * slots EPMalloc handed out whose bit is not set yet ("reserved"), so two
 * threads never get the same slot and EPRecycle never frees a chunk that a
 * writer is filling.  The hash table maps hash keys to ARTs (art.c).
 */
#ifndef HART_INTERNAL_H
#define HART_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include "persist.h"
#include "pm_alloc.h"
#include "hart.h"

#ifndef HART_KH
#define HART_KH 2           /* bytes of hash key */
#endif
#define HART_SLOTS 56       /* objects per chunk (a 7-byte bitmap) */
#define HART_ALL ((UINT64_C(1) << HART_SLOTS) - 1)
#define HART_ULOGS 16       /* concurrent updates (one log slot each) */
#define HART_MAGIC UINT64_C(0x5452414854524148) /* "HARTHART" */

enum { CH_LEAF = 0, CH_VAL8 = 1, CH_VAL16 = 2, CH_N = 3 };

struct hart_leaf {
	uint8_t key[HART_KEY_MAX];
	uint64_t klen;
	uint64_t pval;      /* value slot address | value length << 56 */
};

struct ep_chunk {
	uint64_t hdr;
	struct ep_chunk *next;
	uint8_t slots[];
};

struct hart_ulog {          /* Algorithm 3's update log */
	uint64_t pleaf, poldv, pnewv, pad;
};

struct hart_meta {
	uint64_t magic;
	uint64_t kh;
	struct ep_chunk *head[CH_N];
	uint64_t alog;      /* chain + 1 while EPMalloc allocates a chunk */
	struct ep_chunk *pprev, *pcurrent; /* Algorithm 6's recycle log */
	uint64_t pad;
	struct hart_ulog ulog[HART_ULOGS];
};

/* DRAM: one entry per chained chunk */
struct ep_info {
	struct ep_chunk *c;
	int chain;
	uint64_t reserved;
};

struct hart_art;

struct hart {
	struct hart_meta *meta;
	pthread_mutex_t ep_lock;        /* chunk headers, chains, recycle log, pm_alloc */
	struct ep_info *idx;            /* sorted by address */
	size_t nidx, capidx;
	uint32_t ulog_busy;             /* update-log slots in use (under ep_lock) */
	pthread_rwlock_t ht_lock;       /* the hash table */
	struct hart_art **buckets;
	size_t nbuckets, narts;
};

/* an ART: the hash table's value (art.c) */
struct hart_art {
	struct hart_art *next;          /* hash chain */
	uint8_t hk[HART_KH];
	uint8_t hklen;
	pthread_rwlock_t lock;
	void *root;                     /* tagged: low bit set = leaf */
	size_t n;
};

static const size_t slot_size[CH_N] = {sizeof(struct hart_leaf), 8, 16};

/* load8 / store8 -- one 8-byte access the compiler may neither split nor merge */
static inline uint64_t load8(const void *p) { return *(const volatile uint64_t *)p; }
static inline void store8(void *p, uint64_t v) { *(volatile uint64_t *)p = v; }

static inline void *pval_addr(uint64_t pv) { return (void *)(uintptr_t)(pv & ((UINT64_C(1) << 56) - 1)); }
static inline size_t pval_len(uint64_t pv) { return pv >> 56; }
static inline uint64_t pval_make(const void *v, size_t len) { return (uintptr_t)v | (uint64_t)len << 56; }
static inline int val_chain(size_t vlen) { return vlen <= 8 ? CH_VAL8 : CH_VAL16; }

static inline size_t chunk_bytes(int chain) { return sizeof(struct ep_chunk) + HART_SLOTS * slot_size[chain]; }
static inline uint64_t hdr_bitmap(uint64_t h) { return h & HART_ALL; }
static inline unsigned hdr_next_free(uint64_t h) { return (h >> 56) & 0x3f; }
static inline unsigned hdr_full(uint64_t h) { return h >> 62; }

/* hdr_make -- the header for BITMAP: next-free index and full indicator derived */
static inline uint64_t hdr_make(uint64_t bitmap)
{
	uint64_t full = bitmap == HART_ALL;
	uint64_t nf = full ? HART_SLOTS : (uint64_t)__builtin_ctzll(~bitmap);
	return bitmap | nf << 56 | full << 62;
}

/* hart_key_split -- the hash key of KEY into HK, returns its true length (internal) */
static inline unsigned hart_key_split(const uint8_t *key, size_t klen, uint8_t hk[HART_KH])
{
	unsigned n = klen < HART_KH ? (unsigned)klen : HART_KH;
	memset(hk, 0, HART_KH);
	memcpy(hk, key, n);
	return n;
}

/* epalloc.c */
int ep_index_build(struct hart *t);
struct ep_info *ep_find(struct hart *t, const void *p, unsigned *slot);
void *ep_malloc(struct hart *t, int chain);
void ep_unreserve(struct hart *t, void *obj);
void ep_set_bit(struct hart *t, void *obj, int set);
int ep_bit(struct hart *t, const void *obj);
#ifdef BUG_HART_BIT_PERSIST_UNLOCKED
void ep_set_bit_unpersisted(struct hart *t, void *obj);
void ep_persist_bit(struct hart *t, void *obj);
#endif
void ep_recycle(struct hart *t, struct ep_chunk *c);
void ep_repair_leaf(struct hart *t, struct hart_leaf *l);
int ep_chain_of(struct hart *t, const struct ep_chunk *c, struct ep_chunk **prev);
void ep_free_leaf(struct hart *t, struct hart_leaf *l);

/* art.c: ART keys are the bytes after the hash key; leaves are compared by full key */
struct hart_leaf *art_search(struct hart_art *a, const uint8_t *key, size_t klen);
int art_insert(struct hart_art *a, struct hart_leaf *l);
struct hart_leaf *art_delete(struct hart_art *a, const uint8_t *key, size_t klen);
void art_each(struct hart_art *a, void (*fn)(void *ctx, struct hart_leaf *l), void *ctx);
void art_free(struct hart_art *a);

/* hart.c: the hash table */
struct hart_art *ht_find(struct hart *t, const uint8_t *key, size_t klen, int create);
void ht_free(struct hart *t);

#endif /* HART_INTERNAL_H */
