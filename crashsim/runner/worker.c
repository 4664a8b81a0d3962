/*
 * worker.c -- the checker runner's reused check process (STATE requests)
 *
 * Why
 *   A fork per state costs more than the check: on the 2-core VM a fork,
 *   exit and reap of even a tiny static process takes about 170 us of CPU,
 *   ten times a small tree's recovery and dump.  So eager states are checked
 *   one after another by one long-lived child, the worker, which puts itself
 *   back exactly as it was before every check.  LAZY requests with lazy
 *   lines, and states too big for the hand-over area, still fork (child.c);
 *   a LAZY request without them is one state whose reads are logged.
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
 *   address-space size (a mapping left behind or removed), a heap that shrank
 *   below the snapshot, a failed restore, or one CPU-second used in all (the
 *   CPU limit is per process, see below).
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
 * Settled (settle) every W_SETTLE_EVERY states, at a batch's end and before
 * the worker retires, not after every check (two dozen system calls, a
 * tenth of a small check's cost): the signal mask, the fatal-signal
 * handlers, the alternate stack and SIGPIPE are put back and interval
 * timers disarmed, each call reporting what it replaced, and the resource
 * limits, umask and working directory are compared (changed: the worker
 * retires; a check that lowered a limit or moved elsewhere would otherwise
 * fail later checks).  Checks never change them in practice, but one
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
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "runner_internal.h"

#define W_REQ_BYTES ((size_t)1 << 20)        /* followups + writes of a batch handed over */
#define W_OUT_SOFT (CCR_OUT_MAP / 2)          /* no new state of a batch starts past this much result */
#define W_SETTLE_EVERY 32                    /* states between two settles of the process (settle) */
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

/* One state of a batch: its followup (NUL included) at data + off, its writes after it. */
struct w_item {
	uint64_t off, wlen;
	uint32_t flen, reads;   /* reads: log the check's reads (lazy.c) */
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
	char stat[1024];
	char maps[W_MAPS_BYTES];
	int env_saved;                 /* the fields below hold the worker's own settings */
	struct rlimit lim0[W_NLIMITS];
	mode_t umask0;
	dev_t cwd_dev;
	ino_t cwd_ino;
};

/* Limits a check could change for the checks after it. */
static const int w_limits[] = { RLIMIT_AS, RLIMIT_CPU, RLIMIT_DATA, RLIMIT_FSIZE, RLIMIT_NOFILE,
				RLIMIT_NPROC, RLIMIT_STACK, RLIMIT_CORE, RLIMIT_MEMLOCK };

/* The runner's handle on its worker. */
struct ccr_worker {
	pid_t pid;
	int pidfd, cmd, done;
	struct w_shared *sh;
};

static struct w_ctl *ctl;   /* set once in the worker; read only at a check's start */

/* cpu_now -- this process's CPU seconds (internal) */
static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* now_ms -- monotonic milliseconds (internal) */
static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * read_stat -- threads and address-space size (bytes); -1 if unreadable.
 * The thread count is the link count of /proc/self/task less 2 (one fstat),
 * the size the first field of /proc/self/statm (pages): both far cheaper
 * than /proc/self/stat, which is formatted field by field (internal)
 */
static int read_stat(struct w_ctl *c, long *threads, unsigned long *vsize)
{
	struct stat st;
	if (fstat(c->task_fd, &st) < 0)
		return -1;
	*threads = (long)st.st_nlink - 2;
	ssize_t n = pread(c->stat_fd, c->stat, sizeof(c->stat) - 1, 0);
	if (n <= 0)
		return -1;
	c->stat[n] = '\0';
	*vsize = strtoul(c->stat, NULL, 10) * (unsigned long)sysconf(_SC_PAGESIZE);
	return 0;
}

/* overlaps -- [A, B) meets [C, C + N) (internal) */
static int overlaps(uintptr_t a, uintptr_t b, const void *c, size_t n)
{
	return a < (uintptr_t)c + n && (uintptr_t)c < b;
}

/* is_zero_page -- non-zero if the page at P holds only zeros (internal) */
static int is_zero_page(const uint8_t *p, size_t page)
{
	const uint64_t *w = (const uint64_t *)p;
	for (size_t i = 0; i < page / 8; i++)
		if (w[i])
			return 0;
	return 1;
}

/* read_maps -- /proc/self/maps into c->maps, NUL-terminated; -1 if it cannot be read or does
 * not fit (internal) */
static int read_maps(struct w_ctl *c)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t len = 0;
	ssize_t k;
	while ((k = read(fd, c->maps + len, sizeof(c->maps) - 1 - len)) > 0)
		len += (size_t)k;
	close(fd);
	if (k < 0 || len >= sizeof(c->maps) - 1)
		return -1;
	c->maps[len] = '\0';
	return 0;
}

/*
 * snapshot -- replace every private writable mapping outside the worker's
 * own by a private mapping of a memfd holding its current contents, so that
 * MADV_DONTNEED brings those contents back; -1 on failure (internal)
 */
