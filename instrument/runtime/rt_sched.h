/*
 * rt_sched.h -- what the deterministic scheduler's files share (internal)
 *
 * The scheduler (docs/scheduler.md) is split by job: rt_sched.c is its
 * core (the threads, the token, scheduling points, the lock model's table,
 * findings and the schedule file), rt_sched_strategy.c the strategies that
 * pick the next thread (random walk, PCT, stale, replay),
 * rt_sched_pthread.c the interposed pthread functions and libc's real
 * ones, rt_sched_spec.c the reading of CRASHCHECK_SCHED and its companion
 * variables at start-up.  Names shared between them carry the ccs_ prefix:
 * the runtime is linked into the code under test, so a plain name like
 * threads or steps could clash with the program's.
 *
 * The runtime is an archive, and a member is linked only when something
 * refers to it: the core calls into each of the other three and each of
 * them into the core, so a program that needs any part gets all of them
 * (the constructor that starts the scheduler is in the core).
 */
#ifndef CC_RT_SCHED_H
#define CC_RT_SCHED_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_internal.h"

enum tstate { T_RUN, T_MUTEX, T_RD, T_WR, T_COND, T_JOIN, T_BARRIER, T_DEAD };

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
	uint64_t park_until;     /* aim: the step its parking ends at the latest (0: no bound) */
	uint32_t at_site;        /* where it reached its current scheduling point: a site id, */
	const char *at_what;     /* or CC_NO_SITE and the interposed call's name (switch marks) */
	pthread_t pt;
	void *(*start)(void *);
	void *arg;
};

#define MAX_THREADS 1024
extern struct sthread *ccs_threads[MAX_THREADS];
extern int ccs_nthreads;
extern __thread struct sthread *ccs_self;
extern uint64_t ccs_steps, ccs_spin_run;

/* limits (environment, docs/scheduler.md): rt_sched.c, set by rt_sched_spec.c */
extern uint64_t ccs_spin_limit, ccs_op_limit, ccs_fair_limit, ccs_hang_ms;
extern uint64_t ccs_max_steps;      /* 0: no bound */

/* the schedule file being written (CRASHCHECK_SCHED_OUT), or -1 */
extern int ccs_out_fd;
void ccs_out_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- rt_sched.c: the lock model and the scheduling points ---- */

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
struct lockst *ccs_lock_get(const void *key);
void ccs_lock_reset(const void *key);

int ccs_runnable_slow(const struct sthread *t);
void ccs_point(int spin);
void ccs_sync(const char *what, int n);
int ccs_block(struct sthread *t, enum tstate state, void *obj, int timed);
void ccs_thread_exit(struct sthread *t);

/* runnable -- can T go on if chosen? (internal) */
static inline int runnable(const struct sthread *t)
{
	return t->state == T_RUN || ccs_runnable_slow(t);
}

/* modelled -- is the calling thread under the scheduler? (internal) */
static inline struct sthread *modelled(void)
{
	struct sthread *t = ccs_self;
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

/* ---- rt_sched_strategy.c: who runs next (its parameters are set by rt_sched_spec.c) ---- */

enum strategy { S_RANDOM, S_PCT, S_STALE, S_REPLAY };
extern enum strategy ccs_strat;
extern uint64_t ccs_rng_state;
extern int ccs_pct_depth;
extern uint64_t *ccs_pct_changes;  /* pct_depth - 1 change points, sorted */
extern uint64_t ccs_stale_period;  /* stale: park after about one access in this many */
extern int64_t ccs_stale_top;      /* next priority of a woken thread: above all others */
/* aim: park thread AIM_TID at its AIM_NTH traced access at site AIM_SITE until the others have
 * ended AIM_OPS operations (aim_nth 0: no aim) */
extern int ccs_aim_tid;
extern uint32_t ccs_aim_site;
extern uint64_t ccs_aim_nth;
extern int ccs_aim_ops;
/* a writer aim: wake the parked writer once thread AIM_READER loaded its bytes at AIM_RSITE and
 * ended that operation (aim_reader 0: a plain aim) */
extern int ccs_aim_reader;
extern uint32_t ccs_aim_rsite;
/* traced PM loads are scheduling points (stale, aim, and a replay of either) */
extern int ccs_load_points;
/* a writer aim with a prefix (CRASHCHECK_SCHED_PREFIX): the prefix file's schedule is replayed
 * until the writer's aimed store (AIM_PREFIX 1 until then); LOAD_FROM: the step from which
 * traced loads are points (the aimed run's schedule file says it, a replay of it takes it) */
extern int ccs_aim_prefix;
extern uint64_t ccs_load_from;
struct entry { uint64_t step; int tid; };
extern struct entry *ccs_replay;
extern size_t ccs_nreplay, ccs_replay_pos, ccs_replay_ignored;

uint64_t ccs_rng(void);
uint64_t ccs_below(uint64_t n);
struct sthread *ccs_choose(struct sthread *cur, struct sthread **cand, int n, int spin, struct sthread *def);
void ccs_stale_access(struct sthread *t, const void *addr, int kind);
void ccs_stale_pm(struct sthread *t, uintptr_t addr, uint64_t size, int write);
void ccs_aim_access(struct sthread *t, uint32_t site, uintptr_t addr, uint64_t size, int write);
void ccs_stale_op_end(struct sthread *t);

/* ---- rt_sched_spec.c ---- */

/* ccs_read_spec -- set the strategy and the limits from SPEC ($CRASHCHECK_SCHED) and the
 * environment, open the schedule file; a bad spec ends the run (exit 2) */
void ccs_read_spec(const char *spec);

#endif /* CC_RT_SCHED_H */
