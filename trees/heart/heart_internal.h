/*
 * heart_internal.h -- Heart's layout: contexts, hashed nodes, leaves, epochs
 *
 * Context (Node Decoupling)
 * -------------------------
 * An internal node holds nothing but its children's 8-byte contexts:
 *
 *     bits  0..2   type      0 empty, 1 leaf, 2..6 N8 N32 N64 N128 N256, 7 tombstone
 *     bits  3..7   version   odd while the child is being transformed, or while
 *                            its slot is frozen by a transformation of the node
 *                            that holds it
 *     bits  8..15  key byte  the byte of the key this child is indexed by
 *     bits 16..57  pointer   child address >> 6 (every node and leaf is 64-aligned)
 *     bits 58..63  prefix    internal child: bytes compressed between this
 *                            node's key byte and the byte the child indexes;
 *                            leaf: the key's length (a cheap filter)
 *
 * A node with prefix length p, reached by key byte at position i, indexes
 * the key byte at position i + 1 + p.  The prefix bytes are stored nowhere:
 * every leaf holds its full key, and an insert checks a node's prefix
 * against any leaf below it (optimistic path compression); a lookup only
 * compares the full key at the leaf.  Prefixes longer than 63 bytes do not
 * fit the 6-bit field: the design then compresses 63 bytes per node and
 * chains single-child N8 nodes (each consuming 63 + 1 bytes); with keys of
 * at most 24 bytes here a prefix is at most 22 bytes, so the chain is never
 * built (insert refuses with CC_ERROR should it ever be needed).
 *
 * Hashed nodes
 * ------------
 * N8, N32, N64, N128 and N256 share one layout: NSLOTS contexts split into
 * buckets of HEART_BUCKET_BYTES (256 = one XPLine, the default; 64 = one
 * cache line for the DRAM flavour, -DHEART_BUCKET_BYTES=64), then one more
 * context, the END slot, for the leaf whose key ends exactly at this node
 * (the paper does not say where such a key goes; ART appends a terminator,
 * which byte-string keys containing 0 cannot use).  Key byte b belongs to
 * bucket perm(b) * nbuckets / 256 with perm a bijection on bytes, so a
 * full-size N256 bucket receives exactly as many byte values as it has
 * slots and never overflows.  Within a bucket a key byte takes the first
 * zero slot; a delete leaves a tombstone (never zero again while the node
 * lives), so two inserters of one byte always race for the same slot and a
 * node never holds a key byte twice.  A full bucket triggers a
 * transformation (grow, or compaction of tombstones).
 *
 * Perceivable Transformation
 * --------------------------
 * transform() CASes the node's context to an odd version, freezes every
 * slot of the node by CAS to an odd version (a frozen slot accepts no CAS:
 * a writer's CAS either lands before the freeze, and is copied, or fails),
 * copies the live children into a new node built invisibly, and publishes
 * it by one CAS of the context (version + 2, new pointer).  Operations
 * record the context on the way down, wait while it is odd, and re-read it
 * after working in the node: a change sends them back to the root.  The
 * per-slot freeze is ours: the paper's version check alone cannot tell a
 * writer whether its CAS reached the old node before or after the copy.
 *
 * Memory
 * ------
 * Objects come from trees/common's pool allocator behind a spinlock
 * (pm_alloc is not thread-safe).  Unlinked nodes and leaves are retired to
 * epoch-based reclamation and freed once every thread active at the unlink
 * has left.  Recovery needs no log under eADR: it frees whatever the root
 * does not reach, so nothing leaks.
 */
#ifndef HEART_INTERNAL_H
#define HEART_INTERNAL_H

#include <stdint.h>
#include <stddef.h>
#include "heart.h"
#include "crashcheck.h"

#ifndef HEART_BUCKET_BYTES
#define HEART_BUCKET_BYTES 256
#endif
#define HEART_BUCKET_SLOTS (HEART_BUCKET_BYTES / 8)

#define HEART_MAGIC 0x3130545241454831ULL /* "1HEART01" */

typedef uint64_t hctx;

enum { T_EMPTY = 0, T_LEAF = 1, T_N8 = 2, T_N32 = 3, T_N64 = 4, T_N128 = 5, T_N256 = 6, T_TOMB = 7 };

#define CTX_TYPE(c) ((unsigned)((c) & 7))
#define CTX_VER(c) ((unsigned)(((c) >> 3) & 31))
#define CTX_PTR(c) ((void *)(uintptr_t)((((c) >> 16) & ((1ULL << 42) - 1)) << 6))
#define CTX_PLEN(c) ((unsigned)((c) >> 58))
#define CTX_FROZEN(c) (CTX_VER(c) & 1)
#define CTX_INNER(c) (CTX_TYPE(c) >= T_N8 && CTX_TYPE(c) <= T_N256)
#define CTX_LIVE(c) (CTX_TYPE(c) >= T_LEAF && CTX_TYPE(c) <= T_N256)