static int snapshot(struct w_ctl *c, size_t page)
{
	if (read_maps(c))
		return -1;
	c->nreg = 0;
	for (char *line = c->maps; *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		unsigned long a, b;
		char perms[8];
		int name = 0;
		if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &a, &b, perms, &name) < 3)
			return -1;
		const char *path = name ? line + name : "";
		int skip = perms[1] != 'w' || perms[3] != 'p' || (path[0] == '[' && strcmp(path, "[heap]") &&
			   strcmp(path, "[stack]"));
		skip = skip || overlaps(a, b, c->rc.pool, c->rc.map_size) || overlaps(a, b, c, sizeof(*c)) ||
		       overlaps(a, b, c->wstack, W_STACK_BYTES) ||
		       overlaps(a, b, c->cstack - page, c->cstack_size + page);
		if (!skip) {
			if (c->nreg == W_MAX_REGIONS || perms[0] != 'r')
				return -1;
			c->reg[c->nreg++] = (struct region){ a, b };
		}
		line = nl ? nl + 1 : line + strlen(line);
	}
	for (int i = 0; i < c->nreg; i++) {
		uint8_t *start = (uint8_t *)c->reg[i].start;
		size_t n = c->reg[i].end - c->reg[i].start;
		int m = memfd_create("cc-snapshot", MFD_CLOEXEC);
		if (m < 0 || ftruncate(m, (off_t)n) < 0)
			return -1;
		/* zero pages stay holes: they read as zeros from the memfd too */
		for (size_t off = 0; off < n; off += page)
			if (!is_zero_page(start + off, page) && pwrite(m, start + off, page, (off_t)off) != (ssize_t)page)
				return -1;
		void *p = mmap(start, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, m, 0);
		if (p != start)
			_exit(125);   /* half replaced: this process is no longer sound */
		void *view = mmap(NULL, n, PROT_READ, MAP_SHARED, m, 0);
		close(m);
		if (view == MAP_FAILED)
			return -1;
		c->trk[2 + i] = (struct track){ start, view, n / page, NULL };
	}
	size_t pool_pages = c->rc.map_size / page, stack_pages = W_STACK_TRACKED / page;
	c->trk[0] = (struct track){ c->rc.pool, c->pool_view, 0, NULL };
	c->trk[1] = (struct track){ c->cstack + c->cstack_size - W_STACK_TRACKED, NULL, stack_pages, NULL };
	c->ntrk = 2 + c->nreg;
	size_t total = pool_pages;
	for (int i = 1; i < c->ntrk; i++)
		total += c->trk[i].pages;
	uint8_t *hot = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (hot == MAP_FAILED)
		return -1;
	c->trk[0].hot = hot;
	hot += pool_pages;
	for (int i = 1; i < c->ntrk; i++) {
		c->trk[i].hot = hot;
		hot += c->trk[i].pages;
	}
	/* the spans: the regions (in address order, as /proc/self/maps lists them), the pool and the stack */
	uintptr_t pool = (uintptr_t)c->rc.pool, stack = (uintptr_t)c->cstack;
	struct span extra[2] = {
		{ pool, pool + c->rc.map_size, pool, c->pool_view },
		{ stack, stack + c->cstack_size, stack + c->cstack_size - W_STACK_TRACKED, NULL },
	};
	if (extra[1].start < extra[0].start) {
		struct span t = extra[0];
		extra[0] = extra[1];
		extra[1] = t;
	}
	int e = 0;
	c->nspan = 0;
	for (int i = 0; i <= c->nreg; i++) {
		uintptr_t next = i < c->nreg ? c->reg[i].start : UINTPTR_MAX;
		for (; e < 2 && extra[e].start < next; e++) {
			if (extra[e].src == c->pool_view)
				c->pool_span = c->nspan;
			c->span[c->nspan++] = extra[e];
		}
		if (i < c->nreg)
			c->span[c->nspan++] = (struct span){ c->reg[i].start, c->reg[i].end, c->reg[i].start,
							     c->trk[2 + i].src };
	}
	return 0;
}

/* drop -- MADV_DONTNEED on [P, P + N): back to the file (or zeros) (internal) */
static int drop(void *p, size_t n)
{
	return n && madvise(p, n, MADV_DONTNEED) != 0;
}

/* restore_track -- copy back or drop every page of T the check wrote (internal) */
static int restore_track(struct w_ctl *c, struct track *t, size_t page)
{
	int bad = 0;
	uintptr_t first = (uintptr_t)t->start / page;
	for (size_t i = 0; i < t->pages; i += W_PM_CHUNK) {
		size_t n = t->pages - i < W_PM_CHUNK ? t->pages - i : W_PM_CHUNK;
		if (pread(c->pagemap_fd, c->pm, n * 8, (off_t)((first + i) * 8)) != (ssize_t)(n * 8))
			return 1;
		for (size_t k = 0; k < n; k++) {
			uint64_t e = c->pm[k];
			size_t j = i + k;
			uint8_t *p = t->start + j * page;
			int swapped = (int)(e >> 62 & 1), copy = (e >> 63 & 1) && !(e >> 61 & 1);
			if (!swapped && !copy) {   /* untouched, or only read: still the snapshot */
				if (t->hot[j]) {
					t->hot[j] = 0;
					c->nhot--;
				}
				continue;
			}
			if (!swapped && (t->hot[j] || c->nhot < W_HOT_MAX)) {
				if (t->src)
					memcpy(p, t->src + j * page, page);
				else
					memset(p, 0, page);
				if (!t->hot[j]) {
					t->hot[j] = 1;
					c->nhot++;
				}
			} else {
				bad |= drop(p, page);
				if (t->hot[j]) {
					t->hot[j] = 0;
					c->nhot--;
				}
			}
		}
	}
	return bad;
}

/*
 * put_back -- pages [S, E) of span SP were written by the check: copy them
 * back from the span's source (zeros without one) while *KEPT < W_HOT_MAX,
 * else drop them; the span's pages below its cold mark, and SWAPPED ones,
 * are always dropped (internal)
 */
static int put_back(const struct span *sp, uintptr_t s, uintptr_t e, int swapped, size_t page, size_t *kept)
{
	int bad = 0;
	if (swapped || s < sp->cold) {
		uintptr_t m = swapped || e < sp->cold ? e : sp->cold;
		bad |= drop((void *)s, m - s);
		s = m;
	}
	size_t room = (W_HOT_MAX - *kept) * page, n = e - s < room ? e - s : room;
	if (sp->src)
		memcpy((void *)s, sp->src + (s - sp->start), n);
	else
		memset((void *)s, 0, n);
	*kept += n / page;
	return bad | drop((void *)(s + n), e - s - n);
}

/*
 * restore_scan -- what restore_track does, for the N spans SP (sorted by
 * address, not overlapping), with PAGEMAP_SCAN (Linux 6.7): one call walks
 * the page tables from the first span to the last and returns only the
 * ranges of pages that are private copies (present and not the file's, or
 * swapped out): the pages the check wrote (anything between spans is
 * skipped; the caller passes adjacent spans).  Reading /proc/self/pagemap
 * instead copies out 8 bytes per tracked page, written or not.  The walk
 * costs a few nanoseconds per page-table entry (of the populated tables in
 * the range; more for a present page), a call about a microsecond.  A kept
 * page stays a private copy, so it is copied again after every check, as in
 * restore_track.  Returns non-zero on failure (internal)
 */
