/*
 * rt_sched.c -- the deterministic scheduler: one application thread at a time
 *
 * Design
 *   With CRASHCHECK_SCHED set (docs/scheduler.md), the threads of the
 *   program run as real pthreads, but only the thread holding the token
 *   runs; the others wait on their own futex word.  The token moves only at
 *   scheduling points: a traced PM access (store, flush, fence, load when
 *   loads are instrumented; the hooks of rt_hooks.c), an atomic on any
 *   memory (the pass calls __cc_sched_atomic after each one), a lock,
 *   condition, join or yield call (interposed below), thread creation and
 *   exit, and operation boundaries.  Since one thread runs between points,
 *   the run (and its trace) is a function of the choices made at them.
 *
 *   Every piece of scheduler state is touched only by the token holder, so
 *   none of it is locked.  Threads the runtime creates for itself (the trace
 *   writer) are never registered and pass straight through to libc.
 *
 * Choices
 *   At each point the strategy (random walk, PCT, stale -- parking a thread
 *   after an access until others write the word --, or replay of a file)
 *   picks one runnable thread.  A deterministic default rule (stay, unless the
 *   thread blocked, spins, or ran CRASHCHECK_SCHED_FAIR steps in a row: then
 *   the next runnable thread in id order) decides what the schedule file
 *   leaves out: the file lists only the steps where the choice differed from
 *   the default, so replaying it is exact, an empty file is the
 *   least-preempting schedule, and any list of (step, thread) pairs is a
 *   valid schedule (an outer fuzzer can draw and shrink it).
 *
 * Locks
 *   Mutexes, rwlocks, spin locks and condition variables are modelled in a
 *   table keyed by address: the real objects are never locked while the
 *   scheduler is on.  A thread waiting for one is not runnable; when no
 *   thread is runnable (and none waits with a timeout, which then expires)
 *   the run ends with a deadlock finding.
 *
 * Spinning
 *   A failed CAS, an RMW that left the value unchanged, an atomic load that
 *   returns an (address, value) pair the thread already read since its last
 *   progress, a failed trylock, sched_yield and sleeps are spin steps: the
 *   thread is switched away (PCT: moved to the lowest priority).  Too many
 *   spin steps in a row across all threads is a livelock finding; too many
 *   steps inside one operation is one too.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "rt_internal.h"

int __cc_sched_on;
int cc_sched_enabled;

/* ---- real libc entry points (for pass-through and the runtime's own use) ---- */

struct cc_real_fns cc_real;

/* cc_real_init -- look up libc's versions of the interposed functions (internal) */
void cc_real_init(void)
{
	if (cc_real.ready)
		return;
#define R(field, name) cc_real.field = dlsym(RTLD_NEXT, name)
#define RV(field, name) do { cc_real.field = dlvsym(RTLD_NEXT, name, "GLIBC_2.3.2"); \
		if (!cc_real.field) R(field, name); } while (0)
	R(mutex_lock, "pthread_mutex_lock");
	R(mutex_trylock, "pthread_mutex_trylock");
	R(mutex_timedlock, "pthread_mutex_timedlock");
	R(mutex_unlock, "pthread_mutex_unlock");
	R(rw_rdlock, "pthread_rwlock_rdlock");
	R(rw_wrlock, "pthread_rwlock_wrlock");
	R(rw_tryrdlock, "pthread_rwlock_tryrdlock");
	R(rw_trywrlock, "pthread_rwlock_trywrlock");
	R(rw_unlock, "pthread_rwlock_unlock");
	R(spin_lock, "pthread_spin_lock");
	R(spin_trylock, "pthread_spin_trylock");
	R(spin_unlock, "pthread_spin_unlock");
	RV(cond_wait, "pthread_cond_wait");
	RV(cond_timedwait, "pthread_cond_timedwait");
	RV(cond_signal, "pthread_cond_signal");
	RV(cond_broadcast, "pthread_cond_broadcast");
	R(join, "pthread_join");
	R(exit, "pthread_exit");
	R(yield, "sched_yield");
	R(usleep, "usleep");
	R(nanosleep, "nanosleep");
#undef R
#undef RV
	if (!cc_real.mutex_lock || !cc_real.cond_wait || !cc_real.join || !cc_real.exit) {
		fprintf(stderr, "crashcheck: cannot find libc's pthread functions: %s\n", dlerror());
		abort();
	}
	__atomic_store_n(&cc_real.ready, 1, __ATOMIC_RELEASE);
}

#define REAL(f) CC_REAL(f)

/* ---- threads ---- */

enum tstate { T_RUN, T_MUTEX, T_RD, T_WR, T_COND, T_JOIN, T_BARRIER, T_DEAD };
static const char *const state_names[] = { "runs", "mutex", "rwlock (read)", "rwlock (write)",
					     "condition", "join", "barrier", "exited" };

#define NPAIRS 4
struct sthread {
	int idx;                 /* registration order */
	int tid;                 /* trace thread id */
	enum tstate state;
	void *obj;               /* what it waits for */
	int timed, timed_out, signaled;
	uint64_t wait_seq;
	int go;                  /* futex word: 1 = holds the token */
	uint64_t run_len;        /* steps since it last got the token */
	int in_op;
	uint64_t op_index, op_steps;
	int npairs;              /* atomic loads since its last progress step */
	uintptr_t pair_addr[NPAIRS];
	uint64_t pair_val[NPAIRS];
	int64_t prio;            /* PCT, stale */
	uintptr_t park_addr;     /* stale: parked after an access to this word (0: not parked) */
	int park_writes;         /* writes by other threads to it still awaited */
	int park_ops;            /* operations other threads must still end (0: no bound) */
	uint64_t park_seq;       /* order of parking: the earliest parked is woken first */
	uint32_t at_site;        /* where it reached its current scheduling point: a site id, */
	const char *at_what;     /* or CC_NO_SITE and the interposed call's name (switch marks) */
	pthread_t pt;
	void *(*start)(void *);
	void *arg;
};

#define MAX_THREADS 1024
static struct sthread *threads[MAX_THREADS];
static int nthreads, nlive;
static __thread struct sthread *self;
static struct sthread *running;  /* the token holder (read by the watchdog) */
static uint64_t steps, spin_run, wait_seq;

/* limits (environment, docs/scheduler.md) */
static uint64_t spin_limit = 20000, op_limit = 1000000, fair_limit = 1000, hang_ms = 10000;
static uint64_t max_steps;      /* 0: no bound */

