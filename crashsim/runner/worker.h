/*
 * worker.h -- the checker runner's reused check process (STATE requests):
 * what its files share (internal)
 *
 * The worker is split by job: worker_control.c is the runner's side (start
 * a worker, post a batch, wait for it, answer how each state ended, stop
 * it), worker_loop.c the worker process itself (its set-up, the loop that
 * checks state after state, one check on its own stack), worker_snapshot.c
 * what puts the process back after a check (the memory snapshot and its
 * restore, the fds, children and break, and the settle of the rest).
 * Names shared between them carry the ccr_w_ prefix (see runner_internal.h
 * for why the runner's names carry a prefix at all).
 *
 * Why
 *   A fork per state costs more than the check: on the 2-core VM a fork,
 *   exit and reap of even a tiny static process takes about 170 us of CPU,
 *   ten times a small tree's recovery and dump.  So eager states are checked
 *   one after another by one long-lived child, the worker, which puts itself
 *   back exactly as it was before every check.  A LAZY request without lazy
 *   lines is one state whose reads are logged; one with lazy lines that
 *   names the stored body is explored in the worker too (lazy.c reads the
 *   body from a shared copy).  Other LAZY requests with lazy lines, and
 *   states too big for the hand-over area, still fork (child.c).
 *
 * How the worker is restored
 *   Once, when it starts, the worker copies every private writable mapping it
 *   has (the heap, the globals of the driver and its libraries, the main
 *   stack, malloc's mappings) into a memfd and maps that memfd privately over
 *   the same addresses.  The pool already is such a mapping of the base
 *   memfd (image.c).  After a check, the PAGEMAP_SCAN ioctl (Linux 6.7; else
 *   reading /proc/self/pagemap) shows every page of them the check wrote (it
 *   became a private copy): it is copied back from a shared view of its
 *   memfd, or dropped (struct span, struct track).  So the
 *   whole of user memory is restored, not only the lines a state changed,
 *   without knowing beforehand what the check touches.  The check runs on a
 *   stack of its own (zeroed after it) and the worker's own loop
 *   state is in mappings outside the snapshot, so a check that scribbles on
 *   globals, the heap or the pool cannot reach the next state.
 *   The rest of the process is put back or checked after every check: fds 0-2
 *   are pointed at the captures again and any fd the check left open is
 *   closed; the break is moved back.  The rest is settled (below) every
 *   W_SETTLE_EVERY states and at a batch's end.
 *   What cannot be put back cheaply retires the worker (it exits after
 *   answering, and the next state gets a fresh one): a child or thread still
 *   running (the child is "stray", as with a fork per state), a changed
 *   address-space size (a mapping left behind or removed: looked for when the
 *   process is settled, below), a heap that shrank below the snapshot, a
 *   failed restore, or one CPU-second used in all (the CPU limit is per
 *   process, see below).
 *
 * What a check sees
 *   The same as in a forked child (child.c): its own process group, death
 *   with the runner, fds, limits, handlers and the OOM probe.  A check that
 *   crashes, exits, hangs or runs out of memory ends the worker, and the
 *   answer comes from how it ended, exactly as for a forked child; the next
 *   state starts a new worker.  A check returning non-zero also ends it (as
 *   exit status).  The worker notes in a shared page when the check itself
 *   has finished, so a worker that fails afterwards, while restoring itself,
 *   never turns a clean check into a crash.  The CPU limit is a CPU-time
 *   timer armed for each check (SIGXCPU, as RLIMIT_CPU gives a forked
 *   check); RLIMIT_CPU, which counts the whole worker, is only a backstop.
 *
 * Batches
 *   A wake-up costs more than most restores (two context switches and a
 *   few pipe system calls on each side), so the runner posts every STATE it
 *   has read (up to CCR_WORKER_BATCH) at once (struct w_shared) and the
 *   worker wakes it once, after the last, or when it retires or dies in
 *   the middle (the runner then answers the states done, the one it died
 *   in, and posts the rest to a new worker).  Each state's result and
 *   stderr follow the previous one's in the capture files; the worker
 *   notes where each ends (struct w_slot).
 *
 * Settled (ccr_w_settle) every W_SETTLE_EVERY states, at a batch's end and before
 * the worker retires, not after every check (two dozen system calls, a
 * tenth of a small check's cost): the signal mask, the fatal-signal
 * handlers, the alternate stack and SIGPIPE are put back and interval
 * timers disarmed, each call reporting what it replaced, and the resource
 * limits, umask, working directory and address-space size are compared
 * (changed: the worker retires; a check that lowered a limit or moved
 * elsewhere would otherwise fail later checks, one that left a mapping
 * behind would move later checks' mappings).  Checks never change them in practice, but one
 * could, and the checks after it would run in a changed process: when a
 * settle finds a change, only the states up to the first one since the
 * previous settle are kept (that one started in a settled process), the
 * runner checks the rest again in a worker that settles after every state
 * for a while (struct w_shared: settled, unsure, settle_each).  So does a
 * worker that dies in a state after unsettled ones, but for a timeout
 * (checking it again would take as long): a hang is answered as it is.
 *
 * Not restored (documented in docs/runner-protocol.md): POSIX timers, the
 * dispositions of signals other than the fatal ones and SIGPIPE, and memory
 * protections a check changed with mprotect without changing the mapping's
 * size.
 */