static int restore_scan(struct w_ctl *c, const struct span *sp, int n, size_t page, size_t *kept)
{
	struct pm_scan_arg a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.start = sp[0].start;
	a.end = sp[n - 1].end;
	a.vec = (uintptr_t)c->rgn;
	a.vec_len = W_SCAN_REGIONS;
	/* not a page of the file, and present or swapped */
	a.category_inverted = PAGE_IS_FILE;
	a.category_mask = PAGE_IS_FILE;
	a.category_anyof_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED;
	a.return_mask = PAGE_IS_SWAPPED;
	int bad = 0, j = 0;
	for (;;) {
		int got = ioctl(c->pagemap_fd, PAGEMAP_SCAN, &a);
		if (got < 0)
			return 1;
		for (int i = 0; i < got; i++) {
			uintptr_t s = (uintptr_t)c->rgn[i].start, e = (uintptr_t)c->rgn[i].end;
			int swapped = (c->rgn[i].categories & PAGE_IS_SWAPPED) != 0;
			/* ranges come in address order; one may cover adjacent spans */
			while (j < n && sp[j].end <= s)
				j++;
			for (int k = j; k < n && sp[k].start < e; k++) {
				uintptr_t ps = s > sp[k].start ? s : sp[k].start, pe = e < sp[k].end ? e : sp[k].end;
				bad |= put_back(&sp[k], ps, pe, swapped, page, kept);
			}
		}
		if (got < W_SCAN_REGIONS || a.walk_end >= a.end || a.walk_end <= a.start)
			break;
		a.start = a.walk_end;
	}
	return bad;
}

/*
 * restore_small -- restore the N adjacent spans SP, a few pages in all (a
 * library's globals), without a system call: every page that differs from
 * its source is copied back.  Comparing a few pages costs less than a scan;
 * a page the check did not write stays the file's (internal)
 */
static void restore_small(const struct span *sp, int n, size_t page)
{
	for (int k = 0; k < n; k++)
		for (uintptr_t p = sp[k].start; p < sp[k].end; p += page) {
			const uint8_t *src = sp[k].src ? sp[k].src + (p - sp[k].start) : NULL;
			if (src && memcmp((void *)p, src, page))
				memcpy((void *)p, src, page);
			else if (!src && !is_zero_page((const uint8_t *)p, page))
				memset((void *)p, 0, page);
		}
}

/* scan_works -- PAGEMAP_SCAN answers on this kernel, and CRASHCHECK_RUNNER_PAGEMAP_SCAN is not 0 (internal) */
static int scan_works(struct w_ctl *c, size_t page)
{
	const char *env = getenv("CRASHCHECK_RUNNER_PAGEMAP_SCAN");
	if (env && !strcmp(env, "0"))
		return 0;
	struct pm_scan_arg a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.start = (uintptr_t)c & ~(uintptr_t)(page - 1);   /* the worker's own page: only looked at */
	a.end = a.start + page;
	a.vec = (uintptr_t)c->rgn;
	a.vec_len = W_SCAN_REGIONS;
	a.category_anyof_mask = PAGE_IS_PRESENT;
	a.return_mask = PAGE_IS_PRESENT;
	return ioctl(c->pagemap_fd, PAGEMAP_SCAN, &a) >= 0;
}

/* pool_rebase -- the base changed: drop the pool's kept pages, track its new data part (internal) */
static void pool_rebase(struct w_ctl *c, size_t page)
{
	if (c->scan) {   /* kept pages hold the old base: copy the new one into them */
		size_t kept = 0;
		restore_scan(c, &c->span[c->pool_span], 1, page, &kept);
		c->gen = c->sh->base_gen;
		return;
	}
	struct track *t = &c->trk[0];
	size_t pages = c->rc.map_size / page;
	for (size_t j = 0; j < pages; j++)
		if (t->hot[j]) {
			drop(t->start + j * page, page);
			t->hot[j] = 0;
			c->nhot--;
		}
	size_t hi = (size_t)((c->sh->pool_hi + page - 1) / page);
	t->pages = hi < pages ? hi : pages;
	c->gen = c->sh->base_gen;
}

/* save_env -- the settings env_changed compares with (internal) */
static void save_env(struct w_ctl *c)
{
	struct stat st;
	for (int i = 0; i < W_NLIMITS; i++)
		if (getrlimit(w_limits[i], &c->lim0[i]) < 0)
			_exit(125);
	c->umask0 = umask(0);
	umask(c->umask0);
	if (stat(".", &st) < 0)
		_exit(125);
	c->cwd_dev = st.st_dev;
	c->cwd_ino = st.st_ino;
	c->env_saved = 1;
}

/* env_changed -- did the check change a limit, umask or the directory (internal) */
static int env_changed(struct w_ctl *c)
{
	if (!c->env_saved)
		return 0;
	int bad = 0;
	struct rlimit r;
	for (int i = 0; i < W_NLIMITS; i++)
		bad |= getrlimit(w_limits[i], &r) < 0 || r.rlim_cur != c->lim0[i].rlim_cur ||
		       r.rlim_max != c->lim0[i].rlim_max;
	bad |= umask(c->umask0) != c->umask0;
	struct stat st;
	bad |= stat(".", &st) < 0 || st.st_dev != c->cwd_dev || st.st_ino != c->cwd_ino;
	return bad;
}

/*
 * mark_joins -- note which spans have nothing mapped between them and the
 * span before: one PAGEMAP_SCAN call restores a run of them, as cheaply
 * as adjacent ones (an unmapped gap costs the walk next to nothing; a
 * mapping in it, such as the snapshot's views, costs a look at each of its
 * pages).  Made after the last mapping the worker adds; one a check leaves
 * behind retires the worker (the address-space size changes).  Returns -1
 * if the maps cannot be read (internal)
 */
