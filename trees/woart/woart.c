/*
 * woart.c -- WOART's write policy: in-place, failure-atomic node changes
 *
 * Each change below ends in exactly one 8-byte (or smaller) store that
 * makes it visible, persisted at once; everything it publishes was
 * persisted before.  Path compression (split, merge) rewrites a node's
 * header in place with one 8-byte store BEFORE the parent-pointer swing
 * that makes the new shape reachable; a crash between the two leaves a
 * header whose depth disagrees with the path, which the next traversal (or
 * recovery) repairs from the keys below (art_repair_header, Algorithm 2).
 */
#include <string.h>
#include <stdlib.h>

#include "woart.h"
#include "persist.h"

/*
 * add_n4s -- (internal) Algorithm 3: write the child into a free pointer
 * entry and persist it, then commit keys + slots with one 8-byte store.
 */
static void
add_n4s(struct art_node4s *n, uint8_t b, struct art_node *child)
{
	union art_slots s = { .raw = n->slots.raw };
	unsigned used = 0, cnt = 0;
	while (cnt < 4 && s.f.slot[cnt]) {
		used |= 1u << ((s.f.slot[cnt] - 1) & 3);
		cnt++;
	}
	unsigned idx = 0;
	while (used >> idx & 1)
		idx++;
	/* the copy (tmpSlot of Algorithm 3) with the new key in sorted position */
	unsigned i = cnt;
	while (i > 0 && s.f.key[i - 1] > b) {
		s.f.key[i] = s.f.key[i - 1];
		s.f.slot[i] = s.f.slot[i - 1];
		i--;
	}
	s.f.key[i] = b;
	s.f.slot[i] = (uint8_t)(idx + 1);
#ifndef BUG_WOART_N4_COMMIT_FIRST
	n->child[idx] = child;
	persistent(&n->child[idx], sizeof(n->child[idx]));
	n->slots.raw = s.raw;
	persistent(&n->slots, sizeof(n->slots));
#else
	/* BUG_WOART_N4_COMMIT_FIRST: the slot word commits an entry whose
	 * pointer is not yet written, let alone persistent. */
	n->slots.raw = s.raw;
	persistent(&n->slots, sizeof(n->slots));
	n->child[idx] = child;
	persistent(&n->child[idx], sizeof(n->child[idx]));
#endif
}

/*
 * add_n16b -- (internal) Algorithm 4: key and pointer into a free entry,
 * persisted, then the bitmap bit set by one store and persisted.
 */
static void
add_n16b(struct art_node16b *n, uint8_t b, struct art_node *child)
{
	unsigned idx = 0;
	while (n->bitmap >> idx & 1)
		idx++;
	n->key[idx] = b;
	n->child[idx] = child;
	art_persist2(&n->key[idx], 1, &n->child[idx], sizeof(n->child[idx]));
	n->bitmap = (uint16_t)(n->bitmap | 1u << idx);
	persistent(&n->bitmap, sizeof(n->bitmap));
}

/*
 * replace_node -- (internal) copy-and-exchange: a new node of the type that
 * fits E, holding N's header and the entries E, persisted whole, then
 * published by one swing of *REF; N is freed after the swing persisted.
 */
static int
replace_node(const struct art_tree *t, struct art_node **ref, struct art_node *n,
	     const struct art_entries *e)
{
	unsigned type = art_type_for(t->ops, e->n);
	union art_hdr h = { .raw = n->hdr.raw };
	struct art_node *nu = art_node_build(type, h, e);
	if (!nu)
		return CC_NOSPACE;
#ifndef BUG_WOART_GROW_FLUSH_ONE_LINE
	/* Algorithms 3 and 4 (line 19) say clflush(&node16): one line.  A
	 * NODE16 or NODE48 spans several lines; all of them must be durable
	 * before the swing, so we persist the whole node. */
	persistent(nu, art_node_size(type));
#else
	/* BUG_WOART_GROW_FLUSH_ONE_LINE: the paper-literal single clflush. */
	persistent(nu, CC_LINE);
#endif
#ifndef BUG_WOART_GROW_NO_FREE
	return art_replace(ref, n, nu);
#else
	/* BUG_WOART_GROW_NO_FREE: the replaced node is never freed. */
	return art_replace(ref, NULL, nu);
#endif
}