#ifndef CC_RUNNER_WORKER_H
#define CC_RUNNER_WORKER_H

#include <stdint.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <time.h>
#include <ucontext.h>

#include "runner_internal.h"

#define W_REQ_BYTES ((size_t)1 << 20)        /* followups + writes of a batch handed over */
#define W_OUT_SOFT (CCR_OUT_MAP / 2)          /* no new state of a batch starts past this much result */
#define W_SETTLE_EVERY 32                    /* states between two settles of the process (ccr_w_settle) */
#define W_MAX_REGIONS 512
#define W_MAPS_BYTES ((size_t)256 << 10)     /* /proc/self/maps text */
#define W_STACK_BYTES ((size_t)256 << 10)    /* the worker loop's own stack */
#define W_NLIMITS 9                           /* entries of w_limits */
#define W_CPU_SLACK 1                        /* CPU seconds before a worker retires */
#define W_START_MS 10000                     /* a worker that is not ready by then is not used */
#define W_STOP_POLL_MS 100                   /* how often a waiting runner looks for a stopped worker */
#define W_HOT_MAX 512                        /* pages kept and copied back instead of dropped */
#define W_PM_CHUNK 4096                      /* /proc/self/pagemap entries read at once */
#define W_STACK_TRACKED ((size_t)256 << 10)  /* top of the check's stack restored page by page */
#define W_SCAN_REGIONS 256                   /* page ranges one PAGEMAP_SCAN call returns */
#define W_SCAN_SMALL 4                       /* pages of a mapping compared instead of scanned */
#define W_OUT_BUF 8192                       /* the result stream's buffer (BUFSIZ, as before) */

/* PAGEMAP_SCAN (Linux 6.7): older headers lack it (linux/fs.h) */
#ifndef PAGEMAP_SCAN
struct page_region {
	uint64_t start, end, categories;
};
struct pm_scan_arg {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
	uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};
#define PAGEMAP_SCAN _IOWR('f', 16, struct pm_scan_arg)
#define PAGE_IS_FILE (1 << 2)
#define PAGE_IS_PRESENT (1 << 3)
#define PAGE_IS_SWAPPED (1 << 4)
#endif

enum { PH_POSTED = 1, PH_RUNNING, PH_CHECKED, PH_RESTORED };

/* One state of a batch: its followup (NUL-terminated) at data + fu_off, shared by the states
 * after it that run the same one (a crash point's states do: a continuation is a few KiB), and
 * its writes at data + off. */
struct w_item {
	uint64_t fu_off, off, wlen;
	uint32_t reads;         /* CCR_READS or CCR_LAZY (struct ccr_job) */
	uint32_t ndec;          /* CCR_LAZY: u16 decisions after the writes */
};

/* What the worker leaves of a state it checked and restored itself after. */
struct w_slot {
	uint64_t out_end, err_end;   /* where its result and stderr end in the capture files */
	int stray;
};

/*
 * Shared between the runner and its worker (MAP_SHARED: outside the
 * snapshot).  The runner posts a batch of N states and wakes the worker
 * once; the worker checks them in order, each state's result and stderr
 * following the previous one's in the capture files, and wakes the runner
 * once, when all are done or when it retires (after NDONE of them).  The
 * fields of the state in progress (CUR) say how far it got if the worker
 * dies or hangs in it.
 */