static int mark_joins(struct w_ctl *c)
{
	if (read_maps(c))
		return -1;
	for (int j = 1; j < c->nspan; j++)
		c->join[j] = 1;
	for (char *line = c->maps; *line;) {
		unsigned long a, b;
		if (sscanf(line, "%lx-%lx", &a, &b) != 2)
			return -1;
		for (int j = 1; j < c->nspan; j++)
			if (a < c->span[j].start && b > c->span[j - 1].end)
				c->join[j] = 0;
		char *nl = strchr(line, '\n');
		line = nl ? nl + 1 : line + strlen(line);
	}
	return 0;
}

/*
 * restore -- after a clean check: drop what it wrote and put the process
 * back; -1 when something could not be put back and the worker must retire
 * (internal)
 */
static int restore(struct w_ctl *c)
{
	int bad = 0;
	uintptr_t b = (uintptr_t)syscall(SYS_brk, 0);
	if (b != c->brk0) {
		/* a heap that grew is cut back (malloc's state, restored below, ends
		 * at the old break); one that shrank lost snapshot pages */
		bad |= b < c->brk0;
		syscall(SYS_brk, c->brk0);
		bad |= (uintptr_t)syscall(SYS_brk, 0) != c->brk0;
	}
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	if (c->scan) {
		size_t kept = 0;
		/* One scan per run of spans with nothing mapped between them (a
		 * call costs about a microsecond; walking other mappings between
		 * spans, such as the snapshot's views, cost more than the calls it
		 * saved); a small run is compared with its source page by page
		 * instead. */
		for (int i = 0, j; i < c->nspan; i = j) {
			size_t pages = (c->span[i].end - c->span[i].start) / page;
			for (j = i + 1; j < c->nspan && c->join[j]; j++)
				pages += (c->span[j].end - c->span[j].start) / page;
			if (pages <= W_SCAN_SMALL)
				restore_small(&c->span[i], j - i, page);
			else
				bad |= restore_scan(c, &c->span[i], j - i, page, &kept);
		}
	} else {
		for (int i = 0; i < c->ntrk; i++)
			bad |= restore_track(c, &c->trk[i], page);
		/* beyond the base's data, and below the stack's top: whatever the check wrote goes */
		size_t data = c->trk[0].pages * page;
		bad |= drop(c->rc.pool + data, c->rc.map_size - data);
		bad |= drop(c->cstack, c->cstack_size - W_STACK_TRACKED);
	}

	dup2(c->null_fd, 0);
	dup2(c->err_fd, 1);
	dup2(c->err_fd, 2);
	syscall(SYS_close_range, 3, c->fd_lo - 1, 0);
	syscall(SYS_close_range, c->fd_hi + 1, ~0U, 0);

	/* reap the check's children that ended; one still running is stray */
	for (;;) {
		siginfo_t si;
		si.si_pid = 0;
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG) < 0)
			break;   /* ECHILD: none left */
		if (si.si_pid == 0) {
			c->sh->stray = 1;
			bad = 1;
			break;
		}
	}
	long threads = 0;
	unsigned long vsize = 0;
	if (read_stat(c, &threads, &vsize) < 0 || threads != 1 || vsize != c->vsize0)
		bad = 1;
	return bad ? -1 : 0;
}

/*
 * settle -- the rest of the process after checks, less often than restore
 * (see "Settled" in the header): the signal mask, the fatal-signal
 * handlers, the alternate stack and SIGPIPE put back, interval timers
 * disarmed, each reporting whether it had been changed, and the limits,
 * umask and directory compared.  Returns 0 when nothing had changed, 1
 * when something had (and is put back), -1 when a limit, the umask or the
 * directory had (the worker must retire) (internal)
 */
static int settle(struct w_ctl *c)
{
	sigset_t none, old;
	sigemptyset(&none);
	sigemptyset(&old);
	int changed = sigprocmask(SIG_SETMASK, &none, &old) != 0 || !ccr_same_sigset(&old, &none);
	changed |= ccr_child_rearm(&c->rc);
	static const int timers[] = { ITIMER_REAL, ITIMER_VIRTUAL, ITIMER_PROF };
	for (int i = 0; i < 3; i++) {
		struct itimerval off, was;
		memset(&off, 0, sizeof(off));
		memset(&was, 0, sizeof(was));
		changed |= setitimer(timers[i], &off, &was) != 0 || memcmp(&was, &off, sizeof(was)) != 0;
	}
	return env_changed(c) ? -1 : changed;
}

/*
 * out_write -- the check's result stream: into the shared head of the result
 * file (no system call; the runner reads it there), past CCR_OUT_MAP into
 * the file itself, where RLIMIT_FSIZE stops a check that writes without end,
 * as it stops a forked one.  The count is in the shared page, so what was
 * flushed before a crash is answered, as with a file (internal)
 */
static ssize_t out_write(void *cookie, const char *buf, size_t n)
{
	struct w_ctl *c = cookie;
	uint64_t off = c->sh->out_len;
	size_t put = 0;
	if (off < CCR_OUT_MAP) {
		put = n < CCR_OUT_MAP - off ? n : CCR_OUT_MAP - off;
		memcpy(c->rc.out_map + off, buf, put);
	}
	while (put < n) {
		ssize_t k = pwrite(c->res_fd, buf + put, n - put, (off_t)(off + put));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		put += (size_t)k;
	}
	c->sh->out_len = off + put;
	return (ssize_t)put;
}

/* check_entry -- runs on the check's stack: CHECK, then back to the loop (internal) */
static void check_entry(void)
{
	struct w_ctl *c = ctl;   /* read before the check can scribble on globals */
	struct w_shared *sh = c->sh;
	int rc = c->rc.check(c->rc.ctx, (const char *)sh->data + sh->item[sh->cur].off, c->out);
	if (fflush(c->out) != 0)
		rc = rc ? rc : 124;
	fflush(stdout);
	fflush(stderr);
	if (rc != 0) {
		ccr_child_probe_oom();
		_exit((rc & 0xff) ? (rc & 0xff) : 1);
	}
	sh->phase = PH_CHECKED;
}