#ifdef BUG_HEART_PACK_KEYBYTE
/* BUG_HEART_PACK_KEYBYTE: the key byte packed and read with a 7-bit mask, one
 * bit short of its field: bytes 0x80..0xff lose their top bit */
#define CTX_BYTE(c) ((unsigned)(((c) >> 8) & 0x7f))
#define CTX_BYTE_MASK 0x7fULL
#else
#define CTX_BYTE(c) ((unsigned)(((c) >> 8) & 0xff))
#define CTX_BYTE_MASK 0xffULL
#endif

/* ctx_make -- pack a context (the pointer must be 64-aligned and below 2^48) */
static inline hctx ctx_make(unsigned type, unsigned ver, unsigned byte, const void *ptr, unsigned plen)
{
	return (hctx)type | (hctx)(ver & 31) << 3 | ((hctx)byte & CTX_BYTE_MASK) << 8 |
	       ((hctx)(uintptr_t)ptr >> 6) << 16 | (hctx)plen << 58;
}

/* ctx_with_ver -- C with its version replaced by V (mod 32) */
static inline hctx ctx_with_ver(hctx c, unsigned v)
{
	return (c & ~((hctx)31 << 3)) | (hctx)(v & 31) << 3;
}

/* ctx_with_plen -- C with its prefix length replaced by P */
static inline hctx ctx_with_plen(hctx c, unsigned p)
{
	return (c & ~((hctx)63 << 58)) | (hctx)p << 58;
}

/* ctx_with_byte -- C with its key byte replaced by B */
static inline hctx ctx_with_byte(hctx c, unsigned b)
{
	return (c & ~((hctx)0xff << 8)) | ((hctx)b & CTX_BYTE_MASK) << 8;
}

/* Leaves: the full key and the value, one 64-byte object. */
struct heart_leaf {
	uint8_t klen, vlen;
	uint8_t pad[6];
	uint8_t key[HEART_KEY_MAX];
	uint8_t val[HEART_VAL_MAX];
	uint8_t pad2[16];
};

/* The root area (pm_root): the magic, then the root node's context. */
struct heart_root {
	uint64_t magic;
	hctx root;
};

struct heart {
	struct heart_root *r;
};

/* node geometry (internal) */
static inline unsigned nslots(unsigned t)
{
	static const uint16_t n[8] = {0, 0, 8, 32, 64, 128, 256, 0};
	return n[t & 7];
}

static inline unsigned per_bucket(unsigned t)
{
	unsigned n = nslots(t);
	return n < HEART_BUCKET_SLOTS ? n : HEART_BUCKET_SLOTS;
}

static inline unsigned nbuckets(unsigned t) { return nslots(t) / per_bucket(t); }

/* node_bytes -- an internal node of type T: its slots, then the END slot */
static inline size_t node_bytes(unsigned t) { return (nslots(t) + 1) * sizeof(hctx); }

/* bucket_of -- the bucket of key byte B in a node of type T */
static inline unsigned bucket_of(unsigned t, unsigned b)
{
	unsigned perm = (b * 167u + 13u) & 0xff;   /* odd multiplier: a bijection on bytes */
	return perm * nbuckets(t) >> 8;
}

/* atomics on PM contexts */
static inline hctx ctx_load(const hctx *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

/*
 * ctx_cas -- compare and swap one context, a full barrier on both sides.
 * On x86 the locked CMPXCHG already drains the store buffer before and
 * after, so under eADR its store is durable when it returns (crashcheck's
 * eADR model says the same: a locked instruction's store is never pending).
 * The seq_cst fence after it (one MFENCE, redundant on hardware) dates from
 * when the model left that store pending until the thread's next fence; it
 * is kept so that every commit still ends in a crash point of its own.
 * Build with -DHEART_NO_MODEL_FENCE to drop it (native benchmarks).
 */
static inline int ctx_cas(hctx *p, hctx expect, hctx desired)
{
	int ok = __atomic_compare_exchange_n(p, &expect, desired, 0, __ATOMIC_SEQ_CST, __ATOMIC_ACQUIRE);
#ifndef HEART_NO_MODEL_FENCE
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
	return ok;
}

/* heart_mem.c: allocator lock and epochs */
void *heart_alloc_at(size_t n, crashcheck_site_t site);
#define heart_alloc(n) heart_alloc_at((n), crashcheck_here())
void heart_free(void *p);
void epoch_enter(void);
void epoch_exit(void);
void epoch_retire(void *p);
void epoch_drain(void);   /* quiescent: free everything retired */
void epoch_reset(void);   /* recovery: forget every retired object (the sweep frees them) */

#endif /* HEART_INTERNAL_H */
