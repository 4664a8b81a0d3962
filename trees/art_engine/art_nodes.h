/*
 * art_nodes.h -- node layouts and shared engine of the two persistent ARTs
 *
 * WOART (trees/woart) and ART+CoW (trees/artcow) are the same adaptive radix
 * tree over 8-byte big-endian keys (8-bit partial keys, seed paper 004,
 * sections 3.5-3.6); they differ only in HOW a node is changed
 * failure-atomically.  This file owns everything they share:
 *
 *   - the PM layouts: the 8-byte compression header, the node header that is
 *     the first member of every node, the six node types (WOART's slot-array
 *     NODE4 and bitmap NODE16, ART+CoW's sorted NODE4/NODE16, and the common
 *     NODE48 and NODE256), leaves and value objects;
 *   - the read side (find a child, list children in key order), node
 *     building, NODE48 (Algorithm 5) and NODE256 in-place updates;
 *   - the operation skeletons (insert, delete, update, lookup, scan), which
 *     call the tree's own write policy (struct art_ops) at the points where
 *     the two trees differ: prefix split, adding a child, removing a child;
 *   - recovery (the header repair of Algorithm 2), dump, invariants and the
 *     reachable-object walk.
 *
 * The code lives in trees/art_engine/, no tree itself (no adapter.c): each
 * tree naming it in its shared.txt compiles it into its own drivers, with
 * its own flags (trees/build.mk), so it is written once.
 *
 * Persistence rules every writer follows (the thesis' own):
 *   - a new object (node, leaf, value) is built completely and persisted
 *     before the 8-byte store that publishes it;
 *   - every publishing store is an aligned 8-byte (or smaller) store,
 *     persisted at once with persistent();
 *   - a replaced object is freed only after the store unlinking it is
 *     persistent.  A crash between allocation and publication (or between
 *     unlinking and freeing) leaks the object: by design, see expect.json.
 */
#ifndef ART_NODES_H
#define ART_NODES_H

#include <stddef.h>
#include <stdint.h>
#include "cc_tree.h"

#define ART_KEY_LEN 8     /* keys are exactly 8 bytes (CC_KEYS_U64) */
#define ART_VAL_LEN 8     /* values are exactly 8 bytes */
/*
 * The root node never carries a prefix (depth 0, prefix length 0), so every
 * other node has depth >= 1 and branches at byte depth + plen <= 7: six
 * prefix bytes always suffice and the header stays one 8-byte word.
 */
#define ART_MAX_PREFIX 6

/* Node types.  Zero is invalid on purpose: a node that never reached PM reads as type 0. */
enum art_type {
	ART_N4_SLOT = 1,    /* WOART NODE4: partial keys + slot array in one 8-byte word */
	ART_N16_BITMAP = 2, /* WOART NODE16: unsorted parallel arrays + 16-bit valid bitmap */
	ART_N4_SORTED = 3,  /* ART+CoW NODE4: classic sorted node, changed only by copy */
	ART_N16_SORTED = 4, /* ART+CoW NODE16: classic sorted node, changed only by copy */
	ART_N48 = 5,        /* child index array + 48 pointers (Algorithm 5) */
	ART_N256 = 6,       /* 256 pointers, as a WORT node */
};
#define ART_TYPE_MAX 6

/*
 * The compression header (Figure 3.2 plus WORT's depth): depth of the node
 * (index of its first prefix byte), prefix length and prefix, all in one word
 * so that a single 8-byte store changes them together.
 */
union art_hdr {
	uint64_t raw;
	struct {
		uint8_t depth;
		uint8_t plen;
		uint8_t prefix[ART_MAX_PREFIX];
	} f;
};

/* art_node -- the header every node type starts with */
struct art_node {
	union art_hdr hdr;  /* changed in place only by one 8-byte store */
	uint8_t type;       /* enum art_type; never changes after the node is built */
	uint8_t pad[7];
};

/*
 * Child pointers are tagged: the low bit set means an art_leaf (all PM
 * objects are 8-byte aligned, so the bit is free).
 */
#define ART_IS_LEAF(p) (((uintptr_t)(p)) & 1)
#define ART_LEAF(p) ((struct art_leaf *)((uintptr_t)(p) & ~(uintptr_t)1))
#define ART_TAG_LEAF(l) ((struct art_node *)((uintptr_t)(l) | 1))

/*
 * WOART NODE4 (Algorithm 3): partial keys kept sorted in key[], slot[i] is
 * 1 + the index into child[] of key[i] (0 = unused; the valid entries are a
 * prefix of the array).  Both arrays share one 8-byte word, the commit point
 * of every change; child[] is append-only into free indices.
 */
union art_slots {
	uint64_t raw;
	struct {
		uint8_t key[4];
		uint8_t slot[4];
	} f;
};
struct art_node4s {
	struct art_node n;
	union art_slots slots;
	struct art_node *child[4];
};

/* WOART NODE16 (Algorithm 4): entry i is valid iff bit i of bitmap is set. */
struct art_node16b {
	struct art_node n;
	uint16_t bitmap;
	uint8_t pad[6];
	uint8_t key[16];
	struct art_node *child[16];
};

/* ART+CoW NODE4: the first count keys are valid and sorted. */
struct art_node4c {
	struct art_node n;
	uint8_t count;
	uint8_t key[4];
	uint8_t pad[3];
	struct art_node *child[4];
};

/* ART+CoW NODE16: the first count keys are valid and sorted. */
struct art_node16c {
	struct art_node n;
	uint8_t count;
	uint8_t pad[7];
	uint8_t key[16];
	struct art_node *child[16];
};

