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
 *
 * Models.  An adapter names the reference model it is judged against
 * (`model`, specs/registry.py; NULL means "ordered_map").  An ordered map is
 * driven through the map verbs below.  Any other model is driven through
 * `op`: the history line `NAME ARG ...` is parsed generically, checked
 * against the adapter's table `ops` (names and argument kinds), and handed
 * over as a struct cc_generic_op; the adapter writes the result line.  Its
 * state comes out through `dump_items`, one row of arguments per item.
 * A structure that lives in DRAM only (the range lock) sets `no_pm`: the
 * driver then needs no pool, and crash exploration does not apply.
 */
#ifndef CC_TREE_H
#define CC_TREE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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
/* Kinds of a generic operation's arguments and of dump_items' cells. */
enum cc_arg_kind {
	CC_ARG_U64 = 0,     /* a decimal u64 in the history ("u" in a signature) */
	CC_ARG_BYTES = 1,   /* x:HEX, 1..CC_KEY_MAX bytes ("b" in a signature) */
};

#define CC_OP_ARGS_MAX 4  /* most arguments a generic operation takes */
#define CC_OUT_MAX 256    /* room for one result line of `op` (NUL included) */

/* One argument (or dump cell): a u64 or a byte string. */
struct cc_arg {
	int kind;                   /* enum cc_arg_kind */
	uint64_t u;                 /* CC_ARG_U64 */
	uint8_t bytes[CC_KEY_MAX];  /* CC_ARG_BYTES */
	size_t len;
};

/*
 * One entry of an adapter's operation table: NAME takes strlen(ARGS)
 * arguments, ARGS[i] 'u' (u64) or 'b' (bytes).  The table ends with a
 * NULL name.  Example: {"trylock", "uu"}.
 */
struct cc_op_decl {
	const char *name;
	const char *args;
};

/* A parsed generic operation: the table entry it matched and its arguments. */
struct cc_generic_op {
	const char *name;           /* = ops[index].name */
	int index;                  /* into the adapter's `ops` table */
	size_t nargs;
	struct cc_arg args[CC_OP_ARGS_MAX];
};

/* Called once per item of a generic dump (a row of N cells), in the structure's order. */
typedef int (*cc_item_fn)(void *ctx, const struct cc_arg *cells, size_t n);

/* Called once per PM object (address inside the pool, size in bytes). */
typedef void (*cc_obj_fn)(void *ctx, const void *obj, size_t size);
/* Called once per invariant violation, with one line of text. */
typedef void (*cc_violation_fn)(void *ctx, const char *text);

/*
 * CC_VIOLATION -- report TEXT through FN with the file:line of the check that
 * found it (the text gets " [check at FILE:LINE]"; a call over several lines
 * gives the line it ends on).  crashcheck names a broken
 * rule by that site (docs/trees.md "check"), so two rules whose texts differ
 * only in numbers stay two, and one check whose text carries varying words
 * stays one; a violation without a crash is one bug per operation and site.
 * Calling FN directly still works: the rule is then named by its text
 * without numbers.
 *
 * CC_VIOLATIONF -- the same with printf-style text:
 *     CC_VIOLATIONF(fn, ctx, "node %p has %u children", (void *)n, k);
 *
 * A check that reports through a helper of its own (to count, to cap) passes
 * the site through it: the helper takes FILE and LINE, calls
 * cc_vviolation_at, and a macro of the helper's name adds __FILE__, __LINE__
 * (trees/wort/wort_recover.c `violation`).
 */
#define CC_VIOLATION(fn, ctx, text) cc_violation_at((fn), (ctx), (text), __FILE__, __LINE__)
#define CC_VIOLATIONF(fn, ctx, ...) cc_violationf_at((fn), (ctx), __FILE__, __LINE__, __VA_ARGS__)

/* cc_violation_at -- CC_VIOLATION's body (internal) */
static inline void cc_violation_at(cc_violation_fn fn, void *ctx, const char *text,
				   const char *file, int line)
{
	char buf[512];
	snprintf(buf, sizeof(buf), "%s [check at %s:%d]", text, file, line);
	fn(ctx, buf);
}

/* cc_vviolation_at -- format FMT with AP and report it with FILE:LINE */
__attribute__((format(printf, 5, 0)))
static inline void cc_vviolation_at(cc_violation_fn fn, void *ctx, const char *file, int line,
				    const char *fmt, va_list ap)
{
	char text[384];
	vsnprintf(text, sizeof(text), fmt, ap);
	cc_violation_at(fn, ctx, text, file, line);
}

