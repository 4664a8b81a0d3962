/*
 * rangelock.c -- the lock-free skip-list range lock (Nguyen's thesis, Listings 3.1-3.2, 4.1-4.4)
 *
 * Design
 * ------
 * A node holds one held range [start, end] and top+1 forward references
 * next[0..top].  A reference is a node pointer with a mark in its low bit
 * (Listing 3.2's AtomicMarkableReference, packed into one word): a marked
 * next[l] means "this node is logically deleted at level l".  Level 0 is the
 * set; the upper levels are shortcuts.
 *
 *   tryLock   findInsert; if no held range overlaps, link a new node at
 *             level 0 by CAS (the linearization point), then upwards.
 *   release   findExact; mark next[top..1], then CAS the mark into next[0]
 *             (the linearization point), then findDelete snips it.
 *   find*     from the head's top level down; at each level skip and snip
 *             (CAS pred.next from curr to succ) every marked node, restart
 *             from the head when a snip fails; stop before the first node
 *             whose start is >= the target's start.
 *
 * Sentinels.  Ranges may touch 0 and 2^64-1, so no key value is free to
 * act as -infinity or +infinity.  Head and tail are therefore recognised by
 * address, never by their (unused) start/end: start_lt() and the overlap
 * tests treat head as below and tail as above every range.
 *
 * Memory.  Nodes are never freed while the lock exists (rl_destroy frees
 * every node it ever linked, from a lock-free list of all nodes), so a
 * thread that still holds a pointer to an unlinked node reads valid memory.
 * A node that tryLock allocated but never linked is freed at once.
 *
 * Memory order: every access to a next field is __ATOMIC_SEQ_CST (the
 * thesis uses acquire/release; seq_cst is simpler to argue and the cost is
 * measured in bench/rangelock).  start, end and top are written before the
 * node is published by a CAS and never change.
 *
 * Where the thesis is wrong or open (each spot says more):
 *  - Listing 4.4's find compares curr's start before it looks at curr's
 *    mark, and snips only nodes whose start is below the target: a released
 *    node with the target's own start is never snipped, and the next
 *    tryLock of that range sees it as held ("the node found cannot be
 *    marked" does not hold).  We follow Herlihy & Shavit's order (snip,
 *    then compare); the literal loop is the seeded bug BUG_RL_PAPER_FIND.
 *  - Listing 4.2 links upper levels with the successors of the first
 *    findInsert forever (newNode->next[level] is never refreshed after the
 *    re-find at line 24), the erratum of Herlihy & Shavit's first edition.
 *    We refresh next[level] by CAS and stop linking a node that is being
 *    released.  (The literal form keeps the lists sorted, so it only costs
 *    shortcuts here; it is not a seeded bug.)
 *  - Listing 4.2 allocates a new node on every retry (line 10) and leaks
 *    the previous one; we allocate once per call.
 *  - randomLevel is not given: we draw a geometric level (p = 1/2) capped at
 *    RL_MAX_LEVEL from a per-thread xorshift64* generator mixed with a hash
 *    of the range (random_level says why).
 *
 * Seeded bugs (trees/rangelock/bugs.json) are #ifdef BUG_RL_* at their spot.
 * RL_NOISE() marks the racy windows; with -DRL_NOISE_INJECTION (the native
 * stress test) it sometimes yields the CPU there, so rare interleavings
 * become common.  It is empty otherwise.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rangelock.h"

#define MARK ((uintptr_t)1)

/* a marked reference: pointer | mark in bit 0 (nodes are at least 8-byte aligned) */
#define REF(p)       ((struct rl_node *)((p) & ~MARK))
#define IS_MARKED(p) ((p) & MARK)

struct rl_node {
	uint64_t start, end;        /* inclusive; unused in the sentinels */
	int top;                    /* highest level this node is linked at */
	struct rl_node *all;        /* list of every node, for rl_destroy */
	uintptr_t next[];           /* top + 1 marked references (atomic) */
};

struct rangelock {
	struct rl_node *head, *tail;
	struct rl_node *all;        /* every linked node (atomic push), freed by rl_destroy */
	uint64_t seed;
	unsigned threads;           /* per-thread generator ordinal (atomic) */
};

/* ---- atomics on marked references --------------------------------------- */

static inline uintptr_t ld(uintptr_t *p)
{
	return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}

static inline void st(uintptr_t *p, uintptr_t v)
{
	__atomic_store_n(p, v, __ATOMIC_SEQ_CST);
}

