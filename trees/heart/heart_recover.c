/*
 * heart_recover.c -- Heart's recovery, invariant check and reachability walk
 *
 * Recovery needs no log on eADR: every committed change is one CAS whose
 * object was complete before it, so the image reachable from the root is
 * always a tree as some prefix of the history left it.  What a crash can
 * leave behind is only
 *   - odd versions: a transformation in progress (its node's context and
 *     the slots it froze); the new node was never published, so clearing
 *     the low version bit restores the old node unchanged;
 *   - an internal node without children (a delete's CAS done, its unlink
 *     not yet): unlinked by a tombstone;
 *   - objects allocated and not (yet, or any more) reachable: a leaf or a
 *     split's parent before its publishing CAS, a new node of an
 *     interrupted transformation, retired objects whose epoch had not
 *     passed.  The sweep frees every allocated object the root does not
 *     reach, so Heart leaks nothing.
 * Each step is idempotent, so a crash inside recovery is repaired by the
 * next run.  The DRAM state (epochs, allocator lock) starts afresh.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "heart_internal.h"
#include "pm_alloc.h"

/* valid_obj -- P is a 64-aligned allocated object of at least N bytes (internal) */
static int valid_obj(const void *p, size_t n)
{
	return pm_contains(p) && ((uintptr_t)p & 63) == 0 && pm_object_size(p) >= n;
}

/* unfreeze -- C with the freeze (low version bit) cleared (internal) */
static hctx unfreeze(hctx c)
{
	return ctx_with_ver(c, CTX_VER(c) & ~1u);
}

/* repair -- unfreeze the node whose context sits at SLOT and its subtree; unlink it if empty (internal) */
static void repair(hctx *slot, int is_root)
{
	hctx c = *slot;
	if (CTX_FROZEN(c))
		__atomic_store_n(slot, c = unfreeze(c), __ATOMIC_SEQ_CST);
	if (!CTX_INNER(c) || !valid_obj(CTX_PTR(c), node_bytes(CTX_TYPE(c))))
		return;
	hctx *node = CTX_PTR(c);
	unsigned n = nslots(CTX_TYPE(c)), live = 0;
	for (unsigned i = 0; i <= n; i++) {
		hctx v = node[i];
		/* the slots an interrupted transformation froze go back to even */
		if (CTX_FROZEN(v))
			__atomic_store_n(&node[i], v = unfreeze(v), __ATOMIC_SEQ_CST);
		if (CTX_INNER(v))
			repair(&node[i], 0);
		live += CTX_LIVE(node[i]) != 0;
	}
#ifndef BUG_HEART_RECOVER_KEEPS_EMPTY
	if (!live && !is_root)
		__atomic_store_n(slot, (hctx)T_TOMB, __ATOMIC_SEQ_CST);
#else
	/* BUG_HEART_RECOVER_KEEPS_EMPTY: a node a crash left without children
	 * (delete's CAS done, its unlink not yet) stays linked */
	(void)live, (void)is_root;
#endif
}

/* ---- reachability ---- */

/* reach -- every valid object below context C (internal) */
static void reach(hctx c, cc_obj_fn fn, void *ctx)
{
	if (CTX_TYPE(c) == T_LEAF) {
		if (pm_contains(CTX_PTR(c)))
			fn(ctx, CTX_PTR(c), sizeof(struct heart_leaf));
		return;
	}
	if (!CTX_INNER(c) || !pm_contains(CTX_PTR(c)))
		return;
	hctx *node = CTX_PTR(c);
	fn(ctx, node, node_bytes(CTX_TYPE(c)));
	if (!valid_obj(node, node_bytes(CTX_TYPE(c))))
		return;   /* not allocated: its contents mean nothing */
	for (unsigned i = 0; i <= nslots(CTX_TYPE(c)); i++)
		reach(node[i], fn, ctx);
}

/* heart_reachable -- every node and leaf the root reaches */
void heart_reachable(struct heart *h, cc_obj_fn fn, void *ctx)
{
	if (h->r->magic == HEART_MAGIC)
		reach(h->r->root, fn, ctx);
}

struct objs {
	uintptr_t *a;
	size_t n, cap;
};

/* add_obj -- cc_obj_fn collecting addresses (internal) */
static void add_obj(void *ctx, const void *obj, size_t size)
{
	struct objs *o = ctx;
	(void)size;
	if (o->n == o->cap) {
		size_t cap = o->cap ? 2 * o->cap : 1024;
		uintptr_t *a = realloc(o->a, cap * sizeof(*a));
		if (!a) {
			fprintf(stderr, "heart: out of DRAM in recovery\n");
			abort();
		}
		o->a = a;
		o->cap = cap;
	}
	o->a[o->n++] = (uintptr_t)obj;
}

