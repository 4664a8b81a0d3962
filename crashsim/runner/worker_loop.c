/*
 * worker_loop.c -- the reused check process itself: its set-up (its own
 * process group, fds, stacks and limits, as for a forked check), the loop
 * that takes a posted batch and checks its states one after another, and
 * one check, run on a stack of its own with its result written into the
 * shared head of the result file (worker.h, "What a check sees" and
 * "Batches").  Putting the process back after a check is
 * worker_snapshot.c's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "worker.h"

static struct w_ctl *ctl;   /* set once in the worker; read only at a check's start */

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
	int rc = c->rc.check(c->rc.ctx, (const char *)sh->data + sh->item[sh->cur].fu_off, c->out);
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
	ccr_apply_writes(c->rc.pool, sh->data + it->off, it->wlen);
	/* undone by the restore, as the runtime's globals are; a body that does
	 * not parse here parsed in the runner: out of memory, as exit 125 */
	if (it->reads == CCR_LAZY &&
	    ccr_lazy_worker_begin(sh->data + it->off + it->wlen, it->ndec) < 0)
		_exit(125);
	else if (it->reads == CCR_READS)
		ccr_lazy_reads_on();
	/* with the shared head of the result file, the stream made before the
	 * snapshot (worker_loop): the restore puts it back empty after every
	 * check, so no check pays for a stream and its buffer */
	if (!c->rc.out_map && (c->out = fdopen(c->res_fd, "w")) == NULL)
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
	int bad = ccr_w_restore(c);
	/* where this state's output ends: the next one's starts there */
	off_t err_end = lseek(c->err_fd, 0, SEEK_CUR);
	sh->slot[i] = (struct w_slot){ sh->out_len, err_end < 0 ? 0 : (uint64_t)err_end, sh->stray };
	double now = c->cpu_last = cpu_now();
	sh->retire = bad < 0 || err_end < 0 || now > W_CPU_SLACK;
	int keep = i + 1, last = i == sh->n - 1 || sh->out_len >= W_OUT_SOFT;
	if (sh->retire || last || sh->settle_each || i - sh->settled >= W_SETTLE_EVERY) {
		int changed = ccr_w_settle(c);
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
	if (ccr_w_read_stat(c, &threads, &c->vsize0) < 0)
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
	c->scan = ccr_w_scan_works(c, page);
	warm_locks();
	/* the result stream every check writes (out_write), made once: a
	 * FILE in the snapshotted heap, its buffer in the worker's own
	 * memory; the restore after a check puts the FILE back as it is now,
	 * empty, as a new stream would be */
	if (c->rc.out_map) {
		cookie_io_functions_t io = { .write = out_write };
		c->out = fopencookie(c, "w", io);
		if (c->out == NULL || setvbuf(c->out, c->outbuf, _IOFBF, sizeof(c->outbuf)) != 0)
			_exit(125);
	}
	ccr_w_restore(c);
	ccr_w_settle(c);   /* also clears the signal mask the runner serves with (SIGCHLD blocked) */
	c->cpu_last = cpu_now();
	(void)lseek(c->err_fd, 0, SEEK_CUR);
	if (ccr_w_snapshot(c, page) < 0 || ccr_w_mark_joins(c) < 0 || ccr_w_read_stat(c, &threads, &c->vsize0) < 0 ||
	    threads != 1)
		_exit(125);
	if (c->rc.lim.mem_bytes) {
		struct rlimit as = { c->vsize0 + c->rc.lim.mem_bytes, c->vsize0 + c->rc.lim.mem_bytes };
		if (setrlimit(RLIMIT_AS, &as) < 0)
			_exit(125);
	}
	c->brk0 = (uintptr_t)syscall(SYS_brk, 0);
	ccr_w_save_env(c);
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
			ccr_w_pool_rebase(c, page);
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

/* ccr_w_main -- the worker process: set up like a check's child, then loop */
void ccr_w_main(struct runner *r, struct w_shared *sh, int cmd, int done)
{
	setpgid(0, 0);   /* its own group: the runner kills whatever its checks forked */
	pid_t parent = getppid();
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(126);
	prctl(PR_SET_CHILD_SUBREAPER, 1);   /* a check's orphans stay visible to ccr_w_restore() */
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct w_ctl *c = mmap(NULL, sizeof(*c), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *wstack = mmap(NULL, W_STACK_BYTES, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	struct rlimit st;
	size_t cs = (size_t)8 << 20;
	if (getrlimit(RLIMIT_STACK, &st) == 0 && st.rlim_cur != RLIM_INFINITY && st.rlim_cur >= ((rlim_t)1 << 20))
		cs = st.rlim_cur < ((rlim_t)64 << 20) ? (size_t)st.rlim_cur : (size_t)64 << 20;
	/* the check's stack, with a guard page below: overflow is a SIGSEGV.
	 * Just below the pool if that is free: with nothing mapped between
	 * them, one PAGEMAP_SCAN call restores both (see ccr_w_mark_joins).
	 * Its top W_STACK_TRACKED bytes (all a check normally uses) start a
	 * 2 MiB page-table block, the rest of which is left unmapped: the scan
	 * walks each entry of a page table the span covers, and with the top
	 * of the stack at the block's end it walked 512 of them where 64 do
	 * (the pages below are in the next block, which has no page table
	 * until a check goes deeper). */
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
	uintptr_t block = (uintptr_t)2 << 20;
	uintptr_t top = (((uintptr_t)r->pool - W_STACK_TRACKED) & ~(block - 1)) + W_STACK_TRACKED;
	uint8_t *guard = mmap((void *)(top - cs - page), cs + page, PROT_NONE, flags | MAP_FIXED_NOREPLACE, -1, 0);
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