/* cas -- compareAndSet(expected, desired) on a whole marked reference */
static inline int cas(uintptr_t *p, uintptr_t expected, uintptr_t desired)
{
	return __atomic_compare_exchange_n(p, &expected, desired, 0, __ATOMIC_SEQ_CST,
					   __ATOMIC_SEQ_CST);
}

/* ---- per-thread level generator and noise -------------------------------- */

static __thread struct {
	const struct rangelock *owner;
	uint64_t state;
} rng;

/* mix64 -- splitmix64's finaliser: a well-spread hash of X (internal) */
static inline uint64_t mix64(uint64_t x)
{
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* next_random -- xorshift64* of this thread, seeded from the lock's seed and the
 * thread's ordinal among the lock's users, so a replayed schedule draws the same levels */
static uint64_t next_random(struct rangelock *rl)
{
	if (rng.owner != rl) {
		unsigned k = __atomic_fetch_add(&rl->threads, 1, __ATOMIC_SEQ_CST);
		rng.owner = rl;
		rng.state = mix64(rl->seed + 0x9e3779b97f4a7c15ull * (k + 1)) | 1;
	}
	rng.state ^= rng.state >> 12;
	rng.state ^= rng.state << 25;
	rng.state ^= rng.state >> 27;
	return rng.state * 0x2545f4914f6cdd1dull;
}

/*
 * random_level -- geometric, P(level >= l) = 2^-l, at most RL_MAX_LEVEL.
 * The thread's draw is mixed with the range: with the generator's fixed seed
 * alone, the first nodes of every thread had the same levels in every history
 * (1, 4, ...), so a race that needs a level-0 node between two others was
 * never set up; mixed with the range, the levels vary with what the history
 * locks and stay the same when the same history is replayed.
 */
static int random_level(struct rangelock *rl, uint64_t start, uint64_t end)
{
	uint64_t r = next_random(rl) ^ mix64(start * 0x9e3779b97f4a7c15ull + mix64(end));
	int level = 0;
	while ((r & 1) && level < RL_MAX_LEVEL) {
		level++;
		r >>= 1;
	}
	return level;
}

#ifdef RL_NOISE_INJECTION
static __thread uint64_t noise_state;
/* rl_noise -- yield in about one racy window of eight (internal, test builds) */
static void rl_noise(void)
{
	if (!noise_state)
		noise_state = (uint64_t)(uintptr_t)&noise_state | 1;
	noise_state ^= noise_state << 13;
	noise_state ^= noise_state >> 7;
	noise_state ^= noise_state << 17;
	if ((noise_state & 7) == 0)
		sched_yield();
}
#define RL_NOISE() rl_noise()
#else
#define RL_NOISE() ((void)0)
#endif

/* ---- nodes ---------------------------------------------------------------- */

/* node_new -- a zeroed node of TOP + 1 levels (internal) */
static struct rl_node *node_new(uint64_t start, uint64_t end, int top)
{
	struct rl_node *n = calloc(1, sizeof(*n) + (size_t)(top + 1) * sizeof(uintptr_t));
	if (!n)
		return NULL;
	n->start = start;
	n->end = end;
	n->top = top;
	return n;
}

/* remember -- push N onto the list of all nodes, for rl_destroy (internal) */
static void remember(struct rangelock *rl, struct rl_node *n)
{
	struct rl_node *old = __atomic_load_n(&rl->all, __ATOMIC_SEQ_CST);
	do
		n->all = old;
	while (!__atomic_compare_exchange_n(&rl->all, &old, n, 1, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
}

/* start_lt -- N comes before a range starting at X: head always, tail never (internal) */
static inline int start_lt(const struct rangelock *rl, const struct rl_node *n, uint64_t x)
{
	if (n == rl->head)
		return 1;
	if (n == rl->tail)
		return 0;
	return n->start < x;
}

/* ---- find ------------------------------------------------------------------ */

/*
 * find -- Listing 4.4: fill PREDS/SUCCS (may be NULL: findDelete) with, at each
 * level, the last node starting before START and the node after it, snipping
 * every marked node met on the way.  Afterwards preds[0] is a node whose start
 * is below START (or head) and succs[0] the first node at level 0 whose start
 * is >= START (or tail), both unmarked when they were read (internal)
 */
static void find(struct rangelock *rl, uint64_t start, struct rl_node **preds, struct rl_node **succs)
{
	struct rl_node *pred, *curr, *succ;
retry:
	pred = rl->head;
	for (int level = RL_MAX_LEVEL; level >= 0; level--) {
		curr = REF(ld(&pred->next[level]));
#ifndef BUG_RL_PAPER_FIND
		/* Herlihy & Shavit's order: first skip curr if it is marked, then compare */
		for (;;) {
			if (curr == rl->tail)
				break;
			RL_NOISE();
#ifdef BUG_RL_SUCC_BEFORE_MARK
			/* BUG: successor and mark read by two loads; a node linked after curr
			 * in between is lost when the stale successor is snipped in */
			succ = REF(ld(&curr->next[level]));
			RL_NOISE();
			int marked = IS_MARKED(ld(&curr->next[level]));
#else
			uintptr_t cn = ld(&curr->next[level]);  /* successor and mark in one read */
			succ = REF(cn);
			int marked = IS_MARKED(cn);
#endif
			if (marked) {
				RL_NOISE();
				/* snip: pred must still point, unmarked, at curr */
				/*
				 * A failed snip restarts from the head.  (Carrying on from
				 * succ instead is a mistake of its own, but not one any result
				 * shows: a trylock's CAS still checks pred -> succ, and a
				 * released node left linked is snipped by the next find that
				 * passes it; the scheduler met it once in ~3,000 histories,
				 * so it is not a seeded bug.)
				 */
				if (!cas(&pred->next[level], (uintptr_t)curr, (uintptr_t)succ))
					goto retry;
				curr = succ;
				continue;
			}
			if (start_lt(rl, curr, start)) {
				pred = curr;
				curr = succ;
			} else {
				break;
			}
		}
#else
		/*
		 * BUG (paper-literal Listing 4.4 lines 13-29): the start is compared
		 * before the mark is looked at, so a marked node starting at or after
		 * START is never skipped and may come back as succs[0]; and after a
		 * snip, pred may advance onto a node with START itself (>=).
		 */
		int marked;
		while (start_lt(rl, curr, start)) {
			uintptr_t cn = ld(&curr->next[level]);
			succ = REF(cn);
			marked = IS_MARKED(cn);
			while (marked) {
				if (!cas(&pred->next[level], (uintptr_t)curr, (uintptr_t)succ))
					goto retry;
				curr = REF(ld(&pred->next[level]));
				if (curr == rl->tail) {
					succ = NULL;
					marked = 0;
					break;
				}
				cn = ld(&curr->next[level]);
				succ = REF(cn);
				marked = IS_MARKED(cn);
			}
			if (curr != rl->tail && start >= curr->start) {
				pred = curr;
				curr = succ;
			} else {
				break;
			}
		}
#endif
		if (preds) {
			preds[level] = pred;
			succs[level] = curr;
		}
	}
}

/* find_insert -- findInsert: does a held range overlap [START, END]? (internal) */
static int find_insert(struct rangelock *rl, uint64_t start, uint64_t end,
		       struct rl_node **preds, struct rl_node **succs)
{
	find(rl, start, preds, succs);
	struct rl_node *pred = preds[0], *curr = succs[0];
	/* thesis: !(start > pred->end && end < curr->start), with the sentinels as -inf / +inf */
	int right = curr != rl->tail && curr->start <= end;
#ifdef BUG_RL_OVERLAP_ONE_SIDE
	/* BUG: only the successor is tested; a held range starting before START
	 * and reaching into [START, END] is missed */
	(void)pred;
	return right;
#else
	int left = pred != rl->head && pred->end >= start;
	return left || right;
#endif
}

/* find_exact -- findExact: is exactly [START, END] at level 0 (as succs[0])? (internal) */
static int find_exact(struct rangelock *rl, uint64_t start, uint64_t end,
		      struct rl_node **preds, struct rl_node **succs)
{
	find(rl, start, preds, succs);
	struct rl_node *curr = succs[0];
	return curr != rl->tail && curr->start == start && curr->end == end;
}

/* find_delete -- findDelete: snip every marked node on the path to START (internal) */
static void find_delete(struct rangelock *rl, uint64_t start)
{
	find(rl, start, NULL, NULL);
}

/* ---- the API ---------------------------------------------------------------- */

/* rl_create -- an empty lock: head -> tail at every level */
struct rangelock *rl_create(uint64_t seed)
{
	struct rangelock *rl = calloc(1, sizeof(*rl));
	if (!rl)
		return NULL;
	rl->head = node_new(0, 0, RL_MAX_LEVEL);
	rl->tail = node_new(0, 0, RL_MAX_LEVEL);  /* tail's next[] stay NULL, never marked */
	if (!rl->head || !rl->tail) {
		free(rl->head);
		free(rl->tail);
		free(rl);
		return NULL;
	}
	for (int l = 0; l <= RL_MAX_LEVEL; l++)
		rl->head->next[l] = (uintptr_t)rl->tail;  /* Listing 3.1 initializeHead */
	rl->seed = seed;
	return rl;
}

/* rl_destroy -- free every node */
void rl_destroy(struct rangelock *rl)
{
	if (!rl)
		return;
	for (struct rl_node *n = rl->all, *nx; n; n = nx) {
		nx = n->all;
		free(n);
	}
	free(rl->head);
	free(rl->tail);
	free(rl);
}

/* rl_trylock -- Listing 4.2 */
int rl_trylock(struct rangelock *rl, uint64_t start, uint64_t end)
{
	if (start > end)
		return -1;
	int top = random_level(rl, start, end);
	struct rl_node *preds[RL_MAX_LEVEL + 1], *succs[RL_MAX_LEVEL + 1];
	struct rl_node *n = NULL;  /* allocated once, reused across retries (thesis: one per retry) */
	for (;;) {
		if (find_insert(rl, start, end, preds, succs)) {
			free(n);  /* never published */
			return 0;
		}
		if (!n && !(n = node_new(start, end, top)))
			return -1;
		for (int l = 0; l <= top; l++)
			st(&n->next[l], (uintptr_t)succs[l]);
		RL_NOISE();
#ifdef BUG_RL_CAS_AS_STORE
		/* BUG: compareAndSet split into a check and a store; two threads that
		 * both see pred -> succ both "link", and one of them is lost */
		if (ld(&preds[0]->next[0]) != (uintptr_t)succs[0])
			continue;
		RL_NOISE();
		st(&preds[0]->next[0], (uintptr_t)n);
#else
		/* the linearization point of a successful tryLock */
		if (!cas(&preds[0]->next[0], (uintptr_t)succs[0], (uintptr_t)n))
			continue;
#endif
		remember(rl, n);
		for (int l = 1; l <= top; l++) {
			for (;;) {
				/*
				 * Not in the thesis (Listing 4.2 lines 21-25): point n->next[l]
				 * at the successor of the latest find before linking, and stop
				 * once a release has marked n (it must not be linked further).
				 */
				uintptr_t nx = ld(&n->next[l]);
				if (IS_MARKED(nx))
					return 1;
				if (REF(nx) != succs[l] && !cas(&n->next[l], nx, (uintptr_t)succs[l]))
					continue;  /* marked meanwhile: the check above stops */
				RL_NOISE();
				if (cas(&preds[l]->next[l], (uintptr_t)succs[l], (uintptr_t)n))
					break;
				find_insert(rl, start, end, preds, succs);  /* result unused: new preds/succs */
			}
		}
		return 1;
	}
}

/* mark_level -- set the mark of victim->next[l] (attemptMark until it is marked) (internal) */
static void mark_level(struct rl_node *victim, int l)
{
	uintptr_t nx = ld(&victim->next[l]);
	while (!IS_MARKED(nx)) {
		cas(&victim->next[l], nx, nx | MARK);
		nx = ld(&victim->next[l]);
	}
}

/* rl_release -- Listing 4.3 */
int rl_release(struct rangelock *rl, uint64_t start, uint64_t end)
{
	struct rl_node *preds[RL_MAX_LEVEL + 1], *succs[RL_MAX_LEVEL + 1];
#ifdef BUG_RL_RELEASE_UNHELD_NULL
	/* BUG: the caller is trusted to hold [START, END]: a range nobody holds
	 * has no victim, and the NULL is dereferenced below */
	struct rl_node *victim = find_exact(rl, start, end, preds, succs) ? succs[0] : NULL;
#else
	if (!find_exact(rl, start, end, preds, succs))
		return 0;
	struct rl_node *victim = succs[0];
#endif
#ifndef BUG_RL_MARK_BOTTOM_FIRST
	for (int l = victim->top; l >= 1; l--)
		mark_level(victim, l);
#endif
	RL_NOISE();
#ifdef BUG_RL_UNLINK_BEFORE_MARK
	/*
	 * BUG: level 0 unlinked first (a CAS on the predecessor), marked after:
	 * in between, a trylock that found the victim as its predecessor links
	 * its node after it by a CAS on the victim's unmarked next, into a node
	 * no longer in the list; that range is held but not in the lock
	 */
	for (;;) {
		uintptr_t vx = ld(&victim->next[0]);
		if (IS_MARKED(vx))
			return 0;
		RL_NOISE();
		if (cas(&preds[0]->next[0], (uintptr_t)victim, (uintptr_t)REF(vx)))
			break;
		if (!find_exact(rl, start, end, preds, succs) || succs[0] != victim)
			return 0;  /* another release won */
	}
	RL_NOISE();
	mark_level(victim, 0);
	find_delete(rl, start);
	return 1;
#endif
	uintptr_t nx = ld(&victim->next[0]);
	for (;;) {
		if (IS_MARKED(nx))
			return 0;  /* another release of the same range won */
		RL_NOISE();
		/* the linearization point of a successful release */
		if (cas(&victim->next[0], nx, nx | MARK))
			break;
#ifdef BUG_RL_RELEASE_NO_RETRY
		/* BUG: a failed CAS is read as "someone else released it", but it also
		 * fails when a node was linked right after the victim: a held range
		 * cannot be released */
		return 0;
#endif
		nx = ld(&victim->next[0]);  /* a new successor: retry the mark */
	}
#ifdef BUG_RL_MARK_BOTTOM_FIRST
	/* BUG: level 0 is marked (the range is free) before the upper levels; until
	 * they are, finds descend through the dead node and go on at level 0 from
	 * its frozen successor, missing ranges linked since right after it (their
	 * release fails), and every tryLock whose preds[0] it is retries its CAS */
	RL_NOISE();
	for (int l = victim->top; l >= 1; l--)
		mark_level(victim, l);
#endif
	find_delete(rl, start);
	return 1;
}

/* rl_foreach -- every unmarked range at level 0, in order */
void rl_foreach(struct rangelock *rl, int (*fn)(void *ctx, uint64_t start, uint64_t end), void *ctx)
{
	for (struct rl_node *n = REF(ld(&rl->head->next[0])); n != rl->tail; ) {
		uintptr_t nx = ld(&n->next[0]);
		if (!IS_MARKED(nx) && fn(ctx, n->start, n->end))
			return;
		n = REF(nx);
	}
}

/* REPORT -- one violation of rl_check (internal) */
#define REPORT(...) do {                                  \
		char text_[200];                          \
		snprintf(text_, sizeof(text_), __VA_ARGS__); \
		fn(ctx, text_);                           \
		count++;                                  \
	} while (0)

/* rl_check -- the invariants of a quiescent lock */
size_t rl_check(struct rangelock *rl, void (*fn)(void *ctx, const char *text), void *ctx)
{
	size_t count = 0;
	for (int l = 0; l <= RL_MAX_LEVEL; l++) {
		struct rl_node *prev = NULL;
		size_t steps = 0;
		for (struct rl_node *n = REF(ld(&rl->head->next[l])); n != rl->tail; steps++) {
			if (!n) {
				REPORT("level %d ends in NULL, not at the tail", l);
				break;
			}
			if (steps > 100000000) {
				REPORT("level %d does not reach the tail (a cycle?)", l);
				break;
			}
			uintptr_t nx = ld(&n->next[l]);
			unsigned long long s = n->start, e = n->end;
			if (l == 0 && IS_MARKED(nx))
				REPORT("released range [%llu, %llu] is still linked at level 0", s, e);
			if (n->top < l)
				REPORT("range [%llu, %llu] is linked at level %d above its top %d", s, e, l, n->top);
			if (prev && prev->start >= n->start)
				REPORT("level %d is not sorted: start %llu before start %llu", l,
				       (unsigned long long)prev->start, s);
			if (l == 0 && prev && prev->end >= n->start)
				REPORT("held ranges overlap: [%llu, %llu] and [%llu, %llu]",
				       (unsigned long long)prev->start, (unsigned long long)prev->end, s, e);
			if (l > 0 && !IS_MARKED(nx)) {
				struct rl_node *m = REF(ld(&rl->head->next[0]));
				while (m && m != rl->tail && m != n)
					m = REF(ld(&m->next[0]));
				if (m != n)
					REPORT("range [%llu, %llu] is at level %d but not at level 0", s, e, l);
			}
			prev = n;
			n = REF(nx);
		}
	}
	return count;
}
