/*
 * history.h -- the history text format of the driver: parsing into operations
 *
 * One operation per line:
 *     insert K V    update K V    delete K    lookup K    scan K N
 * Blank lines and lines starting with '#' are ignored.  K and V are a
 * decimal u64 (K becomes 8 bytes big-endian, V 8 bytes little-endian) or
 * x:HEX raw bytes.  N is a decimal count.  docs/trees.md has the details.
 *
 * A structure whose model is not an ordered map (cc_is_map) gets generic
 * lines instead: `NAME ARG ...`, NAME one of its table `ops`, each ARG a
 * decimal u64 or x:HEX as the table says (cc_history_parse_for).  A map
 * adapter may leave update, remove and scan NULL: a line using one is then
 * refused by cc_history_parse_for.
 *
 * Threads: a line `thread N` (N = 1, 2, ... in order, at most
 * CC_THREADS_MAX) starts thread N's section; the operations before the
 * first such line are the load phase (thread 0, run by the main thread
 * before any other thread starts).  Operations are numbered 0.. in file
 * order across all sections.
 */
#ifndef CC_HISTORY_H
#define CC_HISTORY_H

#include <stddef.h>
#include <stdint.h>
#include "cc_tree.h"

enum cc_op_kind { OP_INSERT, OP_UPDATE, OP_DELETE, OP_LOOKUP, OP_SCAN, OP_GENERIC };

struct cc_op {
	enum cc_op_kind kind;
	uint8_t key[CC_KEY_MAX];
	size_t klen;
	uint8_t val[CC_VAL_MAX];
	size_t vlen;
	uint64_t count;    /* scan: pairs wanted */
	struct cc_generic_op gen;  /* OP_GENERIC: name and arguments */
	unsigned line;     /* line number in the history text */
	unsigned thread;   /* 0: load phase; N >= 1: thread N's section */
};

/* at most this many thread sections in one history */
#define CC_THREADS_MAX 8

struct cc_history {
	struct cc_op *ops;
	size_t n;
	unsigned nthreads; /* thread sections (0: a single-threaded history) */
};

/*
 * cc_history_parse -- parse TEXT (NUL-terminated) for an adapter with
 * KEY_KIND whose values are VALUE_MIN..VALUE_SIZE bytes (cc_value_min).
 * Returns 0 and fills H (free with
 * cc_history_free), or -1 with a one-line reason naming the line in ERR.
 */
int cc_history_parse(const char *text, int key_kind, size_t value_min, size_t value_size,
		     struct cc_history *h, char *err, size_t errlen);

/*
 * cc_history_parse_for -- parse TEXT for adapter A: the map verbs when A's
 * model is an ordered map (as cc_history_parse), else generic lines checked
 * against A's operation table.  Returns 0 or -1 with the reason in ERR.
 */
int cc_history_parse_for(const char *text, const struct cc_adapter *a,
			 struct cc_history *h, char *err, size_t errlen);

/*
 * cc_missing_verb -- "update", "delete" ... when A leaves the entry point of
 * map operation KIND NULL (an optional operation it does not have), else
 * NULL.  Such an operation in a history is a user error naming the line.
 */
const char *cc_missing_verb(const struct cc_adapter *a, enum cc_op_kind kind);

void cc_history_free(struct cc_history *h);

#endif /* CC_HISTORY_H */
