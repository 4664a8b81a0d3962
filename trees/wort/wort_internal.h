/*
 * wort_internal.h -- WORT's node layout and the helpers its two source files share
 *
 * Node: an 8-byte header and 16 tagged child pointers (136 bytes).  A child
 * pointer with its low bit set is a leaf.  Header bits:
 *     0..7    depth: index of the first key nibble this node covers
 *     8..15   prefix length: nibbles compressed into this node
 *     16..63  prefix: the first WORT_PREFIX_CAP of them, 4 bits each
 * The node branches on nibble depth + prefix length.  Prefixes longer than
 * the 12 stored nibbles are read from a leaf below the node (the hybrid
 * scheme of section 3.3), so every comparison is exact.
 */
#ifndef WORT_INTERNAL_H
#define WORT_INTERNAL_H

#include <stdint.h>
#include <string.h>
#include "persist.h"
#include "pm_alloc.h"
#include "wort.h"

#define WORT_FANOUT 16
#define WORT_NIBBLES 16      /* nibbles in an 8-byte key */
#define WORT_PREFIX_CAP 12   /* nibbles the header stores */

struct wort_node {
	uint64_t hdr;
	uintptr_t child[WORT_FANOUT];
};

struct wort_leaf {
	uint8_t key[8];
	uint8_t *value;      /* an 8-byte PM value object */
};

struct wort {
	uintptr_t *root;     /* the first word of the pool's root area */
};

#define IS_LEAF(r) ((r) & 1)
#define AS_LEAF(r) ((struct wort_leaf *)((r) & ~(uintptr_t)1))
#define AS_NODE(r) ((struct wort_node *)(r))
#define LEAF_REF(l) ((uintptr_t)(l) | 1)

/* key_nibble -- nibble I (0 = most significant) of KEY */
static inline unsigned key_nibble(const uint8_t *key, unsigned i)
{
	return (key[i / 2] >> (i % 2 ? 0 : 4)) & 0xf;
}

static inline unsigned hdr_depth(uint64_t h) { return h & 0xff; }
static inline unsigned hdr_plen(uint64_t h) { return (h >> 8) & 0xff; }
static inline unsigned hdr_nibble(uint64_t h, unsigned i) { return (h >> (16 + 4 * i)) & 0xf; }

/* hdr_make -- a header for DEPTH whose prefix is key nibbles [DEPTH, DEPTH+PLEN) of KEY */
static inline uint64_t hdr_make(unsigned depth, unsigned plen, const uint8_t *key)
{
	uint64_t h = depth | (uint64_t)plen << 8;
	for (unsigned i = 0; i < plen && i < WORT_PREFIX_CAP; i++)
		h |= (uint64_t)key_nibble(key, depth + i) << (16 + 4 * i);
	return h;
}

/* load8 / store8 -- one 8-byte access the compiler may neither split nor merge */
static inline uint64_t load8(const void *p) { return *(const volatile uint64_t *)p; }
static inline void store8(void *p, uint64_t v) { *(volatile uint64_t *)p = v; }

/* persist_begin / persist_end -- bracket a batch of cc_flush calls like persistent() */
static inline void persist_begin(void)
{
#if CC_FLUSH == CC_FLUSH_CLFLUSH
	cc_mfence();
#endif
}
static inline void persist_end(void)
{
#if CC_FLUSH == CC_FLUSH_CLFLUSH
	cc_mfence();
#else
	cc_sfence();
#endif
}

/* wort_in_heap -- P may be followed: inside the heap and 8-aligned (images may be corrupt) */
static inline int wort_in_heap(const void *p)
{
	return pm_contains(p) && ((uintptr_t)p & 7) == 0;
}

/* wort_min_leaf -- the leftmost leaf below REF, NULL if none (bounded walk) */
struct wort_leaf *wort_min_leaf(uintptr_t ref);

/* wort_repair -- Algorithm 2: rebuild N's header for DEPTH and persist it; returns it */
uint64_t wort_repair(struct wort_node *n, unsigned depth);

/* wort_ref_ok -- non-zero if REF points at a live object of the right size */
int wort_ref_ok(uintptr_t ref);

#endif /* WORT_INTERNAL_H */
