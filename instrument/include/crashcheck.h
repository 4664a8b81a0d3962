/*
 * crashcheck.h -- the public API for code under test
 *
 * Code compiled with crashcheck-cc / crashcheck-c++ is instrumented by the
 * crashcheck Clang pass: every store, flush and fence that falls in a
 * registered persistent-memory (PM) region is logged to a trace file.  This
 * header is all a structure under test needs:
 *
 *   - pools:       crashcheck_pool_open() maps a file at a fixed virtual
 *                  address and registers it as PM; crashcheck_register_pm()
 *                  registers any other range (an existing mapping).
 *   - operations:  crashcheck_op_begin()/crashcheck_op_end() bracket the
 *                  operations of a history, so crash points know which
 *                  operation was in flight.
 *   - objects:     crashcheck_alloc()/crashcheck_free() mark PM objects
 *                  with the source site that allocated them (leak reports).
 *   - labels:      crashcheck_mark() puts a free-form label in the trace.
 *   - threads:     with CRASHCHECK_SCHED set, threads run one at a time
 *                  under a seeded, replayable schedule (docs/scheduler.md).
 *
 * Tracing is on when the environment variable CRASHCHECK_TRACE names a file;
 * when it is unset every hook returns at once and the program runs at
 * near-native speed.
 *
 * Sites: a call to any function below made from code built with the pass
 * records the file, line, column and function of the call (and of its
 * inlined-at caller).  crashcheck_here() returns the site of its own call so
 * that an allocator can attribute an allocation to its caller:
 *
 *     #define my_alloc(n) my_alloc_at((n), crashcheck_here())
 *     void *my_alloc_at(size_t n, crashcheck_site_t site) {
 *         void *p = ...;
 *         crashcheck_alloc_at(p, n, site);
 *         return p;
 *     }
 *
 * Built without the pass, the same calls work and record no site.
 */
#ifndef CRASHCHECK_H
#define CRASHCHECK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An opaque source site (file, line, column, function, inlined-at). */
typedef const struct crashcheck_site *crashcheck_site_t;

/* Pool flags for crashcheck_pool_open. */
#define CRASHCHECK_POOL_CREATE 0x1 /* create (or truncate) the file, zero-filled */

/*
 * crashcheck_pool_open -- map the pool file PATH of SIZE bytes at address
 * ADDR and register it as PM.
 *
 * ADDR 0 means the default address: $CRASHCHECK_POOL_ADDR if set (hex or
 * decimal), else CRASHCHECK_DEFAULT_POOL_ADDR.  The mapping is shared and
 * fixed, so raw pointers stored in the pool stay valid in every image made
 * from it.  With CRASHCHECK_POOL_CREATE the file is created or truncated to
 * SIZE zero bytes; without it the file must exist and be at least SIZE bytes.
 *
 * Returns the mapped address, or NULL with a one-line reason available from
 * crashcheck_last_error() (file missing, too small, address already mapped).
 */
#define CRASHCHECK_DEFAULT_POOL_ADDR ((uintptr_t)0x600000000000ULL)
void *crashcheck_pool_open(const char *path, size_t size, uintptr_t addr, int flags);

/* crashcheck_pool_close -- unmap a pool returned by crashcheck_pool_open. */
void crashcheck_pool_close(void *pool, size_t size);

/*
 * crashcheck_register_pm -- treat [ADDR, ADDR+LEN) as persistent memory from
 * now on.  Its current contents become the region's initial image in the
 * trace.  Returns 0, or -1 (crashcheck_last_error() says why: too many
 * regions, overlap with a registered region).  The exact range of a
 * registered region again is a no-op returning 0 (a mapping that
 * pmem_map_file or pmemobj_create/open returned is traced already).
 */
int crashcheck_register_pm(void *addr, size_t len);

/*
 * crashcheck_supply_regions -- for drivers checking a post-crash image: the images of PM
 * regions 1..N (IMAGES[i] of SIZES[i] bytes is region i+1; region 0 is the pool the driver
 * maps).  crashcheck_supply_begin(FIRST) then numbers the new regions registered from now on
 * FIRST, FIRST+1, ...: each one that has an image starts from it (memory registered with
 * crashcheck_register_pm gets it copied in; pmem_map_file and libpmemobj pools map a private
 * copy of it instead of the file named).  docs/trees.md, "Regions past the pool".
 */
int crashcheck_supply_regions(const void *const *images, const size_t *sizes, unsigned n);
void crashcheck_supply_begin(unsigned first);

/* crashcheck_last_error -- the reason for the last failed call, one line. */
const char *crashcheck_last_error(void);

/* crashcheck_tracing -- non-zero when events are being written to a trace. */
int crashcheck_tracing(void);

/* Operation markers: a crash between them is a crash during INDEX. */
void crashcheck_op_begin(uint64_t index);
void crashcheck_op_end(uint64_t index);

/* crashcheck_mark -- put LABEL (copied) into the trace. */
void crashcheck_mark(const char *label);

/* crashcheck_here -- the site of this very call (NULL when built without the pass). */
crashcheck_site_t crashcheck_here(void);

/* Allocation markers.  The plain forms record the site of their own call. */
void crashcheck_alloc(void *obj, size_t size);
void crashcheck_free(void *obj);
void crashcheck_alloc_at(void *obj, size_t size, crashcheck_site_t site);
void crashcheck_free_at(void *obj, crashcheck_site_t site);

/* crashcheck_trace_flush -- write buffered events to the trace file now. */
void crashcheck_trace_flush(void);

/*
 * The deterministic scheduler (docs/scheduler.md).  With CRASHCHECK_SCHED
 * set (random:SEED, pct:SEED:DEPTH[:STEPS] or replay:FILE), threads created
 * with pthread_create run one at a time and switch only at scheduling
 * points.  A run that cannot go on ends with one line on stderr, a `mark`
 * event "cc-sched deadlock|livelock ..." in the trace, and one of these
 * exit statuses.
 */
#define CRASHCHECK_EXIT_DEADLOCK 86 /* every live thread waits for a lock, condition or join */
#define CRASHCHECK_EXIT_LIVELOCK 87 /* threads only spin, or an operation never ends */
#define CRASHCHECK_EXIT_HANG 88     /* no scheduling point for CRASHCHECK_SCHED_HANG_MS */

/* crashcheck_sched_active -- non-zero when the scheduler is on (CRASHCHECK_SCHED set). */
int crashcheck_sched_active(void);

/*
 * crashcheck_sched_yield -- a scheduling point at which the caller made no
 * progress: for wait loops over plain (non-atomic) memory, which the
 * scheduler cannot see otherwise.  Does nothing when the scheduler is off.
 */
void crashcheck_sched_yield(void);

#ifdef __cplusplus
}
#endif

#endif /* CRASHCHECK_H */