/*
 * check_one -- check state I of the posted batch and put the worker back
 * after it; non-zero when the worker must retire (internal)
 */
static int check_one(struct w_ctl *c, int i)
{
	struct w_shared *sh = c->sh;
	const struct w_item *it = &sh->item[i];
	sh->stray = 0;
	sh->retire = 0;
	ccr_child_reset();
	sh->started_ms = now_ms();
	/* the previous state's end, as good as a clock read now: the worker
	 * used next to no CPU since (a system call less per state) */
	sh->cpu_start = c->cpu_last;
	sh->phase = PH_RUNNING;
	/* last: a worker that dies before this did not start state I (and the
	 * runner's deadline for it must read its started_ms) */
	__atomic_store_n(&sh->cur, i, __ATOMIC_RELEASE);
	ccr_apply_writes(c->rc.pool, sh->data + it->off + it->flen, it->wlen);
	if (it->reads)   /* undone by the restore, as the runtime's globals are */
		ccr_lazy_reads_on();
	if (c->rc.out_map) {
		cookie_io_functions_t io = { .write = out_write };
		c->out = fopencookie(c, "w", io);
	} else {
		c->out = fdopen(c->res_fd, "w");
	}
	if (c->out == NULL)
		_exit(125);
	struct itimerspec limit;
	memset(&limit, 0, sizeof(limit));
	limit.it_value.tv_sec = c->rc.lim.cpu_seconds;
	if (c->rc.lim.cpu_seconds && timer_settime(c->cpu_timer, 0, &limit, NULL) < 0)
		_exit(125);
	getcontext(&c->cctx);
	c->cctx.uc_stack.ss_sp = c->cstack;
	c->cctx.uc_stack.ss_size = c->cstack_size;
	c->cctx.uc_link = &c->wctx;
	makecontext(&c->cctx, check_entry, 0);
	swapcontext(&c->wctx, &c->cctx);
	int bad = restore(c);
	/* where this state's output ends: the next one's starts there */
	off_t err_end = lseek(c->err_fd, 0, SEEK_CUR);
	sh->slot[i] = (struct w_slot){ sh->out_len, err_end < 0 ? 0 : (uint64_t)err_end, sh->stray };
	double now = c->cpu_last = cpu_now();
	sh->retire = bad < 0 || err_end < 0 || now > W_CPU_SLACK;
	int keep = i + 1, last = i == sh->n - 1 || sh->out_len >= W_OUT_SOFT;
	if (sh->retire || last || sh->settle_each || i - sh->settled >= W_SETTLE_EVERY) {
		int changed = settle(c);
		sh->retire |= changed < 0;
		if (changed && i > sh->settled + 1) {
			/* a state after the first since the last settle may have run
			 * in a changed process: keep the states up to that first one,
			 * the runner checks the rest again */
			keep = sh->settled + 2;
			sh->unsure = 1;
		}
		sh->settled = i;
	}
	/* The CPU timer stays armed (a system call less per state): the
	 * next check arms it anew, and in between the worker uses next to
	 * no CPU.  Unless this check used half its allowance: what is left
	 * could then run out before the next check arms it, and that check
	 * would be killed for it.  (If it runs out while the worker restores
	 * itself, the worker dies after a clean check, which answers as
	 * clean: see PH_CHECKED.) */
	if (!sh->retire && c->rc.lim.cpu_seconds && now - sh->cpu_start > c->rc.lim.cpu_seconds / 2.0) {
		struct itimerspec disarm;
		memset(&disarm, 0, sizeof(disarm));
		timer_settime(c->cpu_timer, 0, &disarm, NULL);
	}
	sh->phase = PH_RESTORED;
	__atomic_store_n(&sh->ndone, keep, __ATOMIC_RELEASE);
	return sh->retire || sh->unsure;
}

/*
 * warm_locks -- use every kind of pthread lock once, before the snapshot.
 * A program may interpose these calls and look the real ones up on first
 * use (crashcheck's runtime does, with dlsym, into globals): after the
 * snapshot, every check would find those globals empty again and look
 * them up again, a few microseconds of dlsym per check (internal)
 */
static void warm_locks(void)
{
	pthread_mutex_t m;
	pthread_rwlock_t rw;
	pthread_spinlock_t sp;
	pthread_barrier_t b;
	if (pthread_mutex_init(&m, NULL) == 0) {
		pthread_mutex_lock(&m);
		pthread_mutex_unlock(&m);
		if (pthread_mutex_trylock(&m) == 0)
			pthread_mutex_unlock(&m);
		pthread_mutex_destroy(&m);
	}
	if (pthread_rwlock_init(&rw, NULL) == 0) {
		pthread_rwlock_rdlock(&rw);
		pthread_rwlock_unlock(&rw);
		pthread_rwlock_wrlock(&rw);
		pthread_rwlock_unlock(&rw);
		if (pthread_rwlock_tryrdlock(&rw) == 0)
			pthread_rwlock_unlock(&rw);
		if (pthread_rwlock_trywrlock(&rw) == 0)
			pthread_rwlock_unlock(&rw);
		pthread_rwlock_destroy(&rw);
	}
	if (pthread_spin_init(&sp, PTHREAD_PROCESS_PRIVATE) == 0) {
		pthread_spin_lock(&sp);
		pthread_spin_unlock(&sp);
		pthread_spin_destroy(&sp);
	}
	if (pthread_barrier_init(&b, NULL, 1) == 0) {
		pthread_barrier_wait(&b);   /* one party: returns at once */
		pthread_barrier_destroy(&b);
	}
}