/* woart_add -- add LEAF at byte B of N: in place if N has room, else grow by copy */
static int
woart_add(const struct art_tree *t, struct art_node **ref, struct art_node *n, uint8_t b,
	  struct art_node *leaf)
{
	struct art_entries e;
	art_children(n, &e);
	if (e.n < art_node_capacity(n->type)) {
		switch (n->type) {
		case ART_N4_SLOT:
			add_n4s((struct art_node4s *)n, b, leaf);
			break;
		case ART_N16_BITMAP:
			add_n16b((struct art_node16b *)n, b, leaf);
			break;
		case ART_N48:
			art_n48_add((struct art_node48 *)n, b, leaf);
			break;
		case ART_N256:
			art_n256_add((struct art_node256 *)n, b, leaf);
			break;
		default:
			abort();
		}
		return CC_OK;
	}
	art_entries_insert(&e, b, leaf);
	return replace_node(t, ref, n, &e);
}

/* remove_n4s -- (internal) drop byte B from the slot word with one 8-byte store */
static void
remove_n4s(struct art_node4s *n, uint8_t b)
{
	union art_slots s = { .raw = n->slots.raw };
	unsigned i = 0, j = 0;
	for (; i < 4 && s.f.slot[i]; i++) {
		if (s.f.key[i] == b)
			continue;
		s.f.key[j] = s.f.key[i];
		s.f.slot[j] = s.f.slot[i];
		j++;
	}
	for (; j < 4; j++)
		s.f.key[j] = s.f.slot[j] = 0;
	n->slots.raw = s.raw;
	persistent(&n->slots, sizeof(n->slots));
}

/* remove_n16b -- (internal) clear byte B's bitmap bit with one store */
static void
remove_n16b(struct art_node16b *n, uint8_t b)
{
	for (unsigned i = 0; i < 16; i++) {
		if ((n->bitmap >> i & 1) && n->key[i] == b) {
			n->bitmap = (uint16_t)(n->bitmap & ~(1u << i));
			persistent(&n->bitmap, sizeof(n->bitmap));
			return;
		}
	}
}

/*
 * merge -- (internal) N (not the root) loses byte B and would keep one child:
 * path compression replaces N by that child.  An inner child first absorbs
 * N's prefix and its own partial key into its header (one 8-byte store,
 * persisted), then one swing of *REF unlinks N and the deleted leaf at
 * once.  A crash between the two leaves the child under N with a header
 * for the shallower depth: the depth check repairs it back.
 */
static int
merge(struct art_node **ref, struct art_node *n, uint8_t b, const struct art_entries *e)
{
	unsigned i = e->key[0] == b ? 1 : 0;
	struct art_node *o = e->child[i];
	if (!o)
		return CC_ERROR;
	if (!ART_IS_LEAF(o)) {
		union art_hdr nh = { .raw = n->hdr.raw }, oh = { .raw = o->hdr.raw };
		unsigned plen = nh.f.plen + 1u + oh.f.plen;
		if (plen > ART_MAX_PREFIX)
			return CC_ERROR;   /* only a corrupt header gets here */
		uint8_t bytes[ART_MAX_PREFIX];
		memcpy(bytes, nh.f.prefix, nh.f.plen);
		bytes[nh.f.plen] = e->key[i];
		memcpy(bytes + nh.f.plen + 1, oh.f.prefix, oh.f.plen);
		union art_hdr mh = art_hdr_make(nh.f.depth, plen, bytes);
		o->hdr.raw = mh.raw;
		persistent(&o->hdr, sizeof(o->hdr));
	}
	return art_replace(ref, n, o);
}

