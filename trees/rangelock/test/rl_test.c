/*
 * rl_test.c -- native tests of the range lock (trees/rangelock/rangelock.c)
 *
 *     rl_test seq SEED OPS              single thread, random trylock/release in a small
 *                                       universe (0, 2^64-1 and their neighbours included)
 *                                       against a brute-force list of held ranges
 *     rl_test stress THREADS MS SEED    THREADS threads lock random ranges of a small
 *                                       universe for MS milliseconds; each checks mutual
 *                                       exclusion on a shared owner array while it holds
 *                                       its range, and that its own release succeeds
 *
 * Prints "ok ..." and exits 0, or prints the first violation and exits 1.
 * tests/trees/test_rangelock_functional.py builds it with every seeded bug too
 * (and -DRL_NOISE_INJECTION for the stress, see rangelock.c).
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "rangelock.h"

#define U64_MAX UINT64_MAX

/* the universe: strictly increasing points, so ranges of points overlap iff their index ranges do */
static const uint64_t POINTS[] = {
	0, 1, 2, 3, 5, 8, 13, 100, 1000, 1ull << 32, (1ull << 32) + 1,
	1ull << 63, U64_MAX - 2, U64_MAX - 1, U64_MAX,
};
#define NPOINTS (sizeof(POINTS) / sizeof(POINTS[0]))

/* xorshift64* (internal) */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

/* draw_range -- point indexes i <= j, mostly short (internal) */
static void draw_range(uint64_t *s, unsigned *i, unsigned *j)
{
	unsigned a = (unsigned)(rnd(s) % NPOINTS);
	unsigned b = rnd(s) % 4 ? a + (unsigned)(rnd(s) % 3) : (unsigned)(rnd(s) % NPOINTS);
	if (b >= NPOINTS)
		b = NPOINTS - 1;
	*i = a < b ? a : b;
	*j = a < b ? b : a;
}

/* ---- seq: against a brute-force reference ---------------------------------- */

struct held {
	uint64_t s, e;
};

static int cmp_held(const void *a, const void *b)
{
	const struct held *x = a, *y = b;
	return x->s < y->s ? -1 : x->s > y->s;
}

struct collect {
	struct held *h;
	size_t n;
};

static int collect(void *ctx, uint64_t s, uint64_t e)
{
	struct collect *c = ctx;
	c->h[c->n].s = s;
	c->h[c->n].e = e;
	c->n++;
	return 0;
}

static void print_violation(void *ctx, const char *text)
{
	(void)ctx;
	printf("invariant: %s\n", text);
}

static int cmd_seq(uint64_t seed, long ops)
{
	struct rangelock *rl = rl_create(seed);
	struct held ref[NPOINTS * NPOINTS], got[NPOINTS * NPOINTS];
	size_t n = 0;
	uint64_t s = seed * 2654435761u + 1;
	for (long k = 0; k < ops; k++) {
		unsigned i, j;
		int release = rnd(&s) % 3 == 0;
		if (release && n && rnd(&s) % 2) {   /* mostly a held range, so releases succeed */
			size_t h = rnd(&s) % n;
			uint64_t a = ref[h].s, b = ref[h].e;
			for (i = 0; POINTS[i] != a; i++)
				;
			for (j = 0; POINTS[j] != b; j++)
				;
		} else {
			draw_range(&s, &i, &j);
		}
		uint64_t a = POINTS[i], b = POINTS[j];
		int want, r;
		if (release) {
			want = 0;
			for (size_t h = 0; h < n; h++)
				if (ref[h].s == a && ref[h].e == b) {
					ref[h] = ref[--n];
					want = 1;
					break;
				}
			r = rl_release(rl, a, b);
		} else {
			want = 1;
			for (size_t h = 0; h < n; h++)
				if (ref[h].s <= b && a <= ref[h].e)
					want = 0;
			if (want)
				ref[n++] = (struct held){a, b};
			r = rl_trylock(rl, a, b);
		}
		if (r != want) {
			printf("op %ld: %s %llu %llu returned %d, the reference says %d\n", k,
			       release ? "release" : "trylock", (unsigned long long)a, (unsigned long long)b, r, want);
			return 1;
		}
		qsort(ref, n, sizeof(ref[0]), cmp_held);
		struct collect c = {got, 0};
		rl_foreach(rl, collect, &c);
		if (c.n != n || memcmp(got, ref, n * sizeof(ref[0]))) {
			printf("op %ld: held ranges differ from the reference (%zu vs %zu)\n", k, c.n, n);
			return 1;
		}
		if (rl_check(rl, print_violation, NULL))
			return 1;
	}
	rl_destroy(rl);
	printf("ok ops=%ld\n", ops);
	return 0;
}