/* ---- strategy ---- */

enum strategy { S_RANDOM, S_PCT, S_STALE, S_REPLAY };
static enum strategy strat;
static char strat_text[256];
static uint64_t rng_state;
static int pct_depth;
static uint64_t pct_steps = 1000;
static uint64_t *pct_changes;  /* pct_depth - 1 change points, sorted */
static int64_t pct_low;        /* next priority for a spinning thread: below all others */
static uint64_t stale_period;  /* stale: park after about one access in this many */
static int64_t stale_top;      /* next priority of a woken thread: above all others */
static uint64_t stale_seq;
#define STALE_SPINS 64         /* spin steps in a row that wake a parked thread */
struct entry { uint64_t step; int tid; };
static struct entry *replay;
static size_t nreplay, replay_pos, replay_ignored;
static uint64_t replay_fair;
static int out_fd = -1;
static uint64_t recorded;

/* rng -- splitmix64 (internal) */
static uint64_t rng(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t below(uint64_t n) { return n ? rng() % n : 0; }

/* ---- the lock table ---- */

enum lkind { L_MUTEX, L_RW, L_SPIN };
struct lockst {
	const void *key;
	int serial;       /* order of first use: names the lock in reports, unlike its address */
	int owner;        /* idx, -1 = free (mutex, spin, rwlock writer) */
	int count;        /* recursion depth */
	int readers;      /* rwlock; a barrier's arrivals */
	int need;         /* a barrier's count */
	uint64_t gen;     /* a barrier's generation */
};
static struct lockst *ltab;
static size_t lcap, lused;

static size_t lhash(const void *k) { return (size_t)(((uintptr_t)k >> 3) * 0x9e3779b97f4a7c15ull); }

/* lock_get -- the modelled state of the lock at KEY, made free on first use (internal) */
static struct lockst *lock_get(const void *key)
{
	if (lused * 2 >= lcap) {
		size_t ncap = lcap ? lcap * 2 : 256;
		struct lockst *n = calloc(ncap, sizeof(*n));
		if (!n) {
			fprintf(stderr, "crashcheck: sched: out of memory\n");
			abort();
		}
		for (size_t i = 0; i < lcap; i++)
			if (ltab[i].key) {
				size_t j = lhash(ltab[i].key) & (ncap - 1);
				while (n[j].key)
					j = (j + 1) & (ncap - 1);
				n[j] = ltab[i];
			}
		free(ltab);
		ltab = n;
		lcap = ncap;
	}
	size_t j = lhash(key) & (lcap - 1);
	while (ltab[j].key && ltab[j].key != key)
		j = (j + 1) & (lcap - 1);
	if (!ltab[j].key) {
		ltab[j].key = key;
		ltab[j].owner = -1;
		ltab[j].serial = (int)++lused;
	}
	return &ltab[j];
}

/* lock_reset -- forget KEY's state (init, destroy); entries are kept, only cleared (internal) */
static void lock_reset(const void *key)
{
	struct lockst *l = lock_get(key);
	l->owner = -1;
	l->count = 0;
	l->readers = 0;
}

/* ---- recording ---- */

static void out_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void out_line(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	if (out_fd < 0)
		return;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n > 0 && write(out_fd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1) < 0)
		out_fd = -1;
}