/* cc_violationf_at -- CC_VIOLATIONF's body (internal) */
__attribute__((format(printf, 5, 6)))
static inline void cc_violationf_at(cc_violation_fn fn, void *ctx, const char *file, int line,
				    const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	cc_vviolation_at(fn, ctx, file, line, fmt, ap);
	va_end(ap);
}

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

	/*
	 * The map verbs.  insert, lookup and dump are required; update, remove
	 * and scan are optional: a structure without one leaves it NULL, the
	 * fuzzer's histories and follow-up workload then leave that operation
	 * out (`driver info` lists what it has as "map_ops"), and a history
	 * line using it is a user error.
	 */
	int (*insert)(void *t, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen);
	int (*update)(void *t, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen);
	int (*remove)(void *t, const uint8_t *key, size_t klen);
	/*
	 * lookup -- on CC_OK copies the value to VAL and its length to *VLEN.
	 * VAL has room for CC_VAL_MAX bytes; the driver passes a larger guard
	 * buffer and reports a *VLEN above CC_VAL_MAX as an error naming the
	 * key, never cutting the value.
	 */
	int (*lookup)(void *t, const uint8_t *key, size_t klen, uint8_t *val, size_t *vlen);
	/* scan -- up to COUNT pairs with key >= KEY, in key order. Returns pairs seen. */
	size_t (*scan)(void *t, const uint8_t *key, size_t klen, size_t count, cc_kv_fn fn, void *ctx);

	/*
	 * dump -- every pair, in key order (a scan of everything).  Keys and
	 * values longer than CC_KEY_MAX / CC_VAL_MAX are reported by the
	 * check as violations, never cut.
	 */
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

	/*
	 * The members below are for structures that are not ordered maps; a
	 * map adapter leaves them zero.  A non-map adapter leaves the map verbs
	 * (insert .. scan, dump) NULL.
	 *
	 * model -- the name of its reference model in specs/registry.py
	 * (e.g. "range_lock"); NULL means "ordered_map".
	 */
	const char *model;

	/*
	 * no_pm -- non-zero for a structure that declares no PM: create/open
	 * get no pool (NULL, 0), recover has nothing to do, reachable and
	 * allocated may be NULL, and the driver runs it without --pool.
	 */
	int no_pm;

	/* ops -- the operations of the model (NULL-name terminated) */
	const struct cc_op_decl *ops;

	/*
	 * op -- run one generic operation and write its result line (no
	 * newline, e.g. "ok") into OUT (OUTLEN >= CC_OUT_MAX bytes).  Returns
	 * a cc_status (CC_ERROR: the structure said why on stderr).
	 */
	int (*op)(void *t, const struct cc_generic_op *op, char *out, size_t outlen);

	/*
	 * dump_items -- the whole state in a model-neutral form: FN once per
	 * item with its cells (the range lock: each held range as two u64
	 * cells S, E, in increasing S).  Return non-zero from FN to stop.
	 */
	void (*dump_items)(void *t, cc_item_fn fn, void *ctx);

	/*
	 * threads -- non-zero when the operations may run from several
	 * threads at once (the structure does its own locking): only then does
	 * the driver accept a history with `thread N` sections.  The thesis
	 * trees leave it 0.
	 */
	int threads;

	/*
	 * A structure that maps its pool file itself (libpmemobj's
	 * pmemobj_create/pmemobj_open, which pick their own address and run
	 * their own transaction recovery) sets both instead of create/open:
	 * the driver then neither maps nor formats the pool.
	 *   create_file -- make a fresh pool of SIZE bytes in the file PATH
	 *                  (which does not exist) and return the handle;
	 *   open_file   -- open the pool image in PATH (a post-crash image:
	 *                  the library's own recovery runs here), rebuilding
	 *                  DRAM state as far as needed to call recover.  In a
	 *                  check PATH is an empty file whose mappings are the
	 *                  image (own_image.c): its bytes are there only
	 *                  through mmap (read() sees zeros).
	 * Both return NULL on failure (reason on stderr).  Only a tracer that
	 * sees the library's stores can trace such a structure: the pass when
	 * the pool comes from libpmemobj's pmemobj_create/pmemobj_open (the
	 * runtime shadows it), `crashcheck fuzz --tracer pmemcheck` whatever
	 * maps it (docs/pmemcheck.md).
	 */
	void *(*create_file)(const char *path, size_t size);
	void *(*open_file)(const char *path, size_t size);

	/*
	 * persistency -- the persistency model the structure is built for:
	 * "adr" (NULL too: a store is durable once flushed and fenced) or
	 * "eadr" (persistent caches: a store is durable once it is visible;
	 * code written for eADR issues no flushes).  `crashcheck fuzz` judges
	 * it under this model unless --model says otherwise (docs/trees.md).
	 */
	const char *persistency;
};

extern const struct cc_adapter cc_adapter;

/* cc_value_min -- the shortest value A accepts */
static inline size_t cc_value_min(const struct cc_adapter *a)
{
	return a->value_min ? a->value_min : a->value_size;
}

/* cc_model -- the name of the model A is judged against */
static inline const char *cc_model(const struct cc_adapter *a)
{
	return a->model ? a->model : "ordered_map";
}

/* cc_key_u64 -- a CC_KEYS_U64 key (8 bytes, big-endian) as its number */
static inline uint64_t cc_key_u64(const uint8_t *k)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | k[i];
	return v;
}

/* cc_u64_key -- the number V as a CC_KEYS_U64 key, into K (8 bytes) */
static inline void cc_u64_key(uint64_t v, uint8_t *k)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		k[i] = (uint8_t)v;
}

/* cc_own_pool -- whether A maps its pool file itself (create_file/open_file) */
static inline int cc_own_pool(const struct cc_adapter *a)
{
	return a->open_file != NULL;
}

/* cc_is_map -- whether A is driven through the map verbs (model ordered_map) */
static inline int cc_is_map(const struct cc_adapter *a)
{
	return !a->model || !__builtin_strcmp(a->model, "ordered_map");
}

#ifdef __cplusplus
}

/*
 * cc_violations -- a C++ check's callback that reports with the site of its
 * caller: a structure whose check takes any callable (`check(Fn bad)` calling
 * `bad("text")`) is handed `cc_violations{fn, ctx}` by its adapter, and each
 * call names the line of the structure's check that made it (the default
 * arguments are the caller's file and line, as CC_VIOLATION's).
 */
struct cc_violations {
	cc_violation_fn fn;
	void *ctx;
	void operator()(const char *text, const char *file = __builtin_FILE(),
			int line = __builtin_LINE()) const
	{
		cc_violation_at(fn, ctx, text, file, line);
	}
};
#endif

#endif /* CC_TREE_H */
