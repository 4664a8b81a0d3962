/*
 * worker_snapshot.c -- what puts the reused check process back after a
 * check: the snapshot of its memory (every private writable mapping made a
 * private mapping of a memfd) and the restore of the pages a check wrote
 * (PAGEMAP_SCAN, or /proc/self/pagemap), the fds, the break and the
 * children after every check, and the settle of the rest of the process
 * every few checks (worker.h, "How the worker is restored" and "Settled").
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "worker.h"

/* Limits a check could change for the checks after it. */
static const int w_limits[] = { RLIMIT_AS, RLIMIT_CPU, RLIMIT_DATA, RLIMIT_FSIZE, RLIMIT_NOFILE,
				RLIMIT_NPROC, RLIMIT_STACK, RLIMIT_CORE, RLIMIT_MEMLOCK };

/*
 * ccr_w_read_stat -- threads and (VSIZE not NULL) address-space size (bytes);
 * -1 if unreadable.  The thread count is the link count of /proc/self/task
 * less 2 (one fstat), the size the first field of /proc/self/statm (pages):
 * both far cheaper than /proc/self/stat, which is formatted field by field
 */
int ccr_w_read_stat(struct w_ctl *c, long *threads, unsigned long *vsize)
{
	struct stat st;
	if (fstat(c->task_fd, &st) < 0)
		return -1;
	*threads = (long)st.st_nlink - 2;
	if (vsize == NULL)
		return 0;
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
 * ccr_w_snapshot -- replace every private writable mapping outside the worker's
 * own by a private mapping of a memfd holding its current contents, so that
 * MADV_DONTNEED brings those contents back; -1 on failure
 */
int ccr_w_snapshot(struct w_ctl *c, size_t page)
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

/* ccr_w_scan_works -- PAGEMAP_SCAN answers on this kernel, and CRASHCHECK_RUNNER_PAGEMAP_SCAN is not 0 */
int ccr_w_scan_works(struct w_ctl *c, size_t page)
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

/* ccr_w_pool_rebase -- the base changed: drop the pool's kept pages, track its new data part */
void ccr_w_pool_rebase(struct w_ctl *c, size_t page)
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

/* ccr_w_save_env -- the settings env_changed compares with */
void ccr_w_save_env(struct w_ctl *c)
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

/* env_changed -- did the checks change a limit, umask or the directory, or leave a mapping
 * behind or remove one (the address space's size: see ccr_w_restore) (internal) */
static int env_changed(struct w_ctl *c)
{
	if (!c->env_saved)
		return 0;
	long threads;
	unsigned long vsize = 0;
	int bad = ccr_w_read_stat(c, &threads, &vsize) < 0 || vsize != c->vsize0;
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
 * ccr_w_mark_joins -- note which spans have nothing mapped between them and the
 * span before: one PAGEMAP_SCAN call restores a run of them, as cheaply
 * as adjacent ones (an unmapped gap costs the walk next to nothing; a
 * mapping in it, such as the snapshot's views, costs a look at each of its
 * pages).  Made after the last mapping the worker adds; one a check leaves
 * behind retires the worker (the address-space size changes).  Returns -1
 * if the maps cannot be read
 */
int ccr_w_mark_joins(struct w_ctl *c)
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
 * ccr_w_restore -- after a clean check: drop what it wrote and put the process
 * back; -1 when something could not be put back and the worker must retire
 */
int ccr_w_restore(struct w_ctl *c)
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
	/* A thread left running retires the worker now.  A mapping left
	 * behind or removed (the address space's size) is looked for when the
	 * process is settled, not here (reading /proc/self/statm was 2-3% of a
	 * small state's cost): the states since the settle before are then
	 * checked again (worker.h, "Settled") */
	long threads = 0;
	if (ccr_w_read_stat(c, &threads, NULL) < 0 || threads != 1)
		bad = 1;
	return bad ? -1 : 0;
}

/*
 * ccr_w_settle -- the rest of the process after checks, less often than restore
 * (see "Settled" in worker.h): the signal mask, the fatal-signal
 * handlers, the alternate stack and SIGPIPE put back, interval timers
 * disarmed, each reporting whether it had been changed, and the limits,
 * umask and directory compared.  Returns 0 when nothing had changed, 1
 * when something had (and is put back), -1 when a limit, the umask or the
 * directory had (the worker must retire)
 */
int ccr_w_settle(struct w_ctl *c)
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
