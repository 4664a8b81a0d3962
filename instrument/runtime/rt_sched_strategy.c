/*
 * rt_sched_strategy.c -- the deterministic scheduler's strategies: at a
 * scheduling point, which runnable thread runs next.  Random walk, PCT
 * (priorities with d - 1 change points), stale (park a thread after an
 * atomic access until others write the word or end operations), aim (stale's
 * priorities without random parking, one thread parked at one given access
 * until others end operations), and replay of a schedule file; each is
 * seeded by the run's SEED, so the same spec gives the same choices.  The
 * default rule the schedule file is relative to is the core's (rt_sched.c);
 * the spec is read by rt_sched_spec.c.
 */
#include <stdint.h>
#include <stddef.h>

#include "rt_sched.h"

enum strategy ccs_strat;
uint64_t ccs_rng_state;
int ccs_pct_depth;
uint64_t *ccs_pct_changes;  /* pct_depth - 1 change points, sorted */
static int64_t pct_low;     /* next priority for a spinning thread: below all others */
uint64_t ccs_stale_period;  /* stale: park after about one access in this many */
int64_t ccs_stale_top;      /* next priority of a woken thread: above all others */
static uint64_t stale_seq;
#define STALE_SPINS 64         /* spin steps in a row that wake a parked thread */
#define AIM_PARK_STEPS 50000   /* aim: steps of the others that end its park at the latest */
int ccs_aim_tid;
uint32_t ccs_aim_site;
uint64_t ccs_aim_nth;        /* 0: no aim */
int ccs_aim_ops;
static uint64_t aim_seen;    /* the aimed thread's accesses at the aimed site so far */
int ccs_aim_reader;          /* writer aims: the reader thread (0: a plain aim) */
uint32_t ccs_aim_rsite;      /* ... and the site of its load */
static struct sthread *aim_parked;
static uintptr_t aim_lo, aim_hi;   /* the parked writer's stored bytes */
static int aim_read;         /* the reader loaded them while the writer was parked */
static struct sthread *aim_held;   /* writer aims: the reader held before RSITE until the store */
static int aim_holds;        /* ... how often so far */
#define AIM_HOLDS 8
int ccs_load_points;
int ccs_aim_prefix;
uint64_t ccs_load_from;
struct entry *ccs_replay;
size_t ccs_nreplay, ccs_replay_pos, ccs_replay_ignored;