/* trace_mark_at -- a `mark` event at SITE (an id) with a formatted label, when tracing (internal) */
static void trace_mark_at(uint32_t site, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void trace_mark_at(uint32_t site, const char *fmt, ...)
{
	char label[512];
	va_list ap;
	if (!cc_trace_enabled())
		return;
	va_start(ap, fmt);
	int n = vsnprintf(label, sizeof(label), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(label))
		n = sizeof(label) - 1;
	cc_emit(CC_EV_MARK, 0, site, 0, (uint32_t)n, label, (uint32_t)n);
}

#define trace_mark(...) trace_mark_at(CC_NO_SITE, __VA_ARGS__)

static void finish_record(const char *result)
{
	if (out_fd < 0)
		return;
	out_line("# steps %llu\n# switches %llu\n# threads %d\n",
		 (unsigned long long)steps, (unsigned long long)recorded, nthreads);
	if (replay) /* entries for steps the run never reached count as ignored */
		out_line("# replay-ignored %zu\n", replay_ignored + (nreplay - replay_pos));
	out_line("# result %s\n", result);
	close(out_fd);
	out_fd = -1;
}

/* finding -- report a deadlock, livelock or hang and end the run (internal) */
static void finding(const char *kind, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4), noreturn));
static void finding(const char *kind, int status, const char *fmt, ...)
{
	char detail[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	fprintf(stderr, "crashcheck: sched: %s at step %llu: %s\n", kind,
		(unsigned long long)steps, detail);
	trace_mark("cc-sched %s step=%llu %s", kind, (unsigned long long)steps, detail);
	finish_record(kind);
	crashcheck_trace_flush();
	_exit(status);
}

/* ---- the token ---- */

static void futex_wait(int *w)
{
	while (!__atomic_load_n(w, __ATOMIC_ACQUIRE))
		syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	__atomic_store_n(w, 0, __ATOMIC_RELAXED);
}

static void futex_give(int *w)
{
	__atomic_store_n(w, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* runnable_slow -- can T, which waits for something, go on if chosen? (internal) */
static int runnable_slow(const struct sthread *t)
{
	const struct lockst *l;
	switch (t->state) {
	case T_RUN:
		return 1;
	case T_MUTEX:
		l = lock_get(t->obj);
		return l->owner < 0 || t->timed_out;
	case T_RD:
		l = lock_get(t->obj);
		return l->owner < 0 || t->timed_out;
	case T_WR:
		l = lock_get(t->obj);
		return (l->owner < 0 && l->readers == 0) || t->timed_out;
	case T_COND:
		return t->signaled || t->timed_out;
	case T_JOIN:
		return ((const struct sthread *)t->obj)->state == T_DEAD;
	case T_BARRIER:
		return lock_get(t->obj)->gen != t->wait_seq;
	case T_DEAD:
		return 0;
	}
	return 0;
}

/* runnable -- can T go on if chosen? (internal) */
static inline int runnable(const struct sthread *t)
{
	return t->state == T_RUN || runnable_slow(t);
}

static struct sthread *by_tid(int tid)
{
	for (int i = 0; i < nthreads; i++)
		if (threads[i]->tid == tid)
			return threads[i];
	return NULL;
}

/* put -- append to a bounded buffer, truncating (internal) */
static void put(char *buf, size_t cap, size_t *n, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t cap, size_t *n, const char *fmt, ...)
{
	va_list ap;
	if (*n >= cap - 1)
		return;
	va_start(ap, fmt);
	int w = vsnprintf(buf + *n, cap - *n, fmt, ap);
	va_end(ap);
	if (w > 0)
		*n = *n + (size_t)w < cap - 1 ? *n + (size_t)w : cap - 1;
}

/* report_deadlock -- every live thread waits: say for what, and stop (internal) */
static void report_deadlock(void) __attribute__((noreturn));
static void report_deadlock(void)
{
	char buf[900];
	size_t n = 0;
	buf[0] = '\0';
	for (int i = 0; i < nthreads; i++) {
		struct sthread *t = threads[i];
		if (t->state == T_DEAD)
			continue;
		put(buf, sizeof(buf), &n, "%sthread %d waits for %s", n ? "; " : "", t->tid,
		    state_names[t->state]);
		if (t->state == T_MUTEX || t->state == T_WR || t->state == T_RD) {
			struct lockst *l = lock_get(t->obj);
			put(buf, sizeof(buf), &n, " #%d", l->serial);
			if (l->owner >= 0)
				put(buf, sizeof(buf), &n, " held by thread %d", threads[l->owner]->tid);
			else if (l->readers > 0)
				put(buf, sizeof(buf), &n, " held by %d readers", l->readers);
		} else if (t->state == T_JOIN) {
			put(buf, sizeof(buf), &n, " of thread %d", ((struct sthread *)t->obj)->tid);
		} else if (t->state == T_COND || t->state == T_BARRIER) {
			put(buf, sizeof(buf), &n, " #%d", lock_get(t->obj)->serial);
		}
	}
	finding("deadlock", CRASHCHECK_EXIT_DEADLOCK, "%s", buf);
}

/* default_choice -- the rule the schedule file is relative to (internal) */
static struct sthread *default_choice(struct sthread *cur, struct sthread **cand, int n, int spin)
{
	int stay = runnable(cur) && cur->state != T_DEAD;
	if (stay && !spin && cur->run_len < fair_limit)
		return cur;
	for (int k = 1; k <= nthreads; k++) {
		struct sthread *t = threads[(cur->idx + k) % nthreads];
		for (int i = 0; i < n; i++)
			if (cand[i] == t && (t != cur || n == 1))
				return t;
	}
	return cand[0];
}

/* choose -- the strategy's pick among N candidates (internal) */
static struct sthread *choose(struct sthread *cur, struct sthread **cand, int n, int spin,
			      struct sthread *def)
{
	int cur_ok = runnable(cur) && cur->state != T_DEAD;
	int avoid = cur_ok && n > 1 && (spin || cur->run_len >= fair_limit);
	switch (strat) {
	case S_RANDOM: {
		if (!avoid)
			return cand[below((uint64_t)n)];
		int k = (int)below((uint64_t)n - 1);
		for (int i = 0; i < n; i++)
			if (cand[i] != cur && k-- == 0)
				return cand[i];
		return def;
	}
	case S_PCT: {
		for (int i = 0; i < pct_depth - 1; i++)
			if (pct_changes[i] == steps && cur_ok)
				cur->prio = pct_depth - 1 - i;
		if (avoid)
			cur->prio = --pct_low;
		struct sthread *best = cand[0];
		for (int i = 1; i < n; i++)
			if (cand[i]->prio > best->prio)
				best = cand[i];
		return best;
	}
	case S_STALE: {
		/* the highest priority among threads not parked; if every runnable
		 * thread is parked, or the others have spun STALE_SPINS steps in a
		 * row (they may wait for what the parked one is to do), the earliest
		 * parked one is woken (its word may never be written again) */
		if (avoid)
			cur->prio = --pct_low;
		struct sthread *best = NULL, *first = NULL;
		if (spin_run >= STALE_SPINS)
			for (int i = 0; i < n; i++)
				if (cand[i]->park_addr && (!first || cand[i]->park_seq < first->park_seq))
					first = cand[i];
		if (first) {
			first->park_addr = 0;
			first->prio = ++stale_top;
			return first;
		}
		for (int i = 0; i < n; i++) {
			struct sthread *t = cand[i];
			if (t->park_addr) {
				if (!first || t->park_seq < first->park_seq)
					first = t;
			} else if (!best || t->prio > best->prio) {
				best = t;
			}
		}
		if (!best) {
			first->park_addr = 0;
			best = first;
		}
		return best;
	}
	case S_REPLAY:
		while (replay_pos < nreplay && replay[replay_pos].step < steps)
			replay_pos++, replay_ignored++;
		if (replay_pos < nreplay && replay[replay_pos].step == steps) {
			struct sthread *want = by_tid(replay[replay_pos++].tid);
			for (int i = 0; i < n; i++)
				if (cand[i] == want)
					return want;
			replay_ignored++;
		}
		return def;
	}
	return def;
}

/*
 * reschedule -- the decision at one scheduling point of CUR (the token
 * holder): pick the next thread, record it if it is not the default, and
 * pass the token (CUR waits for it back unless it has exited).
 */
static void reschedule(struct sthread *cur, int spin)
{
	static struct sthread *cand[MAX_THREADS]; /* only the token holder is here */
	int n = 0;
	steps++;
	cur->run_len++;
	/* fast path of a replay: no entry for this step and the default rule says stay */
	if (strat == S_REPLAY && cur->state == T_RUN && !spin && cur->run_len < fair_limit &&
	    (replay_pos >= nreplay || replay[replay_pos].step > steps) && !max_steps)
		return;
	if (max_steps && steps > max_steps)
		finding("hang", CRASHCHECK_EXIT_HANG, "the run took more than %llu scheduling steps "
			"(CRASHCHECK_SCHED_MAX_STEPS)", (unsigned long long)max_steps);
	for (int i = 0; i < nthreads; i++)
		if (runnable(threads[i]))
			cand[n++] = threads[i];
	if (n == 0) {
		/* nothing can run: a timed wait expires (time passes), else deadlock */
		for (int i = 0; i < nthreads && n == 0; i++)
			if (threads[i]->timed && threads[i]->state != T_RUN && threads[i]->state != T_DEAD) {
				threads[i]->timed_out = 1;
				cand[n++] = threads[i];
			}
		if (n == 0)
			report_deadlock();
	}
	struct sthread *def = default_choice(cur, cand, n, spin);
	struct sthread *next = choose(cur, cand, n, spin, def);
	if (next != def) {
		recorded++;
		out_line("%llu %d\n", (unsigned long long)steps, next->tid);
	}
	if (next == cur)
		return;
	/* the mark carries where CUR was preempted: the site of the access or atomic (the event's
	   site), else the interposed call's name in the label, since libc's callers have no site */
	if (cur->at_site != CC_NO_SITE)
		trace_mark_at(cur->at_site, "cc-sched switch step=%llu from=%d to=%d",
			      (unsigned long long)steps, cur->tid, next->tid);
	else
		trace_mark("cc-sched switch step=%llu from=%d to=%d at=%s", (unsigned long long)steps,
			   cur->tid, next->tid, cur->at_what ? cur->at_what : "unknown");
	next->run_len = 0;
	__atomic_store_n(&running, next, __ATOMIC_RELAXED);
	futex_give(&next->go);
	if (cur->state != T_DEAD)
		futex_wait(&cur->go);
}

/* modelled -- is the calling thread under the scheduler? (internal) */
static inline struct sthread *modelled(void)
{
	struct sthread *t = self;
	return cc_sched_enabled && t && t->state != T_DEAD ? t : NULL;
}

/*
 * modelled_at -- modelled(), and if so note that the thread's next
 * scheduling points are inside SITE (an id) or, without a site, inside the
 * call WHAT: a switch there names it (internal)
 */
static inline struct sthread *modelled_at(uint32_t site, const char *what)
{
	struct sthread *t = modelled();
	if (t) {
		t->at_site = site;
		t->at_what = what;
	}
	return t;
}

/*
 * point_ex -- a scheduling point of the calling thread.  SPIN: it made no
 * progress; KEEP: progress that does not forget the thread's atomic-load
 * pairs (a load of a new value) (internal)
 */
static void point_ex(int spin, int keep)
{
	struct sthread *t = modelled();
	if (!t || !__cc_sched_on)
		return;
	if (spin) {
		if (++spin_run > spin_limit)
			finding("livelock", CRASHCHECK_EXIT_LIVELOCK,
				"%llu spin steps in a row (failed CAS, unchanged atomic loads, yields) "
				"with no thread making progress", (unsigned long long)spin_run);
	} else {
		spin_run = 0;
		if (!keep)
			t->npairs = 0;
	}
	if (t->in_op && ++t->op_steps > op_limit)
		finding("livelock", CRASHCHECK_EXIT_LIVELOCK,
			"thread %d ran %llu steps in operation %llu without finishing it", t->tid,
			(unsigned long long)t->op_steps, (unsigned long long)t->op_index);
	reschedule(t, spin);
}

static void point(int spin)
{
	point_ex(spin, 0);
}

/* block -- wait (as STATE, on OBJ) until runnable again; returns 1 if a timeout expired (internal) */
static int block(struct sthread *t, enum tstate state, void *obj, int timed)
{
	t->state = state;
	t->obj = obj;
	t->timed = timed;
	t->timed_out = 0;
	reschedule(t, 0);
	int out = t->timed_out;
	t->state = T_RUN;
	t->timed = t->timed_out = 0;
	return out;
}

/* ---- hooks the rest of the runtime and the pass call ---- */

/* cc_sched_point -- a traced PM access at SITE (rt_hooks.c) */
void cc_sched_point(uint32_t site)
{
	if (modelled_at(site, "pm_access"))
		point(0);
}

static void stale_op_end(struct sthread *t);
static void stale_wake(struct sthread *u);

/* cc_sched_op -- operation INDEX begins (BEGIN) or ends (rt_api.c), called at SITE */
void cc_sched_op(int begin, uint64_t index, uint32_t site)
{
	struct sthread *t = modelled_at(site, begin ? "crashcheck_op_begin" : "crashcheck_op_end");
	if (!t)
		return;
	t->in_op = begin;
	t->op_index = index;
	t->op_steps = 0;
	if (strat == S_STALE && !begin)
		stale_op_end(t);
	point(0);
}

/* word_of -- who touched the word at A by an atomic: the threads (bits by
 * registration order, mod 64) that wrote it and that read it, in a table
 * of STALE_WORDS entries; NULL when the table is full (internal) */
#define STALE_WORDS 8192
struct word { uintptr_t key; uint64_t writers, readers; };
static struct word *word_of(uintptr_t a)
{
	static struct word tab[STALE_WORDS];
	size_t h = (size_t)((a >> 3) * 0x9e3779b97f4a7c15ull) % STALE_WORDS;
	for (size_t k = 0; k < STALE_WORDS; k++, h = (h + 1) % STALE_WORDS) {
		if (tab[h].key == a)
			return &tab[h];
		if (!tab[h].key) {
			tab[h].key = a;
			return &tab[h];
		}
	}
	return NULL;
}

/* other_runnable -- is a thread other than T runnable, parked or not? (internal) */
static int other_runnable(const struct sthread *t)
{
	for (int i = 0; i < nthreads; i++)
		if (threads[i] != t && runnable(threads[i]))
			return 1;
	return 0;
}

/*
 * stale_access -- the stale strategy at an atomic access of T to ADDR that
 * made progress (a load of a new value; WRITE: a store, RMW or successful
 * CAS).  A write wakes every other thread parked on ADDR once it has seen
 * the number of writes it waits for, and the woken thread runs next, before
 * the writer's next step.  Then T itself is parked on ADDR with probability
 * 1/stale_period, until other threads write ADDR once or twice or end one
 * to three operations (both drawn): what T has just read or written is then
 * stale, which is the window of most lock-free bugs (internal)
 */
static void stale_access(struct sthread *t, const void *addr, int kind)
{
	uintptr_t a = (uintptr_t)addr;
	struct word *w = word_of(a);
	uint64_t me = 1ull << (t->idx & 63);
	int write = kind != CC_SCHED_LOAD;
	if (write)
		for (int i = 0; i < nthreads; i++) {
			struct sthread *u = threads[i];
			if (u != t && u->park_addr == a && --u->park_writes <= 0)
				stale_wake(u);
		}
	if (!w)
		return;
	/* a word is worth waiting on only if another thread may change what T
	 * just saw: a load of a word another thread wrote by an atomic (not the
	 * upper levels of an empty skip list, not T's own node); a store to a
	 * word another thread has touched (not T's private initialisation of a
	 * node it has not published); any read-modify-write (a CAS publishes) */
	int shared = kind == CC_SCHED_LOAD ? (w->writers & ~me) != 0
		   : kind == CC_SCHED_STORE ? ((w->writers | w->readers) & ~me) != 0 : 1;
	if (write)
		w->writers |= me;
	else
		w->readers |= me;
	/* and only while another thread is runnable: if every other one is
	 * parked, choose() wakes the earliest parked (its window ends, T's
	 * begins); waiting for unparked ones let an early park block every
	 * later one for a whole section */
	if (shared && other_runnable(t) && below(stale_period) == 0) {
		t->park_addr = a;
		t->park_writes = 1 + (int)below(2);
		t->park_ops = 1 + (int)below(3);
		t->park_seq = ++stale_seq;
	}
}

/* stale_wake -- end U's parking: it runs next, above every other thread (internal) */
static void stale_wake(struct sthread *u)
{
	u->park_addr = 0;
	u->prio = ++stale_top;
}

/*
 * stale_op_end -- T ended an operation: threads parked for a number of
 * other threads' operations count it down; T itself draws a new priority,
 * so that whole operations of the threads interleave at random (internal)
 */
static void stale_op_end(struct sthread *t)
{
	for (int i = 0; i < nthreads; i++) {
		struct sthread *u = threads[i];
		if (u != t && u->park_addr && u->park_ops && --u->park_ops == 0)
			stale_wake(u);
	}
	t->prio = 2 + (int64_t)(rng() >> 24);
}

/*
 * __cc_sched_atomic -- after every atomic instruction (the pass guards the
 * call with __cc_sched_on).  OP: bits 0-3 the kind, bit 4 "no value", bits
 * 8-15 the access size; VAL the loaded value (load) or the old value (RMW).
 */
void __cc_sched_atomic(const void *addr, uint32_t op, uint64_t val, crashcheck_site_t site)
{
	struct sthread *t = modelled_at(cc_hook_site(site), "atomic");
	if (!t || !__cc_sched_on)
		return;
	int spin = 0;
	unsigned size = (op >> 8) & 0xff;
	switch (op & 0xf) {
	case CC_SCHED_LOAD:
		if (op & CC_SCHED_NOVAL)
			break;
		for (int i = 0; i < t->npairs; i++)
			if (t->pair_addr[i] == (uintptr_t)addr && t->pair_val[i] == val)
				spin = 1;
		if (!spin) {
			int i = t->npairs < NPAIRS ? t->npairs++ : (int)(steps % NPAIRS);
			t->pair_addr[i] = (uintptr_t)addr;
			t->pair_val[i] = val;
			if (strat == S_STALE)
				stale_access(t, addr, CC_SCHED_LOAD);
			point_ex(0, 1); /* a new value: progress, but the pairs are kept */
			return;
		}
		break;
	case CC_SCHED_RMW:
		if (!(op & CC_SCHED_NOVAL) && size && size <= 8) {
			uint64_t now = 0;
			__builtin_memcpy(&now, addr, size);
			spin = now == val; /* e.g. xchg 1 on a held test-and-set lock */
		}
		break;
	case CC_SCHED_CAS_FAIL:
		spin = 1;
		break;
	default:
		break;
	}
	if (strat == S_STALE && !spin && (op & 0xf) != CC_SCHED_LOAD)
		stale_access(t, addr, (int)(op & 0xf));
	point(spin);
}

/* trampoline -- a registered thread: wait for the token, run, exit (internal) */
static void thread_exit(struct sthread *t);
static void *trampoline(void *arg)
{
	struct sthread *t = arg;
	self = t;
	cc_tl_tid = t->tid;
	futex_wait(&t->go);
	void *r = t->start(t->arg);
	thread_exit(t);
	return r;
}

static void thread_exit(struct sthread *t)
{
	if (t->state == T_DEAD)
		return;
	t->at_site = CC_NO_SITE;
	t->at_what = "thread_exit";
	t->state = T_DEAD;
	nlive--;
	if (nlive <= 1)
		__cc_sched_on = 0;
	if (nlive > 0)
		reschedule(t, 0); /* hands the token on; does not wait for it */
}

/*
 * watchdog -- a thread that runs without reaching a scheduling point (a
 * wait loop over plain memory, a blocking system call) stops every other
 * thread: after hang_ms ms without a step, report a hang (internal; the
 * watchdog is not registered, like the trace writer)
 */
static void *watchdog(void *arg)
{
	(void)arg;
	uint64_t last = (uint64_t)-1, still_ms = 0;
	for (;;) {
		struct timespec ts = { 0, 50 * 1000000 };
		CC_REAL(nanosleep)(&ts, NULL);
		uint64_t now = __atomic_load_n(&steps, __ATOMIC_RELAXED);
		if (now != last || !__atomic_load_n(&__cc_sched_on, __ATOMIC_RELAXED)) {
			last = now;
			still_ms = 0;
			continue;
		}
		still_ms += 50;
		if (still_ms >= hang_ms) {
			struct sthread *r = __atomic_load_n(&running, __ATOMIC_RELAXED);
			finding("hang", CRASHCHECK_EXIT_HANG,
				"thread %d reached no scheduling point for %llu ms (a wait loop over plain "
				"memory, or a blocking system call)", r ? r->tid : -1,
				(unsigned long long)still_ms);
		}
	}
	return NULL;
}

/*
 * cc_sched_create -- pthread_create under the scheduler (rt_threads.c):
 * register the thread before it exists, so ids follow creation order.
 */
int cc_sched_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *), void *arg)
{
	struct sthread *cur = modelled_at(CC_NO_SITE, "pthread_create");
	if (!cur || nthreads >= MAX_THREADS)
		return cc_real_pthread_create(thread, attr, start, arg);
	struct sthread *t = calloc(1, sizeof(*t));
	if (!t)
		return EAGAIN;
	t->idx = nthreads;
	t->tid = cc_next_tid();
	t->at_site = CC_NO_SITE;
	t->start = start;
	t->arg = arg;
	t->prio = pct_depth + 1 + (int64_t)(rng() >> 24);
	int rc = cc_real_pthread_create(thread, attr, trampoline, t);
	if (rc != 0) {
		free(t);
		return rc;
	}
	t->pt = *thread;
	threads[nthreads++] = t;
	nlive++;
	if (nlive >= 2 && !__cc_sched_on) {
		static int watching;
		pthread_t w;
		if (!watching && hang_ms > 0 && cc_real_pthread_create(&w, NULL, watchdog, NULL) == 0) {
			pthread_detach(w);
			watching = 1;
		}
		__cc_sched_on = 1;
		if (steps == 0)
			trace_mark("cc-sched start"); /* no strategy: a replay leaves the same trace */
	}
	point(0);
	return 0;
}

/* ---- interposed pthread functions ---- */

/* pthread_exit -- an exiting registered thread passes the token on first */
void pthread_exit(void *ret)
{
	struct sthread *t = modelled();
	if (t)
		thread_exit(t);
	REAL(exit)(ret);
	__builtin_unreachable();
}

int pthread_join(pthread_t th, void **ret)
{
	struct sthread *t = modelled_at(CC_NO_SITE, "pthread_join"), *target = NULL;
	if (t)
		for (int i = 0; i < nthreads; i++)
			if (threads[i] != t && pthread_equal(threads[i]->pt, th))
				target = threads[i];
	if (target)
		while (target->state != T_DEAD)
			block(t, T_JOIN, target, 0);
	return REAL(join)(th, ret);
}

static int mutex_kind(const pthread_mutex_t *m)
{
	return m->__data.__kind & 3; /* glibc: 1 recursive, 2 error-checking */
}

/* mutex_acquire -- lock KEY as a mutex or spin lock; TRY: do not wait (internal) */
static int mutex_acquire(struct sthread *t, void *key, int kind, int try, int timed)
{
	struct lockst *l = lock_get(key);
	if (l->owner == t->idx && kind == PTHREAD_MUTEX_RECURSIVE) {
		l->count++;
		point(0);
		return 0;
	}
	if (l->owner == t->idx && kind == PTHREAD_MUTEX_ERRORCHECK)
		return EDEADLK;
	if (l->owner >= 0 && try) {
		point(1);
		return EBUSY;
	}
	while (l->owner >= 0) {   /* a normal mutex relocked by its owner waits forever: deadlock */
		if (block(t, T_MUTEX, key, timed))
			return ETIMEDOUT;
		l = lock_get(key);
	}
	l->owner = t->idx;
	l->count = 1;
	point(0);
	return 0;
}

static int mutex_release(struct sthread *t, void *key, int kind, int sched)
{
	struct lockst *l = lock_get(key);
	if (l->owner != t->idx && kind == PTHREAD_MUTEX_ERRORCHECK)
		return EPERM;
	if (l->owner == t->idx && kind == PTHREAD_MUTEX_RECURSIVE && --l->count > 0)
		goto out;
	l->owner = -1;
	l->count = 0;
out:
	if (sched)
		point(0);
	return 0;
}

int pthread_mutex_lock(pthread_mutex_t *m)
{
	struct sthread *t = modelled_at(CC_NO_SITE, "pthread_mutex_lock");
	if (!t)
		return REAL(mutex_lock)(m);
	return mutex_acquire(t, m, mutex_kind(m), 0, 0);
}

int pthread_mutex_trylock(pthread_mutex_t *m)
{
	struct sthread *t = modelled_at(CC_NO_SITE, "pthread_mutex_trylock");
	if (!t)
		return REAL(mutex_trylock)(m);
	return mutex_acquire(t, m, mutex_kind(m), 1, 0);
}

int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abstime)
{
	struct sthread *t = modelled_at(CC_NO_SITE, "pthread_mutex_timedlock");
	if (!t)
		return REAL(mutex_timedlock)(m, abstime);
	return mutex_acquire(t, m, mutex_kind(m), 0, 1);
}

