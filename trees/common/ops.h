/*
 * ops.h -- run parsed operations against an adapter and print their results
 *
 * Result lines: ok, exists, notfound, nospace, error, value V, scan K V K V ...
 */
#ifndef CC_OPS_H
#define CC_OPS_H

#include <stdio.h>
#include "cc_tree.h"
#include "history.h"

/* cc_run_op -- run OP on tree T, write its result line to OUT; returns the cc_status */
int cc_run_op(const struct cc_adapter *a, void *t, const struct cc_op *op, FILE *out);

/*
 * cc_run_history -- run every operation of H, each bracketed by
 * crashcheck_op_begin/op_end with its index, results to OUT (one per line).
 * With CHECK, the adapter's check runs after every operation until one
 * leaves a broken invariant; each violation is a line "!invariant I TEXT"
 * (I the operation's index) right after that operation's result.  Checks
 * only read, so a traced run logs the same events with or without them.
 * OUT is flushed after every operation (a supervisor counts the results to
 * tell which operation hung or died).  When an operation leaves a child
 * process running, one line "!stray I" follows its result; when one killed
 * the driver's parent process, "!orphan I" follows and the driver exits
 * with status 3 at once.
 */
void cc_run_history(const struct cc_adapter *a, void *t, const struct cc_history *h, FILE *out,
		    int check);

/*
 * cc_run_threads -- a history with thread sections (H->nthreads > 0): the
 * load phase runs first on the calling thread, as cc_run_history (plain
 * result lines); then one pthread per section runs its operations, each
 * bracketed by crashcheck_op_begin/op_end with its index in H, and writes
 * "!call T I" before and "!ret T I RESULT" after it (T the section, I the
 * index), each line written and flushed under OUT's lock, so the order of
 * the lines is an order the operations' calls and returns really had (under
 * CRASHCHECK_SCHED, the schedule's).  With CHECK the adapter's check runs
 * after each load-phase operation (as cc_run_history) and once more after
 * every thread has ended (a check reads the structure, so it never runs
 * while threads do); violations then name the last operation.  Returns 0, or -1 when a thread
 * could not be started (reason on stderr).
 */
int cc_run_threads(const struct cc_adapter *a, void *t, const struct cc_history *h, FILE *out,
		   int check);

/* lookups get a buffer this large, so an adapter writing more than CC_VAL_MAX is caught */
#define CC_LOOKUP_GUARD 4096

/*
 * cc_print_dump -- "dump K V K V ..." on one line; for a non-map model
 * "dump [[C, ...], ...]": each item of dump_items as a JSON array of its
 * cells in history notation (u64 as decimal strings, bytes as "x:HEX").
 */
void cc_print_dump(const struct cc_adapter *a, void *t, FILE *out);

/* cc_print_items -- the generic dump's JSON array alone */
void cc_print_items(const struct cc_adapter *a, void *t, FILE *out);

#endif /* CC_OPS_H */
