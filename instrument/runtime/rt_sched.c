/*
 * rt_sched.c -- the deterministic scheduler's core: one application thread at a time
 *
 * (rt_sched.h says which of the scheduler's files owns what.)
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
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "rt_sched.h"

int __cc_sched_on;
int cc_sched_enabled;

/* ---- threads ---- */

static const char *const state_names[] = { "runs", "mutex", "rwlock (read)", "rwlock (write)",
					     "condition", "join", "barrier", "exited" };

struct sthread *ccs_threads[MAX_THREADS];
int ccs_nthreads;
static int nlive;
__thread struct sthread *ccs_self;
static struct sthread *running;  /* the token holder (read by the watchdog) */
uint64_t ccs_steps, ccs_spin_run;

/* limits (environment, docs/scheduler.md) */
uint64_t ccs_spin_limit = 20000, ccs_op_limit = 1000000, ccs_fair_limit = 1000, ccs_hang_ms = 10000;
uint64_t ccs_max_steps;      /* 0: no bound */
int ccs_out_fd = -1;
static uint64_t recorded;

/* ---- the lock table ---- */

static struct lockst *ltab;
static size_t lcap, lused;

static size_t lhash(const void *k) { return (size_t)(((uintptr_t)k >> 3) * 0x9e3779b97f4a7c15ull); }

/* ccs_lock_get -- the modelled state of the lock at KEY, made free on first use (internal) */
struct lockst *ccs_lock_get(const void *key)
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

/* ccs_lock_reset -- forget KEY's state (init, destroy); entries are kept, only cleared (internal) */
void ccs_lock_reset(const void *key)
{
	struct lockst *l = ccs_lock_get(key);
	l->owner = -1;
	l->count = 0;
	l->readers = 0;
}
/* ---- recording ---- */

void ccs_out_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ccs_out_line(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	if (ccs_out_fd < 0)
		return;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n > 0 && write(ccs_out_fd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1) < 0)
		ccs_out_fd = -1;
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

/*
 * ccs_sync -- a `cc-sync WHAT N` mark while loads are logged (threaded runs of code built with
 * them): acq / racq / rel of lock N (its serial: the same in every replay, unlike its address),
 * spawn / join of thread N.  harness/check/race_windows.py reads them for locksets and
 * happens-before; without loads there is no window analysis, and no trace grows (internal)
 */
extern const int __cc_module_loads __attribute__((weak));   /* the pass: a module built with loads */
void ccs_sync(const char *what, int n)
{
	if (cc_trace_loads == 1 && &__cc_module_loads != NULL)
		trace_mark("cc-sync %s %d", what, n);
}

static void finish_record(const char *result)
{
	if (ccs_out_fd < 0)
		return;
	ccs_out_line("# steps %llu\n# switches %llu\n# threads %d\n",
		 (unsigned long long)ccs_steps, (unsigned long long)recorded, ccs_nthreads);
	/* entries for steps the run never reached count as ignored (a writer aim's prefix is
	 * left by design at its store: no count) */
	if (ccs_replay && ccs_strat == S_REPLAY)
		ccs_out_line("# replay-ignored %zu\n", ccs_replay_ignored + (ccs_nreplay - ccs_replay_pos));
	ccs_out_line("# result %s\n", result);
	close(ccs_out_fd);
	ccs_out_fd = -1;
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
		(unsigned long long)ccs_steps, detail);
	trace_mark("cc-sched %s step=%llu %s", kind, (unsigned long long)ccs_steps, detail);
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
/* ccs_runnable_slow -- can T, which waits for something, go on if chosen? (internal) */
int ccs_runnable_slow(const struct sthread *t)
{
	const struct lockst *l;
	switch (t->state) {
	case T_RUN:
		return 1;
	case T_MUTEX:
		l = ccs_lock_get(t->obj);
		return l->owner < 0 || t->timed_out;
	case T_RD:
		l = ccs_lock_get(t->obj);
		return l->owner < 0 || t->timed_out;
	case T_WR:
		l = ccs_lock_get(t->obj);
		return (l->owner < 0 && l->readers == 0) || t->timed_out;
	case T_COND:
		return t->signaled || t->timed_out;
	case T_JOIN:
		return ((const struct sthread *)t->obj)->state == T_DEAD;
	case T_BARRIER:
		return ccs_lock_get(t->obj)->gen != t->wait_seq;
	case T_DEAD:
		return 0;
	}
	return 0;
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
	for (int i = 0; i < ccs_nthreads; i++) {
		struct sthread *t = ccs_threads[i];
		if (t->state == T_DEAD)
			continue;
		put(buf, sizeof(buf), &n, "%sthread %d waits for %s", n ? "; " : "", t->tid,
		    state_names[t->state]);
		if (t->state == T_MUTEX || t->state == T_WR || t->state == T_RD) {
			struct lockst *l = ccs_lock_get(t->obj);
			put(buf, sizeof(buf), &n, " #%d", l->serial);
			if (l->owner >= 0)
				put(buf, sizeof(buf), &n, " held by thread %d", ccs_threads[l->owner]->tid);
			else if (l->readers > 0)
				put(buf, sizeof(buf), &n, " held by %d readers", l->readers);
		} else if (t->state == T_JOIN) {
			put(buf, sizeof(buf), &n, " of thread %d", ((struct sthread *)t->obj)->tid);
		} else if (t->state == T_COND || t->state == T_BARRIER) {
			put(buf, sizeof(buf), &n, " #%d", ccs_lock_get(t->obj)->serial);
		}
	}
	finding("deadlock", CRASHCHECK_EXIT_DEADLOCK, "%s", buf);
}