int pthread_mutex_unlock(pthread_mutex_t *m)
{
	struct sthread *t = modelled_at(CC_NO_SITE, "pthread_mutex_unlock");
	if (!t)
		return REAL(mutex_unlock)(m);
	return mutex_release(t, m, mutex_kind(m), 1);
}

int pthread_spin_lock(pthread_spinlock_t *s)
{
	struct sthread *t = modelled_at(CC_NO_SITE, "pthread_spin_lock");
	if (!t)
		return REAL(spin_lock)(s);
	return mutex_acquire(t, (void *)s, PTHREAD_MUTEX_NORMAL, 0, 0);
}

int pthread_spin_trylock(pthread_spinlock_t *s)
{
	struct sthread *t = modelled_at(CC_NO_SITE, "pthread_spin_trylock");
	if (!t)
		return REAL(spin_trylock)(s);
	return mutex_acquire(t, (void *)s, PTHREAD_MUTEX_NORMAL, 1, 0);
}

int pthread_spin_unlock(pthread_spinlock_t *s)
{
	struct sthread *t = modelled_at(CC_NO_SITE, "pthread_spin_unlock");
	if (!t)
		return REAL(spin_unlock)(s);
	return mutex_release(t, (void *)s, PTHREAD_MUTEX_NORMAL, 1);
}