/*
 * woart_remove -- unlink byte B of N: merge away a non-root node left with
 * one child, shrink by copy a node left under its type's bound, else clear
 * the entry in place with the node's one commit store.
 */
static int
woart_remove(const struct art_tree *t, struct art_node **ref, struct art_node *n, int is_root,
	     uint8_t b)
{
	struct art_entries e;
	art_children(n, &e);
	if (!is_root && e.n == 2)
		return merge(ref, n, b, &e);
	if (n->type != t->ops->n4 && e.n - 1 < art_node_min(n->type)) {
		art_entries_remove(&e, b);
		return replace_node(t, ref, n, &e);
	}
	switch (n->type) {
	case ART_N4_SLOT:
		remove_n4s((struct art_node4s *)n, b);
		break;
	case ART_N16_BITMAP:
		remove_n16b((struct art_node16b *)n, b);
		break;
	case ART_N48:
		art_n48_remove((struct art_node48 *)n, b);
		break;
	case ART_N256:
		art_n256_remove((struct art_node256 *)n, b);
		break;
	default:
		abort();
	}
	return CC_OK;
}

/*
 * woart_split -- Algorithm 1: N's prefix differs from the key at prefix
 * byte M.  A new NODE4 P takes N's depth and the first M prefix bytes and
 * holds N and LEAF; N's header drops the bytes P now covers (one 8-byte
 * store); P and N's header are persisted together; then one swing of *REF
 * publishes P.  If the swing is lost, N's header is stale (its depth says
 * it sits below P) and is repaired from its keys; P and LEAF leak.
 */
static int
woart_split(struct art_node **ref, struct art_node *n, unsigned m, struct art_node *leaf,
	    uint8_t leaf_byte)
{
	union art_hdr old = { .raw = n->hdr.raw };
	unsigned depth = old.f.depth, plen = old.f.plen;
	struct art_entries e = { .n = 0 };
	art_entries_insert(&e, old.f.prefix[m], n);
	art_entries_insert(&e, leaf_byte, leaf);
	struct art_node *p = art_node_build(ART_N4_SLOT, art_hdr_make(depth, m, old.f.prefix), &e);
	if (!p)
		return CC_NOSPACE;
	union art_hdr nh = art_hdr_make(depth + m + 1, plen - m - 1, &old.f.prefix[m + 1]);
#ifndef BUG_WOART_SPLIT_HEADER_TWO_STORES
	n->hdr.raw = nh.raw;   /* depth, length and prefix change together */
#else
	/* BUG_WOART_SPLIT_HEADER_TWO_STORES: prefix bytes first, depth and
	 * length second; a crash between them leaves a shifted prefix under
	 * a depth that still matches, so no repair is triggered. */
	memcpy(n->hdr.f.prefix, nh.f.prefix, ART_MAX_PREFIX);
	__asm__ volatile("" ::: "memory");
	memcpy(&n->hdr.f.depth, &nh.f.depth, 2);
#endif
	/* Algorithm 1 lines 8-12 clflush one line each of newLeaf and newParent;
	 * a NODE4 is not line-aligned and may span two, so P is persisted whole
	 * (the leaf already was, by art_leaf_new). */
	art_persist2(p, art_node_size(ART_N4_SLOT), &n->hdr, sizeof(n->hdr));
	return art_replace(ref, NULL, p);
}

/* woart_ops -- the policy table the shared engine calls */
const struct art_ops woart_ops = {
	.name = "woart",
	.magic = 0x315452414f57ull,   /* "WOART1" in memory order */
	.n4 = ART_N4_SLOT,
	.n16 = ART_N16_BITMAP,
	.repair = 1,
	.split = woart_split,
	.add = woart_add,
	.remove = woart_remove,
};
