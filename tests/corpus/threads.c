/* crashcheck-corpus
 * construct: two threads writing PM at the same time: events from both tids, each thread's in program order, none lost
 * order: per-thread
 * cflags: -pthread
 * i<2000 => store/plain off={0x1000+8*i} size=8 data={le(i,8)} line=@main_st
 * i<2000 => tid=1 store/plain off={0x10000+8*i} size=8 data={le(1000000+i,8)} line=@worker_st func=worker
 * => tid=1 fence/sfence line=@worker_fence func=worker
 * => fence/sfence line=@main_fence
 */
#include <immintrin.h>
#include <pthread.h>

#include "corpus.h"

#define N 2000

static pthread_barrier_t start;

static void *worker(void *arg)
{
	uint64_t *w = (uint64_t *)((char *)arg + 0x10000);
	pthread_barrier_wait(&start);
	for (uint64_t i = 0; i < N; i++) {
		w[i] = 1000000 + i;  /* @worker_st */
		BARRIER();
	}
	_mm_sfence();            /* @worker_fence */
	return NULL;
}

int main(int argc, char **argv)
{
	char *pm = corpus_pool(argc, argv);
	pthread_t t;
	pthread_barrier_init(&start, NULL, 2);
	if (pthread_create(&t, NULL, worker, pm) != 0)
		return 1;
	pthread_barrier_wait(&start);
	uint64_t *m = (uint64_t *)(pm + 0x1000);
	for (uint64_t i = 0; i < N; i++) {
		m[i] = i;            /* @main_st */
		BARRIER();
	}
	pthread_join(t, NULL);
	_mm_sfence();            /* @main_fence */
	return 0;
}
