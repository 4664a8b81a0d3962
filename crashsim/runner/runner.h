/*
 * runner.h -- the checker runner: checks many post-crash states in one process
 *
 * A tree driver calls cc_runner_serve() in its `serve` mode.  The runner maps
 * the pool at its fixed address, then reads requests from IN_FD: a base image
 * (a file to load, or a patch against the current base) and states (lists of
 * writes over the base).  For each state it forks a child that applies the
 * writes to its copy-on-write view of the pool and calls CHECK; how the child
 * ended, CHECK's JSON result and the tail of the child's stderr go back to
 * OUT_FD as one JSON line.  The wire protocol is docs/runner-protocol.md.
 *
 * A check that crashes, aborts, hangs or allocates without bound is a result
 * ("signal", "exit", "timeout", "oom"), never a failure of the runner.
 */
#ifndef CC_RUNNER_H
#define CC_RUNNER_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Limits of one check (one forked child).  A field of 0 switches that limit
 * off; a NULL limits pointer means CC_RUNNER_DEFAULT_LIMITS.
 *
 *   timeout_ms   wall-clock time; the runner kills the child when it runs out
 *                (status "timeout")
 *   mem_bytes    address space the check may add to what the runner had
 *                mapped when it forked (RLIMIT_AS); a check that fails
 *                after exhausting it has status "oom"
 *   cpu_seconds  CPU time (RLIMIT_CPU); running out is status "timeout"
 */
struct cc_runner_limits {
	unsigned timeout_ms;
	size_t mem_bytes;
	unsigned cpu_seconds;
};

/* The same numbers as harness/defaults.py (TIMEOUT_MS, MEM_MB, CPU_S): harness always passes its
 * own, these apply to `driver serve` run by hand; tests/unit/test_defaults.py holds them equal. */
#define CC_RUNNER_DEFAULT_LIMITS { 2000u, (size_t)512 << 20, 10u }

/*
 * CHECK runs in a forked child with the post-crash image mapped at its fixed
 * address; it writes ONE JSON object (one line) to OUT and returns an exit
 * status.  FOLLOWUP is an opaque text the Python side attached to the state
 * (post-recovery operations), or "".  Anything the check prints to stdout or
 * stderr is captured as the state's "stderr", never mixed into the protocol.
 */
typedef int (*cc_check_fn)(void *ctx, const char *followup, FILE *out);

/*
 * cc_runner_serve -- serve check requests from IN_FD, answering on OUT_FD,
 * until a quit request or end of input.
 *
 * POOL_ADDR must be page-aligned and [POOL_ADDR, POOL_ADDR + POOL_SIZE) must
 * be unmapped in the calling process: the runner maps it (fixed, private,
 * zero-filled until a base is loaded) and unmaps it before returning.
 *
 * Returns 0 after a quit request or a clean end of input, -1 on a protocol
 * error, an I/O error or a pool address that is already mapped (the reason
 * goes to stderr and, if possible, as an {"error": ...} line to OUT_FD).
 * Not reentrant: one runner per process at a time.
 */
int cc_runner_serve(int in_fd, int out_fd, void *pool_addr, size_t pool_size,
		    cc_check_fn check, void *ctx, const struct cc_runner_limits *lim);

#ifdef __cplusplus
}
#endif

#endif /* CC_RUNNER_H */