/* worker_loop -- on the worker's own stack: snapshot, then check state after state (internal) */
static void worker_loop(void)
{
	struct w_ctl *c = ctl;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	long threads;
	/* Every call the loop makes is made once before the snapshot, so lazy
	 * symbol binding does not write the snapshotted GOT after every check. */
	if (read_stat(c, &threads, &c->vsize0) < 0)
		_exit(125);
	/* The CPU limit is per check: a CPU-time timer armed when each check
	 * starts sends SIGXCPU after the limit, as RLIMIT_CPU does to a forked
	 * check; RLIMIT_CPU (per process) stays as the backstop, with room for the
	 * CPU-second a worker may use in all before it retires. */
	struct sigevent ev;
	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_SIGNAL;
	ev.sigev_signo = SIGXCPU;
	if (c->rc.lim.cpu_seconds && timer_create(CLOCK_PROCESS_CPUTIME_ID, &ev, &c->cpu_timer) < 0)
		_exit(125);
	/* limits before the snapshot (the OOM probe's atexit entry must be in it),
	 * with room for the views the snapshot adds; RLIMIT_AS is lowered to the
	 * check's allowance once they exist */
	ccr_child_limits(&c->rc, (size_t)c->vsize0 + (size_t)(64 << 20), W_CPU_SLACK + 1);
	c->brk0 = (uintptr_t)syscall(SYS_brk, 0);
	c->ntrk = 0;
	c->scan = scan_works(c, page);
	warm_locks();
	restore(c);
	settle(c);   /* also clears the signal mask the runner serves with (SIGCHLD blocked) */
	c->cpu_last = cpu_now();
	(void)lseek(c->err_fd, 0, SEEK_CUR);
	if (snapshot(c, page) < 0 || mark_joins(c) < 0 || read_stat(c, &threads, &c->vsize0) < 0 || threads != 1)
		_exit(125);
	if (c->rc.lim.mem_bytes) {
		struct rlimit as = { c->vsize0 + c->rc.lim.mem_bytes, c->vsize0 + c->rc.lim.mem_bytes };
		if (setrlimit(RLIMIT_AS, &as) < 0)
			_exit(125);
	}
	c->brk0 = (uintptr_t)syscall(SYS_brk, 0);
	save_env(c);
	c->cpu_last = cpu_now();   /* the first check's start: after the snapshot's work */
	if (write(c->done, "r", 1) != 1)
		_exit(125);
	for (;;) {
		char b;
		ssize_t k = read(c->cmd, &b, 1);
		if (k == 0)
			_exit(0);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			_exit(125);
		}
		struct w_shared *sh = c->sh;
		if (sh->base_gen != c->gen)
			pool_rebase(c, page);
		int stop = 0;
		/* A batch stops early (the runner posts the rest again) once its
		 * results fill half the shared head of the result file, or when
		 * states have to be checked again (unsure). */
		for (int i = 0; i < sh->n && !stop && (i == 0 || sh->out_len < W_OUT_SOFT); i++)
			stop = check_one(c, i);
		if (write(c->done, "d", 1) != 1 || sh->retire)
			_exit(0);
	}
}

/* high_fd -- FD moved to LO or above (close-on-exec), the old one closed; -1 on failure (internal) */
static int high_fd(int fd, int lo)
{
	int h = fcntl(fd, F_DUPFD_CLOEXEC, lo);
	if (h >= 0 && fd > 2)
		close(fd);
	return h;
}