static int cmp_u(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return (x > y) - (x < y);
}

/* sweep -- free every allocated object the root does not reach (internal) */
__attribute__((unused))
static void sweep(struct heart *h)
{
	struct objs reached = {0}, alloc = {0};
	heart_reachable(h, add_obj, &reached);
	pm_allocated(add_obj, &alloc);
	qsort(reached.a, reached.n, sizeof(uintptr_t), cmp_u);
	for (size_t i = 0; i < alloc.n; i++)
		if (!reached.n || !bsearch(&alloc.a[i], reached.a, reached.n, sizeof(uintptr_t), cmp_u))
			heart_free((void *)alloc.a[i]);
	free(reached.a);
	free(alloc.a);
}

/* heart_recover -- unfreeze, unlink empty nodes, sweep; a fresh root if create was cut short */
int heart_recover(struct heart *h)
{
	struct heart_root *r = h->r;
	epoch_reset();
	if (r->magic != HEART_MAGIC)
		__atomic_store_n(&r->root, 0, __ATOMIC_SEQ_CST);   /* create never finished */
	hctx rc = r->root;
	if (rc && !CTX_INNER(rc)) {
		fprintf(stderr, "heart: root context %#llx is not an internal node\n", (unsigned long long)rc);
		return -1;
	}
	if (rc)
		repair(&r->root, 1);
#ifndef BUG_HEART_RECOVER_NO_SWEEP
	/* BUG_HEART_RECOVER_NO_SWEEP skips this: what the crash left allocated
	 * and unlinked stays allocated for ever (a leak) */
	sweep(h);
#endif
	if (!r->root) {
		hctx *root = heart_alloc(node_bytes(T_N8));
		if (!root) {
			fprintf(stderr, "heart: pool too small for the root node\n");
			return -1;
		}
		__atomic_store_n(&r->root, ctx_make(T_N8, 0, 0, root, 0), __ATOMIC_SEQ_CST);
	}
	__atomic_store_n(&r->magic, HEART_MAGIC, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);   /* recovery's stores done before any operation */
	return 0;
}

/* ---- invariants ---- */

struct chk {
	cc_violation_fn fn;
	void *ctx;
	size_t n;
	uint8_t path[HEART_KEY_MAX + 1];
};

/* viol_at -- report one violation with the site of its check (internal) */
__attribute__((format(printf, 4, 5)))
static void viol_at(struct chk *k, const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	cc_vviolation_at(k->fn, k->ctx, file, line, fmt, ap);
	va_end(ap);
	k->n++;
}
/* the check's own file:line names the rule it broke (trees/common/cc_tree.h CC_VIOLATION) */
#define viol(k, ...) viol_at((k), __FILE__, __LINE__, __VA_ARGS__)

/* check_leaf -- leaf context V at position IDX, key byte B (or the END slot) (internal) */
static void check_leaf(struct chk *k, hctx v, size_t idx, int end)
{
	const struct heart_leaf *l = CTX_PTR(v);
	if (!valid_obj(l, sizeof(*l))) {
		viol(k, "leaf %p (position %zu) is not an allocated 64-byte object", (void *)l, idx);
		return;
	}
	if (CTX_VER(v))
		viol(k, "leaf %p: context version %u, leaves keep 0", (void *)l, CTX_VER(v));
	if (l->klen < 1 || l->klen > HEART_KEY_MAX || l->vlen < 1 || l->vlen > HEART_VAL_MAX) {
		viol(k, "leaf %p: key length %u, value length %u", (void *)l, l->klen, l->vlen);
		return;
	}
	if (CTX_PLEN(v) != l->klen)
		viol(k, "leaf %p: context says key length %u, leaf %u", (void *)l, CTX_PLEN(v), l->klen);
	if (end) {
		if (l->klen != idx || CTX_BYTE(v))
			viol(k, "leaf %p in the END slot at position %zu has a key of %u bytes",
			     (void *)l, idx, l->klen);
	} else if (l->klen <= idx || l->key[idx] != CTX_BYTE(v)) {
		viol(k, "leaf %p under key byte %02x at position %zu: its key has %s", (void *)l,
		     CTX_BYTE(v), idx, l->klen <= idx ? "ended" : "another byte there");
	}
	for (size_t j = 0; j < idx && j < l->klen; j++)
		if (l->key[j] != k->path[j]) {
			viol(k, "leaf %p: key byte %zu is %02x, its path says %02x", (void *)l, j,
			     l->key[j], k->path[j]);
			break;
		}
}