/* rw_acquire -- read (WRITE 0) or write lock; TRY: do not wait (internal) */
static int rw_acquire(struct sthread *t, pthread_rwlock_t *rw, int write, int try)
{
	struct lockst *l = lock_get(rw);
	for (;;) {
		int busy = l->owner >= 0 || (write && l->readers > 0);
		if (!busy)
			break;
		if (l->owner == t->idx)
			return EDEADLK;
		if (try) {
			point(1);
			return EBUSY;
		}
		block(t, write ? T_WR : T_RD, rw, 0);
		l = lock_get(rw);
	}
	if (write)
		l->owner = t->idx;
	else
		l->readers++;
	point(0);
	return 0;
}

int pthread_rwlock_rdlock(pthread_rwlock_t *rw)
{
	struct sthread *t = modelled_at(CC_NO_SITE, "pthread_rwlock_rdlock");
	return t ? rw_acquire(t, rw, 0, 0) : REAL(rw_rdlock)(rw);
}

int pthread_rwlock_wrlock(pthread_rwlock_t *rw)
{
	struct sthread *t = modelled_at(CC_NO_SITE, "pthread_rwlock_wrlock");
	return t ? rw_acquire(t, rw, 1, 0) : REAL(rw_wrlock)(rw);
}

int pthread_rwlock_tryrdlock(pthread_rwlock_t *rw)
{
	struct sthread *t = modelled_at(CC_NO_SITE, "pthread_rwlock_tryrdlock");
	return t ? rw_acquire(t, rw, 0, 1) : REAL(rw_tryrdlock)(rw);
}