/* worker_main -- the worker process: set up like a check's child, then loop (internal) */
static void worker_main(struct runner *r, struct w_shared *sh, int cmd, int done)
{
	setpgid(0, 0);   /* its own group: the runner kills whatever its checks forked */
	pid_t parent = getppid();
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(126);
	prctl(PR_SET_CHILD_SUBREAPER, 1);   /* a check's orphans stay visible to restore() */
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct w_ctl *c = mmap(NULL, sizeof(*c), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *wstack = mmap(NULL, W_STACK_BYTES, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	struct rlimit st;
	size_t cs = (size_t)8 << 20;
	if (getrlimit(RLIMIT_STACK, &st) == 0 && st.rlim_cur != RLIM_INFINITY && st.rlim_cur >= ((rlim_t)1 << 20))
		cs = st.rlim_cur < ((rlim_t)64 << 20) ? (size_t)st.rlim_cur : (size_t)64 << 20;
	/* the check's stack, with a guard page below: overflow is a SIGSEGV.
	 * Right below the pool if that is free: with nothing mapped between
	 * them, one PAGEMAP_SCAN call restores both (see mark_joins). */
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
	uint8_t *guard = mmap(r->pool - (cs + page), cs + page, PROT_NONE, flags | MAP_FIXED_NOREPLACE, -1, 0);
	if (guard == MAP_FAILED)
		guard = mmap(NULL, cs + page, PROT_NONE, flags, -1, 0);
	if (c == MAP_FAILED || wstack == MAP_FAILED || guard == MAP_FAILED ||
	    mprotect(guard + page, cs, PROT_READ | PROT_WRITE) < 0)
		_exit(125);
	c->rc = *r;
	c->sh = sh;
	c->cstack = guard + page;
	c->wstack = wstack;
	c->cstack_size = cs;
	struct rlimit nf;
	if (getrlimit(RLIMIT_NOFILE, &nf) < 0 || nf.rlim_cur < 64)
		_exit(125);
	/* low enough that closing what a check left open (two close_range calls
	 * around them, after every check) walks a short fd table */
	c->fd_lo = 32;
	int stat_fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	int task_fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (task_fd < 0)
		_exit(125);
	c->task_fd = high_fd(task_fd, c->fd_lo);
	int pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	c->pool_view = mmap(NULL, r->map_size, PROT_READ, MAP_SHARED, r->pool_fd, 0);
	if (c->pool_view == MAP_FAILED || pagemap_fd < 0)
		_exit(125);
	c->pagemap_fd = high_fd(pagemap_fd, c->fd_lo);
	c->gen = ~(uint64_t)0;
	c->cmd = high_fd(cmd, c->fd_lo);
	c->done = high_fd(done, c->fd_lo);
	c->null_fd = high_fd(dup(r->null_fd), c->fd_lo);
	c->res_fd = high_fd(dup(r->res_fd), c->fd_lo);
	c->err_fd = high_fd(dup(r->err_fd), c->fd_lo);
	c->stat_fd = stat_fd < 0 ? -1 : high_fd(stat_fd, c->fd_lo);
	if (c->cmd < 0 || c->done < 0 || c->null_fd < 0 || c->res_fd < 0 || c->err_fd < 0 || c->stat_fd < 0 ||
	    c->pagemap_fd < 0 || c->task_fd < 0)
		_exit(125);
	c->fd_hi = c->cmd;
	int own[] = { c->done, c->null_fd, c->res_fd, c->err_fd, c->stat_fd, c->pagemap_fd, c->task_fd };
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		c->fd_hi = own[i] > c->fd_hi ? own[i] : c->fd_hi;
	/* fds 0-2 as for a forked check; the protocol fds and the rest are closed */
	dup2(c->null_fd, 0);
	dup2(c->err_fd, 1);
	dup2(c->err_fd, 2);
	if (syscall(SYS_close_range, 3, c->fd_lo - 1, 0) < 0 || syscall(SYS_close_range, c->fd_hi + 1, ~0U, 0) < 0)
		_exit(125);
	ctl = c;
	if (getcontext(&c->wctx) < 0)
		_exit(125);
	c->wctx.uc_stack.ss_sp = wstack;
	c->wctx.uc_stack.ss_size = W_STACK_BYTES;
	c->wctx.uc_link = NULL;
	makecontext(&c->wctx, worker_loop, 0);
	setcontext(&c->wctx);
	_exit(125);
}

/* worker_free -- close the runner's end of a worker that has been reaped (internal) */
static void worker_free(struct runner *r)
{
	struct ccr_worker *w = r->worker;
	close(w->pidfd);
	close(w->cmd);
	close(w->done);
	munmap(w->sh, sizeof(struct w_shared) + W_REQ_BYTES);
	free(w);
	r->worker = NULL;
	r->vm_stale = 1;
}

/* reap -- wait for the worker's end (internal) */
static void reap(pid_t pid, int *status, struct rusage *ru)
{
	while (wait4(pid, status, 0, ru) < 0 && errno == EINTR)
		;
}

/* ccr_worker_stop -- end the worker and whatever its checks left, if there is one */
void ccr_worker_stop(struct runner *r)
{
	if (r->worker == NULL)
		return;
	int status;
	struct rusage ru;
	kill(-r->worker->pid, SIGKILL);
	kill(r->worker->pid, SIGKILL);
	reap(r->worker->pid, &status, &ru);
	worker_free(r);
}

/* worker_start -- fork a worker and wait until it has taken its snapshot; NULL if it cannot (internal) */
static struct ccr_worker *worker_start(struct runner *r)
{
	struct ccr_worker *w = calloc(1, sizeof(*w));
	int cmd[2] = { -1, -1 }, done[2] = { -1, -1 };
	if (w == NULL)
		return NULL;
	w->sh = mmap(NULL, sizeof(struct w_shared) + W_REQ_BYTES, PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (w->sh == MAP_FAILED || pipe2(cmd, O_CLOEXEC) < 0 || pipe2(done, O_CLOEXEC) < 0)
		goto fail;
	fflush(NULL);
	w->pid = fork();
	if (w->pid < 0)
		goto fail;
	if (w->pid == 0) {
		close(cmd[1]);
		close(done[0]);
		worker_main(r, w->sh, cmd[0], done[1]);
	}
	close(cmd[0]);
	close(done[1]);
	w->cmd = cmd[1];
	w->done = done[0];
	w->pidfd = (int)syscall(SYS_pidfd_open, w->pid, 0);
	r->worker = w;
	r->vm_stale = 1;
	char b = 0;
	struct pollfd p = { w->done, POLLIN, 0 };
	if (w->pidfd < 0 || poll(&p, 1, W_START_MS) != 1 || read(w->done, &b, 1) != 1 || b != 'r') {
		ccr_worker_stop(r);
		return NULL;
	}
	return w;
fail:
	if (w->sh != MAP_FAILED && w->sh)
		munmap(w->sh, sizeof(struct w_shared) + W_REQ_BYTES);
	for (int i = 0; i < 2; i++) {
		if (cmd[i] >= 0)
			close(cmd[i]);
		if (done[i] >= 0)
			close(done[i]);
	}
	free(w);
	return NULL;
}

/*
 * post -- copy as many of the N JOBS as fit (at least the first, which
 * must fit) into the shared area as a batch, rewind the capture files and
 * wake the worker; the number posted, or 0 if the worker is gone (internal)
 */
static int post(struct runner *r, const struct ccr_job *jobs, int n)
{
	struct ccr_worker *w = r->worker;
	struct w_shared *sh = w->sh;
	/* without the shared result head, a check writes through the file's
	 * offset, which only tells where one state's result ends */
	int most = r->out_map ? CCR_WORKER_BATCH : 1;
	size_t off = 0;
	int k = 0;
	for (; k < n && k < most && off + jobs[k].flen + 1 + jobs[k].wlen <= W_REQ_BYTES; k++) {
		sh->item[k] = (struct w_item){ off, jobs[k].wlen, (uint32_t)(jobs[k].flen + 1), (uint32_t)jobs[k].reads };
		memcpy(sh->data + off, jobs[k].followup, jobs[k].flen);
		sh->data[off + jobs[k].flen] = '\0';
		memcpy(sh->data + off + jobs[k].flen + 1, jobs[k].writes, jobs[k].wlen);
		off += jobs[k].flen + 1 + jobs[k].wlen;
	}
	if ((!r->out_map && lseek(r->res_fd, 0, SEEK_SET) < 0) || lseek(r->err_fd, 0, SEEK_SET) < 0)
		return 0;
	sh->out_len = 0;
	sh->base_gen = r->base_gen;
	sh->pool_hi = r->pool_hi;
	sh->n = k;
	sh->ndone = 0;
	sh->settled = -1;   /* the worker is settled between batches */
	sh->unsure = 0;
	sh->settle_each = r->settle_left > 0;
	sh->cur = -1;
	sh->started_ms = now_ms();
	sh->phase = PH_POSTED;
	return write(w->cmd, "c", 1) == 1 ? k : 0;
}

/*
 * await -- wait until the worker has done the posted batch (1), or has
 * ended (0), or the state in progress has run out of time or stopped
 * itself (the signal, in *TIMED_OUT); -1 if poll fails (internal)
 */
static int await(struct runner *r, int *timed_out)
{
	struct ccr_worker *w = r->worker;
	struct w_shared *sh = w->sh;
	for (;;) {
		/* each state's deadline runs from its own start */
		int64_t deadline = r->lim.timeout_ms ? sh->started_ms + r->lim.timeout_ms : 0, now = now_ms();
		int ms = W_STOP_POLL_MS;
		if (deadline && deadline - now < ms)
			ms = deadline - now > 0 ? (int)(deadline - now) : 0;
		struct pollfd p[2] = { { w->done, POLLIN, 0 }, { w->pidfd, POLLIN, 0 } };
		int k = poll(p, 2, ms);
		if (k < 0 && errno != EINTR)
			return -1;
		char b;
		if (k > 0 && (p[0].revents & POLLIN) && read(w->done, &b, 1) == 1)
			return 1;
		if (k > 0)
			return 0;   /* it ended (pidfd readable, or its end of the pipe closed) */
		/* Nobody will continue a stopped check: it is hung now (as in child.c). */
		siginfo_t si;
		si.si_pid = 0;
		if (waitid(P_PID, (id_t)w->pid, &si, WSTOPPED | WNOHANG | WNOWAIT) == 0 && si.si_pid == w->pid &&
		    si.si_code == CLD_STOPPED) {
			*timed_out = si.si_status;
			return 0;
		}
		if (deadline && now_ms() >= sh->started_ms + r->lim.timeout_ms) {
			*timed_out = SIGKILL;
			return 0;
		}
	}
}

/* slot_end -- END of state I of the batch, which the worker checked cleanly (internal) */
static void slot_end(struct runner *r, const struct w_shared *sh, int i, struct ccr_end *end)
{
	ccr_child_end(r, 0, 0, 0.0, end);   /* exit status 0: "ok" */
	end->stray = sh->slot[i].stray;
	end->out_from = i ? (int64_t)sh->slot[i - 1].out_end : 0;
	end->err_from = i ? (int64_t)sh->slot[i - 1].err_end : 0;
	end->out_to = r->out_map ? (int64_t)sh->slot[i].out_end : -1;
	end->err_to = (int64_t)sh->slot[i].err_end;
}

/*
 * worker_ended -- the worker ended (or is killed now, TIMED_OUT) in state
 * I: how that state's check ended, as for a fork, into END (internal)
 */
static void worker_ended(struct runner *r, int i, int timed_out, struct ccr_end *end)
{
	struct ccr_worker *w = r->worker;
	struct w_shared *sh = w->sh;
	int status = 0;
	struct rusage ru;
	memset(&ru, 0, sizeof(ru));
	if (timed_out)
		kill(-w->pid, SIGKILL);
	kill(w->pid, SIGKILL);
	reap(w->pid, &status, &ru);
	end->stray = !timed_out && kill(-w->pid, SIGKILL) == 0;
	double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
		     ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6 - sh->cpu_start;
	if (sh->cur == i && sh->phase >= PH_CHECKED)
		ccr_child_end(r, 0, 0, 0.0, end);   /* the check had finished cleanly */
	else
		ccr_child_end(r, status, timed_out, cpu, end);
	end->out_from = i ? (int64_t)sh->slot[i - 1].out_end : 0;
	end->err_from = i ? (int64_t)sh->slot[i - 1].err_end : 0;
	end->out_to = r->out_map ? (int64_t)sh->out_len : -1;
	end->err_to = -1;   /* as far as the stderr file's offset */
}

/*
 * ccr_worker_run -- check the N states JOBS (validated) in the worker, as
 * one batch where it can: returns how many of them (from the first) have
 * how they ended in ENDS, or 0 when the worker cannot take the first
 * (reuse off, or a state too big for the hand-over area): fork it instead.
 * The ENDS' ranges of the capture files hold until the next call
 */
int ccr_worker_run(struct runner *r, const struct ccr_job *jobs, int n, struct ccr_end *ends)
{
	if (r->worker_off || r->pool_fd < 0 || n < 1 || jobs[0].flen + 1 + jobs[0].wlen > W_REQ_BYTES)
		return 0;
	if (r->worker == NULL && worker_start(r) == NULL) {
		fprintf(stderr, "crashcheck runner: cannot start a reused check process; forking per state\n");
		r->worker_off = 1;
		return 0;
	}
	int posted = post(r, jobs, n);
	if (posted == 0) {   /* it died while idle: start another */
		ccr_worker_stop(r);
		return ccr_worker_run(r, jobs, n, ends);
	}
	struct w_shared *sh = r->worker->sh;
	int timed_out = 0, finished = await(r, &timed_out);
	int done = __atomic_load_n(&sh->ndone, __ATOMIC_ACQUIRE);
	for (int i = 0; i < done; i++)
		slot_end(r, sh, i, &ends[i]);
	r->settle_left -= r->settle_left < done ? r->settle_left : done;
	if (finished == 1) {
		if (sh->unsure)   /* something changes the process: settle after each state a while */
			r->settle_left = CCR_WORKER_BATCH;
		if (sh->retire || done < 1)
			ccr_worker_stop(r);
		return done;   /* 0 (it did nothing: cannot happen): fork the first */
	}
	/* It died (or hangs) in state DONE.  If states before it ran since the
	 * last settle, one of them may have changed the process so that DONE
	 * died of it: keep the states up to the first since the settle, check
	 * the rest again, settling after each.  A state that ran out of time or
	 * stopped itself is answered as it is (a second run would take as long). */
	int keep = sh->settled + 2 < done ? sh->settled + 2 : done;
	if ((!timed_out && done > sh->settled + 1) || (sh->cur != done && done > 0)) {
		ccr_worker_stop(r);
		r->settle_left = CCR_WORKER_BATCH;
		return keep;
	}
	/* It ended in state DONE (or before it started the batch's first,
	 * answered the same way, as when a state was posted on its own). */
	worker_ended(r, done, timed_out, &ends[done]);
	worker_free(r);
	return done + 1;
}
