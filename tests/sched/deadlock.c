/* deadlock.c -- thread A locks m1 then m2, thread B m2 then m1: deadlocks when B takes m2
 * between A's two locks.  Usage: deadlock POOL */
#include <crashcheck.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

static pthread_mutex_t m1 = PTHREAD_MUTEX_INITIALIZER, m2 = PTHREAD_MUTEX_INITIALIZER;
static volatile uint64_t *pm;

static void *a(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&m1);
	pm[0]++;
	pthread_mutex_lock(&m2);
	pm[1]++;
	pthread_mutex_unlock(&m2);
	pthread_mutex_unlock(&m1);
	return NULL;
}

static void *b(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&m2);
	pm[2]++;
	pthread_mutex_lock(&m1);
	pm[3]++;
	pthread_mutex_unlock(&m1);
	pthread_mutex_unlock(&m2);
	return NULL;
}

int main(int argc, char **argv)
{
	pm = crashcheck_pool_open(argc > 1 ? argv[1] : "deadlock.pool", 1 << 16, 0, CRASHCHECK_POOL_CREATE);
	if (!pm)
		return 2;
	pthread_t ta, tb;
	pthread_create(&ta, NULL, a, NULL);
	pthread_create(&tb, NULL, b, NULL);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	printf("ok\n");
	return 0;
}