int pthread_rwlock_trywrlock(pthread_rwlock_t *rw)
{
	struct sthread *t = modelled_at(CC_NO_SITE, "pthread_rwlock_trywrlock");
	return t ? rw_acquire(t, rw, 1, 1) : REAL(rw_trywrlock)(rw);
}

int pthread_rwlock_unlock(pthread_rwlock_t *rw)
{
	struct sthread *t = modelled_at(CC_NO_SITE, "pthread_rwlock_unlock");
	if (!t)
		return REAL(rw_unlock)(rw);
	struct lockst *l = lock_get(rw);
	if (l->owner == t->idx)
		l->owner = -1;
	else if (l->readers > 0)
		l->readers--;
	else
		return EPERM;
	point(0);
	return 0;
}

/* cond_wait -- release M, wait for a signal (or the timeout), take M again (internal) */
static int cond_wait(struct sthread *t, pthread_cond_t *c, pthread_mutex_t *m, int timed)
{
	int kind = mutex_kind(m);
	struct lockst *l = lock_get(m);
	if (l->owner != t->idx)
		return EPERM;
	int depth = l->count;
	mutex_release(t, m, kind, 0);
	t->signaled = 0;
	t->wait_seq = ++wait_seq;
	int expired = block(t, T_COND, c, timed);
	t->signaled = 0;
	l = lock_get(m);
	while (l->owner >= 0) {
		block(t, T_MUTEX, m, 0);
		l = lock_get(m);
	}
	l->owner = t->idx;
	l->count = depth;
	return expired ? ETIMEDOUT : 0;
}

