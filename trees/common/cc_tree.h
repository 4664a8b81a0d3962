/*
 * cc_tree.h -- the tree adapter API: what every structure under test implements
 *
 * One adapter per structure, built-in or a user's own.  The driver program
 * (driver.c) runs histories, recovers images and serves the checker runner
 * through nothing but this table; the built-in trees use exactly what a user
 * would.  An adapter file defines one global:
 *
 *     const struct cc_adapter cc_adapter = { .name = "wort", ... };
 *
 * Keys and values are byte strings.  Integer keys of the thesis trees are
 * 8 bytes, big-endian, so byte order is numeric order; values are 8 bytes
 * (a u64, little-endian) unless the structure says otherwise.  Order of keys
 * is lexicographic on bytes, a proper prefix sorting first.
 *
 * The structure lives in a pool mapped at a fixed address (see crashcheck.h);
 * it may keep raw pointers into the pool.  DRAM-side state is rebuilt by
 * open/recover and never lives in the pool.
 */
#ifndef CC_TREE_H
#define CC_TREE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CC_KEY_MAX 24   /* longest key any adapter is given */
#define CC_VAL_MAX 16   /* longest value any adapter is given */

/* Results of the operations. */
enum cc_status {
	CC_OK = 0,        /* done (insert added, update replaced, delete removed, lookup found) */
	CC_EXISTS = 1,    /* insert: key already present, nothing changed */
	CC_NOTFOUND = 2,  /* update, delete, lookup: key absent, nothing changed */
	CC_NOSPACE = 3,   /* pool exhausted */
	CC_ERROR = 4,     /* anything else (the structure printed why to stderr) */
};

enum cc_key_kind {
	CC_KEYS_U64 = 0,    /* exactly 8 bytes, big-endian integers */
	CC_KEYS_BYTES = 1,  /* 1..CC_KEY_MAX bytes */
};

/* Called once per key/value pair, in key order; return non-zero to stop. */
typedef int (*cc_kv_fn)(void *ctx, const uint8_t *key, size_t klen,
			const uint8_t *val, size_t vlen);
/* Called once per PM object (address inside the pool, size in bytes). */
typedef void (*cc_obj_fn)(void *ctx, const void *obj, size_t size);
/* Called once per invariant violation, with one line of text. */
typedef void (*cc_violation_fn)(void *ctx, const char *text);

struct cc_adapter {
	const char *name;
	int key_kind;           /* enum cc_key_kind */
	size_t value_size;      /* bytes per value (8 for the thesis trees) */
	/*
	 * value_min -- shortest value accepted; 0 means exactly value_size.
	 * A structure that keeps values of different sizes apart (HART's
	 * per-size chains) sets it, and fuzzing then varies value lengths.
	 */
	size_t value_min;

	/*
	 * create -- format a fresh, zero-filled pool of SIZE bytes at POOL and
	 * return the structure's handle (NULL on failure, reason on stderr).
	 */
	void *(*create)(void *pool, size_t size);

	/*
	 * open -- attach to an existing pool image without repairing anything,
	 * rebuilding DRAM state only as far as needed to call recover.
	 */
	void *(*open)(void *pool, size_t size);

	/*
	 * recover -- the structure's own crash recovery; afterwards every
	 * operation below must work.  Returns 0, or non-zero if the image is
	 * beyond repair (reason on stderr).
	 */
	int (*recover)(void *t);

	int (*insert)(void *t, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen);
	int (*update)(void *t, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen);
	int (*remove)(void *t, const uint8_t *key, size_t klen);
	/* lookup -- on CC_OK copies the value to VAL and its length to *VLEN. */
	int (*lookup)(void *t, const uint8_t *key, size_t klen, uint8_t *val, size_t *vlen);
	/* scan -- up to COUNT pairs with key >= KEY, in key order. Returns pairs seen. */
	size_t (*scan)(void *t, const uint8_t *key, size_t klen, size_t count, cc_kv_fn fn, void *ctx);

	/* dump -- every pair, in key order (a scan of everything). */
	void (*dump)(void *t, cc_kv_fn fn, void *ctx);

	/*
	 * check -- report every broken invariant; returns how many.  Called
	 * after recovery, and in the fuzzer's crash-free run after every
	 * completed operation (driver run --check), so the invariants must hold
	 * between operations too.  It must not write PM.
	 */
	size_t (*check)(void *t, cc_violation_fn fn, void *ctx);

	/* reachable -- every PM object reachable from the structure's roots. */
	void (*reachable)(void *t, cc_obj_fn fn, void *ctx);

	/*
	 * allocated -- every PM object the image's allocator considers in use.
	 * Objects allocated but not reachable are leaks (unless recover
	 * reclaimed them).  NULL if the structure keeps no such record.
	 */
	void (*allocated)(void *t, cc_obj_fn fn, void *ctx);

	/* close -- release DRAM state (the pool stays mapped). May be NULL. */
	void (*close)(void *t);
};

extern const struct cc_adapter cc_adapter;

/* cc_value_min -- the shortest value A accepts */
static inline size_t cc_value_min(const struct cc_adapter *a)
{
	return a->value_min ? a->value_min : a->value_size;
}

#ifdef __cplusplus
}
#endif

#endif /* CC_TREE_H */
