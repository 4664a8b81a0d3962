/* sync.c -- condition variables and rwlocks under the scheduler.  Usage: sync POOL MODE
 *   cond    2 producers and 2 consumers through a one-slot buffer (mutex + two conditions);
 *           prints the sum consumed (2 * (1 + ... + 20) = 420)
 *   rwlock  3 readers that must all hold the read lock at once (each waits, yielding, until
 *           all 3 are inside), then a writer; prints "readers 3 value 1"
 *   timed   a timed wait that nobody signals: times out instead of deadlocking; prints "timeout"
 *   barrier 3 threads pass a barrier 5 times, counting arrivals; prints "rounds 5" if every
 *           thread saw all 3 arrivals of each round after the barrier */
#include <crashcheck.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER, not_full = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static volatile uint64_t *pm;
static int full;
static uint64_t slot, sum;
static atomic_int inside, max_inside, arrivals, bad_rounds;
static pthread_barrier_t bar;

static void *producer(void *arg)
{
	(void)arg;
	for (uint64_t i = 1; i <= 20; i++) {
		pthread_mutex_lock(&mu);
		while (full)
			pthread_cond_wait(&not_full, &mu);
		slot = i;
		pm[0] = i;
		full = 1;
		pthread_cond_signal(&not_empty);
		pthread_mutex_unlock(&mu);
	}
	return NULL;
}

static void *consumer(void *arg)
{
	(void)arg;
	for (int i = 0; i < 20; i++) {
		pthread_mutex_lock(&mu);
		while (!full)
			pthread_cond_wait(&not_empty, &mu);
		sum += slot;
		full = 0;
		pthread_cond_broadcast(&not_full);
		pthread_mutex_unlock(&mu);
	}
	return NULL;
}

static void *reader(void *arg)
{
	(void)arg;
	pthread_rwlock_rdlock(&rw);
	int n = atomic_fetch_add(&inside, 1) + 1;
	if (n > atomic_load(&max_inside))
		atomic_store(&max_inside, n);
	while (atomic_load(&max_inside) < 3)
		sched_yield();
	pthread_rwlock_unlock(&rw);
	return NULL;
}

static void *writer(void *arg)
{
	(void)arg;
	pthread_rwlock_wrlock(&rw);
	pm[1] = pm[1] + 1;
	pthread_rwlock_unlock(&rw);
	return NULL;
}

static void *timed(void *arg)
{
	(void)arg;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 3600;
	pthread_mutex_lock(&mu);
	int rc = pthread_cond_timedwait(&not_empty, &mu, &ts);
	pthread_mutex_unlock(&mu);
	printf("%s\n", rc == ETIMEDOUT ? "timeout" : "signalled");
	return NULL;
}

static void *barrier_worker(void *arg)
{
	(void)arg;
	for (int r = 1; r <= 5; r++) {
		atomic_fetch_add(&arrivals, 1);
		pthread_barrier_wait(&bar);
		if (atomic_load(&arrivals) < 3 * r)
			atomic_fetch_add(&bad_rounds, 1);
		pthread_barrier_wait(&bar);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pm = crashcheck_pool_open(argc > 1 ? argv[1] : "sync.pool", 1 << 16, 0, CRASHCHECK_POOL_CREATE);
	const char *mode = argc > 2 ? argv[2] : "cond";
	if (!pm)
		return 2;
	pthread_t t[4];
	if (strcmp(mode, "cond") == 0) {
		pthread_create(&t[0], NULL, producer, NULL);
		pthread_create(&t[1], NULL, producer, NULL);
		pthread_create(&t[2], NULL, consumer, NULL);
		pthread_create(&t[3], NULL, consumer, NULL);
		for (int i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
		printf("%llu\n", (unsigned long long)sum);
	} else if (strcmp(mode, "rwlock") == 0) {
		for (int i = 0; i < 3; i++)
			pthread_create(&t[i], NULL, reader, NULL);
		pthread_create(&t[3], NULL, writer, NULL);
		for (int i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
		printf("readers %d value %llu\n", atomic_load(&max_inside), (unsigned long long)pm[1]);
	} else if (strcmp(mode, "barrier") == 0) {
		pthread_barrier_init(&bar, NULL, 3);
		for (int i = 0; i < 3; i++)
			pthread_create(&t[i], NULL, barrier_worker, NULL);
		for (int i = 0; i < 3; i++)
			pthread_join(t[i], NULL);
		printf("rounds %d\n", 5 - atomic_load(&bad_rounds));
	} else {
		pthread_create(&t[0], NULL, timed, NULL);
		pthread_join(t[0], NULL);
	}
	return 0;
}
