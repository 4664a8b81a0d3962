/*
 * artcow.c -- ART+CoW's write policy: copy-on-write for NODE4/NODE16 and
 * for path compression
 *
 * Every change to a NODE4 or NODE16, and every split or merge of a
 * compressed path, builds new nodes beside the old ones, persists them
 * whole, and publishes them with one 8-byte store to the slot that pointed
 * to the old node (in the parent, or the root area); the old nodes are
 * freed after that store is persistent.  Replacing the pointer of an
 * existing child (the commit of a child's copy) is itself such a store and
 * is done in place: copying the parent for it would cascade to the root,
 * and section 3.6 notes that CoW in a radix tree touches one node only.
 */
#include <string.h>
#include <stdlib.h>

#include "artcow.h"
#include "persist.h"
#include "pm_alloc.h"

/*
 * publish -- (internal) persist the new node NU whole, swing *REF from OLD
 * to it, persist the swing, free OLD.
 */
static int
publish(struct art_node **ref, struct art_node *old, struct art_node *nu)
{
	size_t size = art_node_size(nu->type);
#ifndef BUG_COW_SWING_FIRST
	persistent(nu, size);
	*ref = nu;
	persistent(ref, sizeof(*ref));
#else
	/* BUG_COW_SWING_FIRST: the parent pointer is published before the
	 * copy it points to is persistent. */
	*ref = nu;
	persistent(ref, sizeof(*ref));
	persistent(nu, size);
#endif
	if (old)
		pm_free(old);
	return CC_OK;
}

/*
 * copy_node -- (internal) CoW: a node of the type that fits E, with header
 * H and entries E, published in place of OLD.
 */
static int
copy_node(const struct art_tree *t, struct art_node **ref, struct art_node *old,
	  union art_hdr h, const struct art_entries *e)
{
	struct art_node *nu = art_node_build(art_type_for(t->ops, e->n), h, e);
	if (!nu)
		return CC_NOSPACE;
#ifdef BUG_COW_NO_FREE
	/* BUG_COW_NO_FREE: the node that was copied is never freed. */
	old = NULL;
#endif
	return publish(ref, old, nu);
}

/* small -- (internal) the node types that are only ever changed by copy */
static int
small(const struct art_node *n)
{
	return n->type == ART_N4_SORTED || n->type == ART_N16_SORTED;
}