/* default_choice -- the rule the schedule file is relative to (internal) */
static struct sthread *default_choice(struct sthread *cur, struct sthread **cand, int n, int spin)
{
	int stay = runnable(cur) && cur->state != T_DEAD;
	if (stay && !spin && cur->run_len < ccs_fair_limit)
		return cur;
	for (int k = 1; k <= ccs_nthreads; k++) {
		struct sthread *t = ccs_threads[(cur->idx + k) % ccs_nthreads];
		for (int i = 0; i < n; i++)
			if (cand[i] == t && (t != cur || n == 1))
				return t;
	}
	return cand[0];
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
	ccs_steps++;
	cur->run_len++;
	/* a replay of a writer aim with a prefix: loads are points from where its prefix ended */
	if (ccs_load_from && ccs_steps == ccs_load_from)
		ccs_load_points = 1;
	/* fast path of a replay: no entry for this step and the default rule says stay */
	if (ccs_strat == S_REPLAY && cur->state == T_RUN && !spin && cur->run_len < ccs_fair_limit &&
	    (ccs_replay_pos >= ccs_nreplay || ccs_replay[ccs_replay_pos].step > ccs_steps) && !ccs_max_steps)
		return;
	if (ccs_max_steps && ccs_steps > ccs_max_steps)
		finding("hang", CRASHCHECK_EXIT_HANG, "the run took more than %llu scheduling steps "
			"(CRASHCHECK_SCHED_MAX_STEPS)", (unsigned long long)ccs_max_steps);
	for (int i = 0; i < ccs_nthreads; i++)
		if (runnable(ccs_threads[i]))
			cand[n++] = ccs_threads[i];
	if (n == 0) {
		/* nothing can run: a timed wait expires (time passes), else deadlock */
		for (int i = 0; i < ccs_nthreads && n == 0; i++)
			if (ccs_threads[i]->timed && ccs_threads[i]->state != T_RUN && ccs_threads[i]->state != T_DEAD) {
				ccs_threads[i]->timed_out = 1;
				cand[n++] = ccs_threads[i];
			}
		if (n == 0)
			report_deadlock();
	}
	struct sthread *def = default_choice(cur, cand, n, spin);
	struct sthread *next = ccs_choose(cur, cand, n, spin, def);
	if (next != def) {
		recorded++;
		ccs_out_line("%llu %d\n", (unsigned long long)ccs_steps, next->tid);
	}
	if (next == cur)
		return;
	/* the mark carries where CUR was preempted: the site of the access or atomic (the event's
	   site), else the interposed call's name in the label, since libc's callers have no site */
	if (cur->at_site != CC_NO_SITE)
		trace_mark_at(cur->at_site, "cc-sched switch step=%llu from=%d to=%d",
			      (unsigned long long)ccs_steps, cur->tid, next->tid);
	else
		trace_mark("cc-sched switch step=%llu from=%d to=%d at=%s", (unsigned long long)ccs_steps,
			   cur->tid, next->tid, cur->at_what ? cur->at_what : "unknown");
	next->run_len = 0;
	__atomic_store_n(&running, next, __ATOMIC_RELAXED);
	futex_give(&next->go);
	if (cur->state != T_DEAD)
		futex_wait(&cur->go);
}