int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	struct sthread *t = modelled_at(CC_NO_SITE, "pthread_cond_wait");
	return t ? cond_wait(t, c, m, 0) : REAL(cond_wait)(c, m);
}

int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abstime)
{
	struct sthread *t = modelled_at(CC_NO_SITE, "pthread_cond_timedwait");
	return t ? cond_wait(t, c, m, 1) : REAL(cond_timedwait)(c, m, abstime);
}

/* cond_wake -- signal the longest waiter on C, or all (internal) */
static void cond_wake(pthread_cond_t *c, int all)
{
	struct sthread *first = NULL;
	for (int i = 0; i < nthreads; i++) {
		struct sthread *w = threads[i];
		if (w->state != T_COND || w->obj != c || w->signaled)
			continue;
		if (all)
			w->signaled = 1;
		else if (!first || w->wait_seq < first->wait_seq)
			first = w;
	}
	if (first)
		first->signaled = 1;
	point(0);
}

int pthread_cond_signal(pthread_cond_t *c)
{
	if (!modelled_at(CC_NO_SITE, "pthread_cond_signal"))
		return REAL(cond_signal)(c);
	cond_wake(c, 0);
	return 0;
}

int pthread_cond_broadcast(pthread_cond_t *c)
{
	if (!modelled_at(CC_NO_SITE, "pthread_cond_broadcast"))
		return REAL(cond_broadcast)(c);
	cond_wake(c, 1);
	return 0;
}

/*
 * init and destroy -- the real functions only write the object; the model
 * forgets its state (mutex_kind reads the type the real init stored).
 */
int pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a)
{
	static int (*real)(pthread_mutex_t *, const pthread_mutexattr_t *);
	if (!real)
		real = dlsym(RTLD_NEXT, "pthread_mutex_init");
	if (modelled())
		lock_reset(m);
	return real(m, a);
}

int pthread_rwlock_init(pthread_rwlock_t *rw, const pthread_rwlockattr_t *a)
{
	static int (*real)(pthread_rwlock_t *, const pthread_rwlockattr_t *);
	if (!real)
		real = dlsym(RTLD_NEXT, "pthread_rwlock_init");
	if (modelled())
		lock_reset(rw);
	return real(rw, a);
}

int pthread_spin_init(pthread_spinlock_t *s, int pshared)
{
	static int (*real)(pthread_spinlock_t *, int);
	if (!real)
		real = dlsym(RTLD_NEXT, "pthread_spin_init");
	if (modelled())
		lock_reset((void *)s);
	return real(s, pshared);
}

int pthread_barrier_init(pthread_barrier_t *b, const pthread_barrierattr_t *a, unsigned count)
{
	static int (*real)(pthread_barrier_t *, const pthread_barrierattr_t *, unsigned);
	if (!real)
		real = dlsym(RTLD_NEXT, "pthread_barrier_init");
	if (modelled()) {
		lock_reset(b);
		lock_get(b)->need = (int)count;
	}
	return real(b, a, count);
}

/* pthread_barrier_wait -- wait for the generation to change; the last to arrive changes it */
int pthread_barrier_wait(pthread_barrier_t *b)
{
	static int (*real)(pthread_barrier_t *);
	struct sthread *t = modelled_at(CC_NO_SITE, "pthread_barrier_wait");
	if (!t) {
		if (!real)
			real = dlsym(RTLD_NEXT, "pthread_barrier_wait");
		return real(b);
	}
	struct lockst *l = lock_get(b);
	if (++l->readers >= l->need) {
		l->readers = 0;
		l->gen++;
		point(0);
		return PTHREAD_BARRIER_SERIAL_THREAD;
	}
	t->wait_seq = l->gen;
	block(t, T_BARRIER, b, 0);
	return 0;
}

/* sched_yield -- a spin step: let another thread run */
int sched_yield(void)
{
	if (modelled_at(CC_NO_SITE, "sched_yield") && __cc_sched_on) {
		point(1);
		return 0;
	}
	return REAL(yield)();
}

/* usleep, nanosleep -- virtual time: a spin step instead of sleeping */
int usleep(useconds_t us)
{
	if (modelled_at(CC_NO_SITE, "usleep") && __cc_sched_on) {
		point(1);
		return 0;
	}
	return REAL(usleep)(us);
}