/* ccs_rng -- splitmix64 (internal) */
uint64_t ccs_rng(void)
{
	uint64_t z = (ccs_rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t ccs_below(uint64_t n) { return n ? ccs_rng() % n : 0; }

static struct sthread *by_tid(int tid)
{
	for (int i = 0; i < ccs_nthreads; i++)
		if (ccs_threads[i]->tid == tid)
			return ccs_threads[i];
	return NULL;
}

static void stale_wake(struct sthread *u);

/* replay_pick -- the schedule file's thread at this step if it is among the N candidates, else
 * DEF, the default rule's (internal) */
static struct sthread *replay_pick(struct sthread **cand, int n, struct sthread *def)
{
	while (ccs_replay_pos < ccs_nreplay && ccs_replay[ccs_replay_pos].step < ccs_steps)
		ccs_replay_pos++, ccs_replay_ignored++;
	if (ccs_replay_pos < ccs_nreplay && ccs_replay[ccs_replay_pos].step == ccs_steps) {
		struct sthread *want = by_tid(ccs_replay[ccs_replay_pos++].tid);
		for (int i = 0; i < n; i++)
			if (cand[i] == want)
				return want;
		ccs_replay_ignored++;
	}
	return def;
}

static void aim_rearm(struct sthread *cur, struct sthread **cand, int n);

/* ccs_choose -- the strategy's pick among N candidates (internal) */
struct sthread *ccs_choose(struct sthread *cur, struct sthread **cand, int n, int spin,
			      struct sthread *def)
{
	int cur_ok = runnable(cur) && cur->state != T_DEAD;
	int avoid = cur_ok && n > 1 && (spin || cur->run_len >= ccs_fair_limit);
	switch (ccs_strat) {
	case S_RANDOM: {
		if (!avoid)
			return cand[ccs_below((uint64_t)n)];
		int k = (int)ccs_below((uint64_t)n - 1);
		for (int i = 0; i < n; i++)
			if (cand[i] != cur && k-- == 0)
				return cand[i];
		return def;
	}
	case S_PCT: {
		for (int i = 0; i < ccs_pct_depth - 1; i++)
			if (ccs_pct_changes[i] == ccs_steps && cur_ok)
				cur->prio = ccs_pct_depth - 1 - i;
		if (avoid)
			cur->prio = --pct_low;
		struct sthread *best = cand[0];
		for (int i = 1; i < n; i++)
			if (cand[i]->prio > best->prio)
				best = cand[i];
		return best;
	}
	case S_STALE: {
		/* a writer aim's prefix: the clean run's own choices up to the aimed store */
		if (ccs_aim_prefix)
			return replay_pick(cand, n, def);
		/* the highest priority among threads not parked; if every runnable
		 * thread is parked, or the others have spun STALE_SPINS steps in a
		 * row (they may wait for what the parked one is to do), the earliest
		 * parked one is woken (its word may never be written again) */
		if (avoid)
			cur->prio = --pct_low;
		aim_rearm(cur, cand, n);
		struct sthread *best = NULL, *first = NULL;
		for (int i = 0; i < n; i++)
			if (cand[i]->park_addr && (ccs_spin_run >= STALE_SPINS ||
			    (cand[i]->park_until && ccs_steps >= cand[i]->park_until)) &&
			    (!first || cand[i]->park_seq < first->park_seq))
				first = cand[i];
		if (first) {
			first->park_addr = 0;
			first->prio = ++ccs_stale_top;
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
		return replay_pick(cand, n, def);
	}
	return def;
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
	for (int i = 0; i < ccs_nthreads; i++)
		if (ccs_threads[i] != t && runnable(ccs_threads[i]))
			return 1;
	return 0;
}

/*
 * ccs_stale_access -- the stale strategy at an atomic access of T to ADDR that
 * made progress (a load of a new value; WRITE: a store, RMW or successful
 * CAS).  A write wakes every other thread parked on ADDR once it has seen
 * the number of writes it waits for, and the woken thread runs next, before
 * the writer's next step.  Then T itself is parked on ADDR with probability
 * 1/stale_period, until other threads write ADDR once or twice or end one
 * to three operations (both drawn): what T has just read or written is then
 * stale, which is the window of most lock-free bugs (internal)
 */
void ccs_stale_access(struct sthread *t, const void *addr, int kind)
{
	uintptr_t a = (uintptr_t)addr;
	struct word *w = word_of(a);
	uint64_t me = 1ull << (t->idx & 63);
	int write = kind != CC_SCHED_LOAD;
	if (write)
		for (int i = 0; i < ccs_nthreads; i++) {
			struct sthread *u = ccs_threads[i];
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
	 * parked, ccs_choose() wakes the earliest parked (its window ends, T's
	 * begins); waiting for unparked ones let an early park block every
	 * later one for a whole section */
	if (shared && ccs_stale_period && other_runnable(t) && ccs_below(ccs_stale_period) == 0) {
		t->park_addr = a;
		t->park_writes = 1 + (int)ccs_below(2);
		t->park_ops = 1 + (int)ccs_below(3);
		t->park_seq = ++stale_seq;
	}
}

/*
 * ccs_stale_pm -- the stale strategy at a traced PM access (loads are traced when the code was
 * built with them): a plain store of [ADDR, ADDR+SIZE) is a write of each 8-byte word it covers
 * (waking threads parked on them; the writer is never parked: parking writers too diluted the
 * readers' windows, Heart's free-no-epoch went unfound), a load one of its first word, which
 * parks T as an atomic load of a word another thread wrote would (internal)
 */
#define STALE_PM_WORDS 64
void ccs_stale_pm(struct sthread *t, uintptr_t addr, uint64_t size, int write)
{
	uintptr_t w = addr & ~(uintptr_t)7;
	if (!write) {
		ccs_stale_access(t, (const void *)w, CC_SCHED_LOAD);
		return;
	}
	uint64_t me = 1ull << (t->idx & 63);
	for (int n = 0; w < addr + size && n < STALE_PM_WORDS; w += 8, n++) {
		for (int i = 0; i < ccs_nthreads; i++) {
			struct sthread *u = ccs_threads[i];
			if (u != t && u->park_addr == w && --u->park_writes <= 0)
				stale_wake(u);
		}
		struct word *e = word_of(w);
		if (e)
			e->writers |= me;
	}
}

/*
 * ccs_aim_access -- the aim strategy at a traced PM access of T at SITE (before a load, after a
 * store): at the aimed thread's AIM_NTH access at the aimed site it is parked, right there, until
 * the other threads have ended AIM_OPS operations, whatever they write (internal).  The harness
 * aims at an access of a word another thread's operation stored in the run it just checked
 * (harness/check/aims.py): held there, the thread reads, or overwrites, what that operation
 * left, a window such as a lookup holding a leaf another thread frees and reallocates, one
 * scheduling point wide, which random parking almost never hits.
 */
void ccs_aim_access(struct sthread *t, uint32_t site, uintptr_t addr, uint64_t size, int write)
{
	if (ccs_aim_reader && !write && t->tid == ccs_aim_reader && site == ccs_aim_rsite && aim_parked &&
	    addr < aim_hi && addr + (size ? size : 1) > aim_lo)
		aim_read = 1;
	if (ccs_aim_reader && !write && t->tid == ccs_aim_reader && site == ccs_aim_rsite &&
	    aim_seen < ccs_aim_nth && aim_holds < AIM_HOLDS && !ccs_aim_prefix) {
		/* a writer aim's reader at RSITE before the writer's store: held until the store (not
		 * for a number of operations: the writer's own before the store would end it), so a
		 * load the checked run made before the store can come inside its window instead */
		/* (a writer not spawned yet counts: the thread that spawns it runs meanwhile) */
		struct sthread *w = by_tid(ccs_aim_tid);
		if (w ? w->state != T_DEAD && runnable(w) : other_runnable(t)) {
			aim_holds++;
			aim_held = t;
			t->park_addr = addr ? addr : 1;
			t->park_writes = INT32_MAX;
			t->park_ops = 0;
			t->park_seq = ++stale_seq;
			t->park_until = ccs_steps + AIM_PARK_STEPS;
		}
		return;
	}
	if (t->tid != ccs_aim_tid || site != ccs_aim_site || ++aim_seen != ccs_aim_nth)
		return;
	if (ccs_aim_prefix) {
		/* the prefix ends at the store: from the next step on, the aim's own rule, with loads
		 * as points (the schedule file says from which step, so a replay counts as this run) */
		ccs_aim_prefix = 0;
		if (!ccs_load_points) {
			ccs_load_points = 1;
			ccs_load_from = ccs_steps + 1;
			ccs_out_line("# load-points-from %llu\n", (unsigned long long)ccs_load_from);
		}
	}
	if (aim_held) {
		/* the store is made: the held reader comes now, its load (whose hook has run) of
		 * these bytes counted as a load of the pending store */
		if (aim_held->park_addr) {
			if (aim_held->park_addr >= addr && aim_held->park_addr < addr + (size ? size : 1))
				aim_read = 1;
			stale_wake(aim_held);
		}
		aim_held = NULL;
	}
	if (ccs_aim_reader) {
		aim_parked = t;
		aim_lo = addr;
		aim_hi = addr + (size ? size : 1);
	}
	/* no other thread can run (the reader waits for a lock T holds): a writer aim's writer is
	 * parked at its next point where one can (aim_rearm), a plain aim's not at all */
	if (!other_runnable(t))
		return;
	t->park_addr = addr ? addr : 1;
	t->park_writes = INT32_MAX;
	t->park_ops = ccs_aim_ops;
	t->park_seq = ++stale_seq;
	/* the others may be waiting for T in a way no spin shows (a loop of loads and fresh
	 * atomics around a node T froze): a bound, far above the steps of a few operations */
	t->park_until = ccs_steps + AIM_PARK_STEPS;
}

/*
 * aim_op_end -- a writer aim (aim:...:READER:RSITE): the writer parked right after its store,
 * before its flush, is woken once the reader has loaded those bytes at RSITE and then ended its
 * operation (it acted on the pending value: returned it, or went on to store), so the trace
 * shows the window the one-execution analysis predicted (harness/check/race_windows.py) (internal)
 */
static void aim_op_end(struct sthread *t)
{
	if (aim_read && t->tid == ccs_aim_reader && aim_parked) {
		aim_read = 0;
		if (aim_parked->park_addr)
			stale_wake(aim_parked);
		aim_parked = NULL;   /* done: the reader acted */
	}
}

/*
 * aim_rearm -- a writer aim's writer woken early (every other thread was blocked, on a lock it
 * holds for one, or spun) is parked again at its next scheduling point where another thread can
 * run, until the reader acted or AIM_REARMS times: a writer that stores under a lock and flushes
 * after releasing it is held right after the release, where the reader can come (internal)
 */
#define AIM_REARMS 16
static void aim_rearm(struct sthread *cur, struct sthread **cand, int n)
{
	static int rearms;
	if (!ccs_aim_reader || cur != aim_parked || cur->park_addr || rearms >= AIM_REARMS)
		return;
	for (int i = 0; i < n; i++)
		if (cand[i] != cur && !cand[i]->park_addr) {
			rearms++;
			cur->park_addr = aim_lo ? aim_lo : 1;
			cur->park_writes = INT32_MAX;
			cur->park_ops = ccs_aim_ops;
			cur->park_seq = ++stale_seq;
			cur->park_until = ccs_steps + AIM_PARK_STEPS;
			return;
		}
}

/* stale_wake -- end U's parking: it runs next, above every other thread (internal) */
static void stale_wake(struct sthread *u)
{
	u->park_addr = 0;
	u->prio = ++ccs_stale_top;
}

/*
 * ccs_stale_op_end -- T ended an operation: threads parked for a number of
 * other threads' operations count it down; T itself draws a new priority,
 * so that whole operations of the threads interleave at random (internal)
 */
void ccs_stale_op_end(struct sthread *t)
{
	aim_op_end(t);
	for (int i = 0; i < ccs_nthreads; i++) {
		struct sthread *u = ccs_threads[i];
		if (u != t && u->park_addr && u->park_ops && --u->park_ops == 0)
			stale_wake(u);
	}
	t->prio = 2 + (int64_t)(ccs_rng() >> 24);
}