/*
 * point_ex -- a scheduling point of the calling thread.  SPIN: it made no
 * progress (-1: neither progress nor spin, a traced load, which a spinning
 * thread may repeat as often as its unchanged atomic loads); KEEP: progress
 * that does not forget the thread's atomic-load pairs (a load of a new
 * value) (internal)
 */
static void point_ex(int spin, int keep)
{
	struct sthread *t = modelled();
	if (!t || !__cc_sched_on)
		return;
	if (spin < 0) {
		spin = 0;
	} else if (spin) {
		if (++ccs_spin_run > ccs_spin_limit)
			finding("livelock", CRASHCHECK_EXIT_LIVELOCK,
				"%llu spin steps in a row (failed CAS, unchanged atomic loads, yields) "
				"with no thread making progress", (unsigned long long)ccs_spin_run);
	} else {
		ccs_spin_run = 0;
		if (!keep)
			t->npairs = 0;
	}
	if (t->in_op && ++t->op_steps > ccs_op_limit)
		finding("livelock", CRASHCHECK_EXIT_LIVELOCK,
			"thread %d ran %llu steps in operation %llu without finishing it", t->tid,
			(unsigned long long)t->op_steps, (unsigned long long)t->op_index);
	reschedule(t, spin);
}

void ccs_point(int spin)
{
	point_ex(spin, 0);
}

/* ccs_block -- wait (as STATE, on OBJ) until runnable again; returns 1 if a timeout expired (internal) */
int ccs_block(struct sthread *t, enum tstate state, void *obj, int timed)
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
		ccs_point(0);
}

/* cc_sched_access -- a traced PM load or plain store of SIZE bytes at ADDR at SITE (rt_hooks.c):
 * a point; for the stale strategy also an access to the words it covers (ccs_stale_pm), so a
 * thread that read a word of a node another thread wrote may be parked until that word is
 * written again (a reader holding a leaf that is freed, reallocated and refilled) */
void cc_sched_access(uint32_t site, uintptr_t addr, uint64_t size, int write)
{
	/* a load is a point under stale and aim only (and their replays): the random walk and PCT
	 * keep the steps they were tuned on (PCT draws its change points from about 50 steps an
	 * operation, which loads would spread over a run several times longer) */
	if (!write && !ccs_load_points)
		return;
	struct sthread *t = modelled_at(site, "pm_access");
	if (!t)
		return;
	if (ccs_strat == S_STALE && (!write || cc_in_pm(addr, size)))
		ccs_stale_pm(t, addr, size, write);
	if (ccs_aim_nth)
		ccs_aim_access(t, site, addr, size, write);
	/* a load is no progress: a wait loop re-reading a node would otherwise reset the spin count
	 * at every read, and a thread spinning on a parked one's work never gets it woken */
	if (write)
		ccs_point(0);
	else
		point_ex(-1, 1);
}

/* cc_sched_op -- operation INDEX begins (BEGIN) or ends (rt_api.c), called at SITE */
void cc_sched_op(int begin, uint64_t index, uint32_t site)
{
	struct sthread *t = modelled_at(site, begin ? "crashcheck_op_begin" : "crashcheck_op_end");
	if (!t)
		return;
	t->in_op = begin;
	t->op_index = index;
	t->op_steps = 0;
	if (ccs_strat == S_STALE && !begin)
		ccs_stale_op_end(t);
	ccs_point(0);
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
			int i = t->npairs < NPAIRS ? t->npairs++ : (int)(ccs_steps % NPAIRS);
			t->pair_addr[i] = (uintptr_t)addr;
			t->pair_val[i] = val;
			if (ccs_strat == S_STALE)
				ccs_stale_access(t, addr, CC_SCHED_LOAD);
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
	if (ccs_strat == S_STALE && !spin && (op & 0xf) != CC_SCHED_LOAD)
		ccs_stale_access(t, addr, (int)(op & 0xf));
	/* a writer aim may park right after an atomic store or RMW to PM (a CAS that publishes a
	 * child before its flush); a failed CAS stored nothing */
	if (ccs_aim_reader && !spin && (op & 0xf) != CC_SCHED_LOAD && (op & 0xf) != CC_SCHED_CAS_FAIL &&
	    cc_in_pm((uintptr_t)addr, size ? size : 8))
		ccs_aim_access(t, cc_hook_site(site), (uintptr_t)addr, size ? size : 8, 1);
	ccs_point(spin);
}