/* artcow_add -- add LEAF at byte B of N: NODE48 and NODE256 in place when room, else by copy */
static int
artcow_add(const struct art_tree *t, struct art_node **ref, struct art_node *n, uint8_t b,
	   struct art_node *leaf)
{
	struct art_entries e;
	art_children(n, &e);
	if (!small(n) && e.n < art_node_capacity(n->type)) {
		switch (n->type) {
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
	return copy_node(t, ref, n, (union art_hdr){ .raw = n->hdr.raw }, &e);
}

/*
 * merge -- (internal) N (not the root) loses byte B and would keep one
 * child O.  A leaf O simply replaces N; an inner O is copied with a header
 * that absorbs N's prefix and O's partial key, and the copy replaces N.
 * One swing of *REF unlinks N, the deleted leaf and (for the copy) O.
 */
static int
merge(struct art_node **ref, struct art_node *n, uint8_t b, const struct art_entries *e)
{
	unsigned i = e->key[0] == b ? 1 : 0;
	struct art_node *o = e->child[i];
	if (!o)
		return CC_ERROR;
	if (ART_IS_LEAF(o)) {
		*ref = o;
		persistent(ref, sizeof(*ref));
		pm_free(n);
		return CC_OK;
	}
	union art_hdr nh = { .raw = n->hdr.raw }, oh = { .raw = o->hdr.raw };
	unsigned plen = nh.f.plen + 1u + oh.f.plen;
	if (plen > ART_MAX_PREFIX)
		return CC_ERROR;   /* only a corrupt header gets here */
	uint8_t bytes[ART_MAX_PREFIX];
	memcpy(bytes, nh.f.prefix, nh.f.plen);
	bytes[nh.f.plen] = e->key[i];
	memcpy(bytes + nh.f.plen + 1, oh.f.prefix, oh.f.plen);
	union art_hdr mh = art_hdr_make(nh.f.depth, plen, bytes);
#ifndef BUG_COW_MERGE_IN_PLACE
	struct art_entries oe;
	art_children(o, &oe);
	struct art_node *o2 = art_node_build(o->type, mh, &oe);
	if (!o2)
		return CC_NOSPACE;
	publish(ref, n, o2);
	pm_free(o);
	return CC_OK;
#else
	/* BUG_COW_MERGE_IN_PLACE: O's header is rewritten in place (length
	 * and depth, then prefix: two stores) while O still hangs below N.
	 * ART+CoW keeps no depth check, so a crash before the swing leaves
	 * O with a prefix that repeats N's. */
	memcpy(&o->hdr.f.depth, &mh.f.depth, 2);
	__asm__ volatile("" ::: "memory");
	memcpy(o->hdr.f.prefix, mh.f.prefix, ART_MAX_PREFIX);
	persistent(&o->hdr, sizeof(o->hdr));
	*ref = o;
	persistent(ref, sizeof(*ref));
	pm_free(n);
	return CC_OK;
#endif
}

/*
 * artcow_remove -- unlink byte B of N: merge away a non-root node left
 * with one child; copy a NODE4/NODE16 (or shrink a NODE48/NODE256 left
 * under its bound) without the entry; else clear it in place.
 */
static int
artcow_remove(const struct art_tree *t, struct art_node **ref, struct art_node *n, int is_root,
	      uint8_t b)
{
	struct art_entries e;
	art_children(n, &e);
	if (!is_root && e.n == 2)
		return merge(ref, n, b, &e);
	if (small(n) || e.n - 1 < art_node_min(n->type)) {
		art_entries_remove(&e, b);
		return copy_node(t, ref, n, (union art_hdr){ .raw = n->hdr.raw }, &e);
	}
	switch (n->type) {
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
 * artcow_split -- N's prefix differs from the key at prefix byte M, by
 * copy-on-write: a copy of N without the first M+1 prefix bytes, and a new
 * NODE4 with N's depth and those M bytes holding the copy and LEAF, are
 * built and persisted; one swing of *REF publishes both; N is freed.
 */
static int
artcow_split(struct art_node **ref, struct art_node *n, unsigned m, struct art_node *leaf,
	     uint8_t leaf_byte)
{
	union art_hdr old = { .raw = n->hdr.raw };
	unsigned depth = old.f.depth, plen = old.f.plen;
	struct art_entries ne;
	art_children(n, &ne);
	struct art_node *n2 = art_node_build(n->type,
		art_hdr_make(depth + m + 1, plen - m - 1, &old.f.prefix[m + 1]), &ne);
	if (!n2)
		return CC_NOSPACE;
	struct art_entries e = { .n = 0 };
	art_entries_insert(&e, old.f.prefix[m], n2);
	art_entries_insert(&e, leaf_byte, leaf);
	struct art_node *p = art_node_build(ART_N4_SORTED, art_hdr_make(depth, m, old.f.prefix), &e);
	if (!p) {
		pm_free(n2);
		return CC_NOSPACE;
	}
	persistent(n2, art_node_size(n2->type));
	return publish(ref, n, p);
}

/* artcow_ops -- the policy table the shared engine calls */
const struct art_ops artcow_ops = {
	.name = "artcow",
	.magic = 0x31574f43545241ull,   /* "ARTCOW1" in memory order */
	.n4 = ART_N4_SORTED,
	.n16 = ART_N16_SORTED,
	.repair = 0,
	.split = artcow_split,
	.add = artcow_add,
	.remove = artcow_remove,
};