int nanosleep(const struct timespec *req, struct timespec *rem)
{
	if (modelled_at(CC_NO_SITE, "nanosleep") && __cc_sched_on) {
		point(1);
		return 0;
	}
	return REAL(nanosleep)(req, rem);
}

/* ---- public API ---- */

int crashcheck_sched_active(void)
{
	return cc_sched_enabled;
}

void crashcheck_sched_yield(void)
{
	if (modelled_at(CC_NO_SITE, "crashcheck_sched_yield"))
		point(1);
}

/* ---- start-up ---- */

static uint64_t env_u64(const char *name, uint64_t def)
{
	const char *v = getenv(name);
	return v && *v ? strtoull(v, NULL, 0) : def;
}

static void bad_spec(const char *why) __attribute__((noreturn));
static void bad_spec(const char *why)
{
	fprintf(stderr, "crashcheck: CRASHCHECK_SCHED=%s: %s (expected random:SEED, "
		"pct:SEED:DEPTH[:STEPS], stale:SEED:PERIOD or replay:FILE)\n", strat_text, why);
	exit(2);
}

/* parse_seed -- the strategy's SEED at P into rng_state; it must end at SEP (internal) */
static char *parse_seed(const char *p, char sep)
{
	char *end;
	rng_state = strtoull(p, &end, 0);
	if (end == p || *end != sep)
		bad_spec("the seed is not a number");
	return end;
}

/* load_replay -- read a schedule file: "STEP TID" lines, '#' comments (internal) */
static void load_replay(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "crashcheck: cannot read schedule %s: %s\n", path, strerror(errno));
		exit(2);
	}
	char line[256];
	size_t cap = 0;
	uint64_t last = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long step;
		int tid;
		/* the default rule depends on FAIR: a recorded run's value wins over the environment */
		if (sscanf(line, "# fair %llu", &step) == 1)
			replay_fair = step;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (sscanf(line, "%llu %d", &step, &tid) != 2 || step <= last) {
			fprintf(stderr, "crashcheck: schedule %s: bad line (want increasing \"STEP THREAD\"): %s",
				path, line);
			exit(2);
		}
		last = step;
		if (nreplay == cap) {
			cap = cap ? cap * 2 : 64;
			replay = realloc(replay, cap * sizeof(*replay));
			if (!replay)
				abort();
		}
		replay[nreplay++] = (struct entry){ step, tid };
	}
	fclose(f);
	if (!replay)
		replay = calloc(1, sizeof(*replay));
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void at_exit(void)
{
	finish_record("ok");
}

static void in_child(void)
{
	/* a forked child has one thread: it runs alone, unrecorded */
	for (int i = 0; i < nthreads; i++)
		if (threads[i] != self)
			threads[i]->state = T_DEAD;
	nlive = 1;
	__cc_sched_on = 0;
	out_fd = -1;
}

/* sched_start -- read $CRASHCHECK_SCHED after the trace is open (internal) */
__attribute__((constructor(102)))
static void sched_start(void)
{
	const char *spec = getenv("CRASHCHECK_SCHED");
	if (spec == NULL || *spec == '\0')
		return;
	snprintf(strat_text, sizeof(strat_text), "%s", spec);
	cc_real_init();
	if (strncmp(spec, "random:", 7) == 0) {
		strat = S_RANDOM;
		parse_seed(spec + 7, '\0');
	} else if (strncmp(spec, "pct:", 4) == 0) {
		strat = S_PCT;
		char *end = parse_seed(spec + 4, ':');
		pct_depth = (int)strtol(end + 1, &end, 0);
		if (pct_depth < 1 || pct_depth > 64 || (*end && *end != ':'))
			bad_spec("the depth must be 1 to 64");
		if (*end == ':') {
			pct_steps = strtoull(end + 1, &end, 0);
			if (pct_steps < 1 || *end)
				bad_spec("STEPS must be a positive number");
		}
	} else if (strncmp(spec, "stale:", 6) == 0) {
		strat = S_STALE;
		char *end = parse_seed(spec + 6, ':');
		stale_period = strtoull(end + 1, &end, 0);
		if (stale_period < 1 || *end)
			bad_spec("PERIOD must be a positive number");
		pct_depth = 1;   /* thread priorities as PCT's, above 1 */
		stale_top = INT64_MAX / 2;
	} else if (strncmp(spec, "replay:", 7) == 0) {
		strat = S_REPLAY;
		load_replay(spec + 7);
	} else {
		bad_spec("unknown strategy");
	}
	spin_limit = env_u64("CRASHCHECK_SCHED_SPIN_LIMIT", spin_limit);
	op_limit = env_u64("CRASHCHECK_SCHED_OP_STEPS", op_limit);
	fair_limit = env_u64("CRASHCHECK_SCHED_FAIR", fair_limit);
	if (replay_fair)
		fair_limit = replay_fair;
	hang_ms = env_u64("CRASHCHECK_SCHED_HANG_MS", hang_ms);
	max_steps = env_u64("CRASHCHECK_SCHED_MAX_STEPS", max_steps);
	if (strat == S_PCT) {
		/* the d-1 priority change points, uniform over the first STEPS steps */
		pct_changes = calloc((size_t)pct_depth, sizeof(uint64_t));
		for (int i = 0; i < pct_depth - 1; i++)
			pct_changes[i] = 1 + below(pct_steps);
		qsort(pct_changes, (size_t)(pct_depth > 1 ? pct_depth - 1 : 0), sizeof(uint64_t), cmp_u64);
	}
	const char *out = getenv("CRASHCHECK_SCHED_OUT");
	if (out && *out) {
		out_fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (out_fd < 0) {
			fprintf(stderr, "crashcheck: cannot create schedule file %s: %s\n", out, strerror(errno));
			exit(2);
		}
		out_line("# crashcheck-schedule 1\n# strategy %s\n# fair %llu\n", strat_text,
			 (unsigned long long)fair_limit);
	}
	struct sthread *t = calloc(1, sizeof(*t));
	if (!t)
		abort();
	t->tid = cc_tid();
	t->at_site = CC_NO_SITE;
	t->pt = pthread_self();
	t->prio = pct_depth + 1 + (int64_t)(rng() >> 24);
	threads[nthreads++] = t;
	nlive = 1;
	self = t;
	running = t;
	cc_sched_enabled = 1;
	atexit(at_exit);
	pthread_atfork(NULL, NULL, in_child);
}