/* ---- stress: mutual exclusion and own releases ------------------------------ */

static struct rangelock *lock;
static unsigned owner[NPOINTS];            /* thread id + 1 holding each point, or 0 */
static int stop;                           /* a violation was seen, or time is up */
static long long deadline_ns;

struct worker {
	unsigned id;
	uint64_t seed;
	long ok, fail, exclusion_violations, release_failures;
	char first[200];
};

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	uint64_t s = w->seed;
	unsigned me = w->id + 1;
	for (long k = 0; !__atomic_load_n(&stop, __ATOMIC_RELAXED); k++) {
		if ((k & 255) == 0 && now_ns() > deadline_ns)
			break;
		unsigned i, j;
		draw_range(&s, &i, &j);
		int r = rl_trylock(lock, POINTS[i], POINTS[j]);
		if (r != 1) {
			w->fail++;
			continue;
		}
		w->ok++;
		int broken = 0;
		for (unsigned p = i; p <= j; p++) {
			unsigned zero = 0;
			if (!__atomic_compare_exchange_n(&owner[p], &zero, me, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
				if (!w->first[0])
					snprintf(w->first, sizeof(w->first),
						 "mutual exclusion broken: thread %u locked [%llu, %llu] but point %llu is held by thread %u",
						 me, (unsigned long long)POINTS[i], (unsigned long long)POINTS[j],
						 (unsigned long long)POINTS[p], zero);
				broken = 1;
				for (unsigned q = i; q < p; q++)
					__atomic_store_n(&owner[q], 0, __ATOMIC_SEQ_CST);
				break;
			}
		}
		if (broken) {
			w->exclusion_violations++;
			__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
		} else {
			if (rnd(&s) % 4 == 0)
				sched_yield();  /* hold it a little */
			for (unsigned p = i; p <= j; p++)
				__atomic_store_n(&owner[p], 0, __ATOMIC_SEQ_CST);
		}
		if (rl_release(lock, POINTS[i], POINTS[j]) != 1) {
			w->release_failures++;
			if (!w->first[0])
				snprintf(w->first, sizeof(w->first),
					 "thread %u could not release its own range [%llu, %llu]", me,
					 (unsigned long long)POINTS[i], (unsigned long long)POINTS[j]);
			__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
		}
	}
	return NULL;
}

static int cmd_stress(unsigned threads, long ms, uint64_t seed)
{
	lock = rl_create(seed);
	deadline_ns = now_ns() + ms * 1000000ll;
	pthread_t tid[64];
	struct worker w[64];
	if (threads > 64)
		threads = 64;
	for (unsigned t = 0; t < threads; t++) {
		memset(&w[t], 0, sizeof(w[t]));
		w[t].id = t;
		w[t].seed = seed * 0x9e3779b97f4a7c15ull + t * 7919 + 1;
		pthread_create(&tid[t], NULL, work, &w[t]);
	}
	long ok = 0, fail = 0, excl = 0, rel = 0;
	const char *first = NULL;
	for (unsigned t = 0; t < threads; t++) {
		pthread_join(tid[t], NULL);
		ok += w[t].ok;
		fail += w[t].fail;
		excl += w[t].exclusion_violations;
		rel += w[t].release_failures;
		if (!first && w[t].first[0])
			first = w[t].first;
	}
	if (first) {
		printf("violation: %s (trylocks ok=%ld fail=%ld, exclusion violations=%ld, failed releases=%ld)\n",
		       first, ok, fail, excl, rel);
		return 1;
	}
	struct collect c = {calloc(NPOINTS * NPOINTS, sizeof(struct held)), 0};
	rl_foreach(lock, collect, &c);
	if (c.n) {
		printf("violation: %zu ranges still held after every thread released its own\n", c.n);
		return 1;
	}
	if (rl_check(lock, print_violation, NULL))
		return 1;
	rl_destroy(lock);
	printf("ok threads=%u trylocks ok=%ld fail=%ld\n", threads, ok, fail);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "seq"))
		return cmd_seq(strtoull(argv[2], NULL, 10), atol(argv[3]));
	if (argc == 5 && !strcmp(argv[1], "stress"))
		return cmd_stress((unsigned)atoi(argv[2]), atol(argv[3]), strtoull(argv[4], NULL, 10));
	fprintf(stderr, "usage: rl_test seq SEED OPS | stress THREADS MS SEED\n");
	return 2;
}
