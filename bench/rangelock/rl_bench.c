/*
 * rl_bench.c -- throughput of tryLock/releaseLock pairs: the lock-free skip list
 * (trees/rangelock) against the thesis' coarse baseline, one pthread mutex over a
 * sorted list of ranges (section 2.1.2, without the waiting)
 *
 *     rl_bench skiplist|mutex THREADS MS BATCH
 *
 * Each thread draws ranges [s, s + len) with s in [0, 2^24) and len 1..16 and, per
 * round, tries to lock BATCH of them (W1 of section 5.3.1: BATCH = 1; W2: 16), then
 * releases the ones it got.  Prints "pairs/s" = successful lock+release pairs per second.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "rangelock.h"

struct range {
	uint64_t s, e;
	struct range *next;
};

/* the baseline: one mutex, one sorted list */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct range *list;

static int mutex_trylock(uint64_t s, uint64_t e)
{
	pthread_mutex_lock(&mu);
	struct range **p = &list;
	while (*p && (*p)->e < s)
		p = &(*p)->next;
	if (*p && (*p)->s <= e) {
		pthread_mutex_unlock(&mu);
		return 0;
	}
	struct range *r = malloc(sizeof(*r));
	r->s = s;
	r->e = e;
	r->next = *p;
	*p = r;
	pthread_mutex_unlock(&mu);
	return 1;
}

static int mutex_release(uint64_t s, uint64_t e)
{
	pthread_mutex_lock(&mu);
	struct range **p = &list;
	while (*p && (*p)->s < s)
		p = &(*p)->next;
	if (!*p || (*p)->s != s || (*p)->e != e) {
		pthread_mutex_unlock(&mu);
		return 0;
	}
	struct range *r = *p;
	*p = r->next;
	pthread_mutex_unlock(&mu);
	free(r);
	return 1;
}

static struct rangelock *rl;
static int use_skiplist, batch;
static volatile int stop;

static uint64_t rnd(uint64_t *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 0x2545f4914f6cdd1dull;
}

static void *work(void *arg)
{
	uint64_t x = (uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1, pairs = 0;
	uint64_t got[64][2];
	while (!stop) {
		int n = 0;
		for (int b = 0; b < batch; b++) {
			uint64_t s = rnd(&x) % (1u << 24), e = s + rnd(&x) % 16;
			if (use_skiplist ? rl_trylock(rl, s, e) == 1 : mutex_trylock(s, e)) {
				got[n][0] = s;
				got[n++][1] = e;
			}
		}
		for (int i = 0; i < n; i++)
			if (use_skiplist ? !rl_release(rl, got[i][0], got[i][1]) : !mutex_release(got[i][0], got[i][1]))
				abort();
		pairs += (uint64_t)n;
	}
	return (void *)(uintptr_t)pairs;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: rl_bench skiplist|mutex THREADS MS BATCH\n");
		return 2;
	}
	use_skiplist = !strcmp(argv[1], "skiplist");
	int threads = atoi(argv[2]);
	long ms = atol(argv[3]);
	batch = atoi(argv[4]);
	if (batch < 1 || batch > 64 || threads < 1 || threads > 64)
		return 2;
	rl = rl_create(1);
	pthread_t tid[64];
	for (int t = 0; t < threads; t++)
		pthread_create(&tid[t], NULL, work, (void *)(uintptr_t)(t + 1));
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
	stop = 1;
	uint64_t pairs = 0;
	for (int t = 0; t < threads; t++) {
		void *r;
		pthread_join(tid[t], &r);
		pairs += (uintptr_t)r;
	}
	printf("%.0f\n", pairs / (ms / 1000.0));
	return 0;
}