struct w_shared {
	volatile int phase;     /* PH_*: how far state CUR got */
	volatile int retire;    /* the worker exits after state CUR */
	volatile int stray;     /* state CUR's check left a process running */
	volatile int cur;       /* the state in progress (-1: none yet) */
	volatile int ndone;     /* states checked and restored after (and kept: see settled) */
	volatile int settled;   /* the last state after which the process was settled (-1: before the first) */
	volatile int unsure;    /* a settle found a change after unsettled states: NDONE stops before them */
	int settle_each;        /* settle after every state of this batch */
	volatile int64_t started_ms;   /* CLOCK_MONOTONIC ms when state CUR (or the batch) started */
	double cpu_start;       /* the worker's CPU seconds when state CUR's check started */
	uint64_t base_gen;      /* the runner's base generation (image.c) */
	uint64_t pool_hi;       /* end of the base's data: the pool's tracked part */
	int n;                  /* states posted */
	volatile uint64_t out_len;   /* result bytes the batch's checks have written (out_write) */
	struct w_item item[CCR_WORKER_BATCH];
	struct w_slot slot[CCR_WORKER_BATCH];
	uint8_t data[];
};

struct region {
	uintptr_t start, end;
};

/*
 * A tracked range: restored page by page.  /proc/self/pagemap tells which
 * pages of a private file mapping the check wrote (they became private
 * anonymous copies).  Such a page is copied back from SRC (a shared
 * read-only view of the same memfd; NULL: zeros) and kept ("hot"), so the
 * next check that writes it takes no page fault; past W_HOT_MAX pages it is
 * dropped instead.  Page faults cost several microseconds on a VM: dropping
 * everything after each check (MADV_DONTNEED) and faulting it in again cost
 * more than the check.
 */
struct track {
	uint8_t *start;
	const uint8_t *src;
	size_t pages;
	uint8_t *hot;
};

/*
 * A span: the same for restore_scan, which needs no per-page state.  The
 * whole pool and the whole check's stack are spans (the scan skips what
 * nobody touched); pages below COLD (the stack below its top
 * W_STACK_TRACKED) are always dropped.
 */
struct span {
	uintptr_t start, end, cold;
	const uint8_t *src;
};

/* The worker's own state: a private mapping outside the snapshot. */
struct w_ctl {
	struct runner rc;              /* a copy: the runner's struct is on the snapshotted stack */
	struct w_shared *sh;
	int cmd, done, null_fd, res_fd, err_fd, stat_fd, task_fd, fd_lo, fd_hi;   /* its fds: fd_lo..fd_hi */
	struct region reg[W_MAX_REGIONS];
	int nreg;
	struct track trk[W_MAX_REGIONS + 2];   /* 0: the pool's data part, 1: the stack's top, regions */
	int ntrk, pagemap_fd;
	int scan;                      /* PAGEMAP_SCAN works: restore_scan, not restore_track */
	struct span span[W_MAX_REGIONS + 2];   /* the tracks as spans, by address */
	uint8_t join[W_MAX_REGIONS + 2];       /* nothing is mapped between span i - 1 and span i */
	int nspan, pool_span;
	size_t nhot;
	uint64_t gen;
	const uint8_t *pool_view;
	uint64_t pm[W_PM_CHUNK];
	struct page_region rgn[W_SCAN_REGIONS];
	uintptr_t brk0;
	unsigned long vsize0;
	uint8_t *cstack, *wstack;
	size_t cstack_size;
	ucontext_t wctx, cctx;
	timer_t cpu_timer;             /* SIGXCPU after the check's own CPU limit */
	double cpu_last;               /* the worker's CPU seconds when the last state ended */
	FILE *out;
	char outbuf[W_OUT_BUF];        /* its buffer (with out_write) */
	char stat[1024];
	char maps[W_MAPS_BYTES];
	int env_saved;                 /* the fields below hold the worker's own settings */
	struct rlimit lim0[W_NLIMITS];
	mode_t umask0;
	dev_t cwd_dev;
	ino_t cwd_ino;
};

/* The runner's handle on its worker. */
struct ccr_worker {
	pid_t pid;
	int pidfd, cmd, done;
	struct w_shared *sh;
};

/* cpu_now -- this process's CPU seconds (internal) */
static inline double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* now_ms -- monotonic milliseconds (internal) */
static inline int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* worker_snapshot.c: put the worker back as it was */
int ccr_w_read_stat(struct w_ctl *c, long *threads, unsigned long *vsize);
int ccr_w_snapshot(struct w_ctl *c, size_t page);
int ccr_w_scan_works(struct w_ctl *c, size_t page);
void ccr_w_pool_rebase(struct w_ctl *c, size_t page);
void ccr_w_save_env(struct w_ctl *c);
int ccr_w_mark_joins(struct w_ctl *c);
int ccr_w_restore(struct w_ctl *c);
int ccr_w_settle(struct w_ctl *c);

/* worker_loop.c: the worker process (never returns) */
void ccr_w_main(struct runner *r, struct w_shared *sh, int cmd, int done) __attribute__((noreturn));

#endif /* CC_RUNNER_WORKER_H */