/* trampoline -- a registered thread: wait for the token, run, exit (internal) */
void ccs_thread_exit(struct sthread *t);
static void *trampoline(void *arg)
{
	struct sthread *t = arg;
	ccs_self = t;
	cc_tl_tid = t->tid;
	futex_wait(&t->go);
	void *r = t->start(t->arg);
	ccs_thread_exit(t);
	return r;
}

void ccs_thread_exit(struct sthread *t)
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
		uint64_t now = __atomic_load_n(&ccs_steps, __ATOMIC_RELAXED);
		if (now != last || !__atomic_load_n(&__cc_sched_on, __ATOMIC_RELAXED)) {
			last = now;
			still_ms = 0;
			continue;
		}
		still_ms += 50;
		if (still_ms >= ccs_hang_ms) {
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
	if (!cur || ccs_nthreads >= MAX_THREADS)
		return cc_real_pthread_create(thread, attr, start, arg);
	struct sthread *t = calloc(1, sizeof(*t));
	if (!t)
		return EAGAIN;
	t->idx = ccs_nthreads;
	t->tid = cc_next_tid();
	t->at_site = CC_NO_SITE;
	t->start = start;
	t->arg = arg;
	t->prio = ccs_pct_depth + 1 + (int64_t)(ccs_rng() >> 24);
	int rc = cc_real_pthread_create(thread, attr, trampoline, t);
	if (rc != 0) {
		free(t);
		return rc;
	}
	t->pt = *thread;
	ccs_threads[ccs_nthreads++] = t;
	nlive++;
	if (nlive >= 2 && !__cc_sched_on) {
		static int watching;
		pthread_t w;
		if (!watching && ccs_hang_ms > 0 && cc_real_pthread_create(&w, NULL, watchdog, NULL) == 0) {
			pthread_detach(w);
			watching = 1;
		}
		__cc_sched_on = 1;
		if (ccs_steps == 0)
			trace_mark("cc-sched start"); /* no strategy: a replay leaves the same trace */
	}
	ccs_sync("spawn", t->tid);
	ccs_point(0);
	return 0;
}

/* ---- public API ---- */

int crashcheck_sched_active(void)
{
	return cc_sched_enabled;
}

void crashcheck_sched_yield(void)
{
	if (modelled_at(CC_NO_SITE, "crashcheck_sched_yield"))
		ccs_point(1);
}

/* ---- start-up ---- */

static void at_exit(void)
{
	finish_record("ok");
}

static void in_child(void)
{
	/* a forked child has one thread: it runs alone, unrecorded */
	for (int i = 0; i < ccs_nthreads; i++)
		if (ccs_threads[i] != ccs_self)
			ccs_threads[i]->state = T_DEAD;
	nlive = 1;
	__cc_sched_on = 0;
	ccs_out_fd = -1;
}

/* sched_start -- read $CRASHCHECK_SCHED after the trace is open (internal) */
__attribute__((constructor(102)))
static void sched_start(void)
{
	const char *spec = getenv("CRASHCHECK_SCHED");
	if (spec == NULL || *spec == '\0')
		return;
	ccs_read_spec(spec);
	struct sthread *t = calloc(1, sizeof(*t));
	if (!t)
		abort();
	t->tid = cc_tid();
	t->at_site = CC_NO_SITE;
	t->pt = pthread_self();
	t->prio = ccs_pct_depth + 1 + (int64_t)(ccs_rng() >> 24);
	ccs_threads[ccs_nthreads++] = t;
	nlive = 1;
	ccs_self = t;
	running = t;
	cc_sched_enabled = 1;
	atexit(at_exit);
	pthread_atfork(NULL, NULL, in_child);
}
