/*
 * rt_threads.c -- thread ids and the switch to locked logging
 *
 * Thread ids are small integers in order of each thread's first event.
 * Logging is lock-free while the program has one thread.  The runtime
 * interposes pthread_create (its definition in the executable wins over
 * libc's, for calls from libraries such as libstdc++ too): the creating
 * thread is not in the middle of an append when it calls pthread_create,
 * so turning the lock on there is safe, and from then on every append takes
 * the lock.  It is never turned off again.  With CRASHCHECK_SCHED set the
 * new thread is handed to the scheduler (rt_sched.c).  Loads asked for
 * "with threads" (CRASHCHECK_TRACE_LOADS=threads) are logged from here on.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "rt_internal.h"

int cc_mt_mode;
__thread int cc_tl_tid = -1;
static int next_tid;
static volatile int spin;

/* cc_assign_tid -- give the calling thread its id on its first event */
int cc_assign_tid(void)
{
	cc_tl_tid = __atomic_fetch_add(&next_tid, 1, __ATOMIC_RELAXED);
	return cc_tl_tid;
}

/* cc_next_tid -- an id for a thread the scheduler registers before it runs */
int cc_next_tid(void)
{
	return __atomic_fetch_add(&next_tid, 1, __ATOMIC_RELAXED);
}

/* cc_lock -- take the logging spinlock */
void cc_lock(void)
{
	while (__atomic_exchange_n(&spin, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(&spin, __ATOMIC_RELAXED))
			__builtin_ia32_pause();
}

/* cc_unlock -- release the logging spinlock */
void cc_unlock(void)
{
	__atomic_store_n(&spin, 0, __ATOMIC_RELEASE);
}

typedef int (*pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

/* cc_real_pthread_create -- libc's pthread_create, for the runtime's own writer thread */
int cc_real_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *), void *arg)
{
	static pthread_create_fn real;
	if (real == NULL) {
		real = (pthread_create_fn)dlsym(RTLD_NEXT, "pthread_create");
		if (real == NULL) {
			fprintf(stderr, "crashcheck: cannot find pthread_create: %s\n", dlerror());
			abort();
		}
	}
	return real(thread, attr, start, arg);
}

/*
 * pthread_create -- turn locked logging on, then create the thread as libc
 * would (under the scheduler: registered, and waiting for its turn)
 */
int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *), void *arg)
{
	if (!cc_mt_mode) {
		cc_tid(); /* the creator is thread 0 if it has not logged yet */
		__atomic_store_n(&cc_mt_mode, 1, __ATOMIC_SEQ_CST);
	}
	if (cc_trace_loads == CC_LOADS_WITH_THREADS)
		__atomic_store_n(&cc_trace_loads, 1, __ATOMIC_SEQ_CST);   /* CRASHCHECK_TRACE_LOADS=threads */
	if (cc_sched_enabled)
		return cc_sched_create(thread, attr, start, arg);
	return cc_real_pthread_create(thread, attr, start, arg);
}