/*
 * NODE48: index[b] is 1 + the slot in child[] of partial key b (0 = none).
 * A free slot is found from index[], never from a NULL child[] entry, so a
 * slot written but not yet committed is simply reused (section 3.5).
 */
struct art_node48 {
	struct art_node n;
	uint8_t index[256];
	struct art_node *child[48];
};

/* NODE256: child[b] for partial key b, NULL = none. */
struct art_node256 {
	struct art_node n;
	struct art_node *child[256];
};

/* A value object: written once, replaced out of place by update. */
struct art_value {
	uint8_t bytes[ART_VAL_LEN];
};

/* A leaf: the full key (leaves sit at the first unique byte, lazy expansion). */
struct art_leaf {
	uint8_t key[ART_KEY_LEN];
	struct art_value *val;   /* swung by one 8-byte store on update */
};

/* The root area (pm_root()): which tree, and its root node. */
struct art_root {
	uint64_t magic;
	struct art_node *root;   /* swung when the root node grows or shrinks */
};

struct art_tree;

/*
 * art_ops -- one tree's write policy: the steps where WOART and ART+CoW
 * differ.  Each hook does the whole change failure-atomically and returns a
 * cc_status.  REF is the 8-byte slot that points to N (in the parent node or
 * the root area), so a hook may replace N by swinging *REF.
 */
struct art_ops {
	const char *name;
	uint64_t magic;
	uint8_t n4, n16;          /* the tree's small node types */
	int repair;               /* depth-checked headers with lazy repair (WOART) */
	/* split -- N's prefix differs from the key at prefix byte M: insert LEAF above N */
	int (*split)(struct art_node **ref, struct art_node *n, unsigned m,
		     struct art_node *leaf, uint8_t leaf_byte);
	/* add -- N has no child at byte B: add LEAF there (growing N if full) */
	int (*add)(const struct art_tree *t, struct art_node **ref, struct art_node *n,
		   uint8_t b, struct art_node *leaf);
	/* remove -- unlink the child at byte B of N (shrinking or merging N) */
	int (*remove)(const struct art_tree *t, struct art_node **ref, struct art_node *n,
		      int is_root, uint8_t b);
};

/* art_tree -- the DRAM handle of an open tree */
struct art_tree {
	struct art_root *root;
	const struct art_ops *ops;
};

/* A child list in key order, as returned by art_children (256 is the most any node holds). */
struct art_entries {
	unsigned n;
	uint8_t key[256];
	struct art_node *child[256];
};

/* --- objects (art_nodes.c) --- */
size_t art_node_size(unsigned type);
unsigned art_node_capacity(unsigned type);
unsigned art_node_min(unsigned type);
struct art_node *art_node_alloc(unsigned type);
struct art_node *art_node_build(unsigned type, union art_hdr hdr, const struct art_entries *e);
struct art_value *art_value_alloc(const uint8_t *val);
struct art_value *art_value_new(const uint8_t *val);
struct art_node *art_leaf_new(const uint8_t *key, const uint8_t *val);
void art_leaf_free(struct art_node *tagged);
void art_persist2(const void *a, size_t alen, const void *b, size_t blen);

/* --- headers --- */
union art_hdr art_hdr_make(unsigned depth, unsigned plen, const uint8_t *bytes);
unsigned art_prefix_mismatch(const struct art_node *n, const uint8_t *key, unsigned depth);
int art_visit(const struct art_tree *t, struct art_node *n, unsigned depth);
int art_repair_header(struct art_node *n, unsigned depth);
struct art_node **art_find_leaf(const struct art_tree *t, const uint8_t *key, int repair);

/* --- read side --- */
struct art_node **art_find_child(struct art_node *n, uint8_t b);
void art_children(const struct art_node *n, struct art_entries *e);
unsigned art_count(const struct art_node *n);
struct art_leaf *art_min_leaf(struct art_node *p);
void art_entries_insert(struct art_entries *e, uint8_t b, struct art_node *child);
void art_entries_remove(struct art_entries *e, uint8_t b);
unsigned art_type_for(const struct art_ops *ops, unsigned count);

/* --- NODE48 / NODE256 in place --- */
void art_n48_add(struct art_node48 *n, uint8_t b, struct art_node *child);
void art_n48_remove(struct art_node48 *n, uint8_t b);
void art_n256_add(struct art_node256 *n, uint8_t b, struct art_node *child);
void art_n256_remove(struct art_node256 *n, uint8_t b);
int art_replace(struct art_node **ref, struct art_node *old, struct art_node *nu);

/* --- the tree (the adapter's entry points) --- */
void *art_create(void *pool, size_t size, const struct art_ops *ops);
void *art_open(void *pool, size_t size, const struct art_ops *ops);
int art_recover(void *t);
int art_insert(void *t, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen);
int art_update(void *t, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen);
int art_delete(void *t, const uint8_t *key, size_t klen);
int art_lookup(void *t, const uint8_t *key, size_t klen, uint8_t *val, size_t *vlen);
size_t art_scan(void *t, const uint8_t *key, size_t klen, size_t count, cc_kv_fn fn, void *ctx);
void art_dump(void *t, cc_kv_fn fn, void *ctx);
size_t art_check(void *t, cc_violation_fn fn, void *ctx);
void art_reachable(void *t, cc_obj_fn fn, void *ctx);
void art_allocated(void *t, cc_obj_fn fn, void *ctx);
void art_close(void *t);

#endif /* ART_NODES_H */