/* some_leaf -- a valid leaf below internal context C, NULL if none (internal) */
static const struct heart_leaf *some_leaf(hctx c)
{
	for (int depth = 0; CTX_INNER(c) && depth < 64; depth++) {
		const hctx *node = CTX_PTR(c);
		if (!valid_obj(node, node_bytes(CTX_TYPE(c))))
			return NULL;
		unsigned n = nslots(CTX_TYPE(c));
		hctx next = 0;
		for (unsigned i = 0; i <= n && !next; i++)
			if (CTX_LIVE(node[n - i]))
				next = node[n - i];
		c = next;
	}
	if (CTX_TYPE(c) != T_LEAF || !valid_obj(CTX_PTR(c), sizeof(struct heart_leaf)))
		return NULL;
	return CTX_PTR(c);
}

/* check_node -- internal context C indexing position IDX, and its subtree (internal) */
static void check_node(struct chk *k, hctx c, size_t idx, int is_root)
{
	unsigned t = CTX_TYPE(c);
	const hctx *node = CTX_PTR(c);
	if (!valid_obj(node, node_bytes(t))) {
		viol(k, "node %p (type %u, position %zu) is not an allocated object of %zu bytes",
		     (const void *)node, t, idx, node_bytes(t));
		return;
	}
	if (CTX_FROZEN(c))
		viol(k, "node %p: odd version %u in a quiescent tree", (const void *)node, CTX_VER(c));
	unsigned n = nslots(t), pb = per_bucket(t), live = 0;
	uint8_t seen[256] = {0};
	for (unsigned i = 0; i <= n; i++) {
		hctx v = node[i];
		int end = i == n;
		if (v == 0 || (v == T_TOMB && !end))
			continue;
		if (!CTX_LIVE(v)) {
			viol(k, "node %p slot %u: malformed context %#llx%s", (const void *)node, i,
			     (unsigned long long)v, CTX_FROZEN(v) ? " (frozen: odd version)" : "");
			continue;
		}
		live++;
		if (end) {
			if (CTX_TYPE(v) != T_LEAF)
				viol(k, "node %p: END slot holds an internal node", (const void *)node);
			else
				check_leaf(k, v, idx, 1);
			continue;
		}
		unsigned b = CTX_BYTE(v);
		if (bucket_of(t, b) != i / pb)
			viol(k, "node %p slot %u: key byte %02x sits in bucket %u, hashes to %u",
			     (const void *)node, i, b, i / pb, bucket_of(t, b));
		if (seen[b]++)
			viol(k, "node %p: key byte %02x twice", (const void *)node, b);
		if (idx >= HEART_KEY_MAX) {
			viol(k, "node %p indexes position %zu, beyond the longest key", (const void *)node, idx);
			continue;
		}
		if (CTX_TYPE(v) == T_LEAF) {
			check_leaf(k, v, idx, 0);
			continue;
		}
		size_t next = idx + 1 + CTX_PLEN(v);
		if (next > HEART_KEY_MAX) {
			viol(k, "node %p: prefix length %u runs past the longest key", CTX_PTR(v), CTX_PLEN(v));
			continue;
		}
		k->path[idx] = (uint8_t)b;
		const struct heart_leaf *r = some_leaf(v);
		if (r && r->klen >= next)
			memcpy(k->path + idx + 1, r->key + idx + 1, next - idx - 1);
		check_node(k, v, next, 0);
	}
	if (!live && !is_root)
		viol(k, "node %p (position %zu) has no children", (const void *)node, idx);
}

/* heart_check -- every broken invariant (reads PM only) */
size_t heart_check(struct heart *h, cc_violation_fn fn, void *ctx)
{
	struct chk k = {fn, ctx, 0, {0}};
	if (h->r->magic != HEART_MAGIC) {
		viol(&k, "root area holds no Heart (magic %#llx)", (unsigned long long)h->r->magic);
		return k.n;
	}
	hctx rc = h->r->root;
	if (!CTX_INNER(rc) || CTX_PLEN(rc) || CTX_BYTE(rc)) {
		viol(&k, "root context %#llx is not an internal node at position 0", (unsigned long long)rc);
		return k.n;
	}
	check_node(&k, rc, 0, 1);
	return k.n;
}
