/*
 * rt_sched_pthread.c -- the pthread functions the scheduler interposes, and
 * libc's real ones.  Under the scheduler, a lock, condition, barrier, join,
 * yield or sleep is modelled (rt_sched.c's lock table; the real objects are
 * never locked) and is a scheduling point; otherwise, and in threads the
 * scheduler does not run (the trace writer, the watchdog), each call goes
 * straight to libc's function, looked up once (cc_real_init, CC_REAL): the
 * runtime's own code calls those too.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "rt_sched.h"

/* ---- real libc entry points (for pass-through and the runtime's own use) ---- */

struct cc_real_fns cc_real;

/* cc_real_init -- look up libc's versions of the interposed functions (internal) */
void cc_real_init(void)
{
	if (cc_real.ready)
		return;
#define R(field, name) cc_real.field = dlsym(RTLD_NEXT, name)
#define RV(field, name) do { cc_real.field = dlvsym(RTLD_NEXT, name, "GLIBC_2.3.2"); \
		if (!cc_real.field) R(field, name); } while (0)
	R(mutex_lock, "pthread_mutex_lock");
	R(mutex_trylock, "pthread_mutex_trylock");
	R(mutex_timedlock, "pthread_mutex_timedlock");
	R(mutex_unlock, "pthread_mutex_unlock");
	R(rw_rdlock, "pthread_rwlock_rdlock");
	R(rw_wrlock, "pthread_rwlock_wrlock");
	R(rw_tryrdlock, "pthread_rwlock_tryrdlock");
	R(rw_trywrlock, "pthread_rwlock_trywrlock");
	R(rw_unlock, "pthread_rwlock_unlock");
	R(spin_lock, "pthread_spin_lock");
	R(spin_trylock, "pthread_spin_trylock");
	R(spin_unlock, "pthread_spin_unlock");
	RV(cond_wait, "pthread_cond_wait");
	RV(cond_timedwait, "pthread_cond_timedwait");
	RV(cond_signal, "pthread_cond_signal");
	RV(cond_broadcast, "pthread_cond_broadcast");
	R(join, "pthread_join");
	R(exit, "pthread_exit");
	R(yield, "sched_yield");
	R(usleep, "usleep");
	R(nanosleep, "nanosleep");
#undef R
#undef RV
	if (!cc_real.mutex_lock || !cc_real.cond_wait || !cc_real.join || !cc_real.exit) {
		fprintf(stderr, "crashcheck: cannot find libc's pthread functions: %s\n", dlerror());
		abort();
	}
	__atomic_store_n(&cc_real.ready, 1, __ATOMIC_RELEASE);
}

#define REAL(f) CC_REAL(f)

static uint64_t wait_seq;   /* order of condition waits: a signal wakes the longest waiter */

/* ---- interposed pthread functions ---- */

/* pthread_exit -- an exiting registered thread passes the token on first */
void pthread_exit(void *ret)
{
	struct sthread *t = modelled();
	if (t)
		ccs_thread_exit(t);
	REAL(exit)(ret);
	__builtin_unreachable();
}

int pthread_join(pthread_t th, void **ret)
{
	struct sthread *t = modelled_at(CC_NO_SITE, "pthread_join"), *target = NULL;
	if (t)
		for (int i = 0; i < ccs_nthreads; i++)
			if (ccs_threads[i] != t && pthread_equal(ccs_threads[i]->pt, th))
				target = ccs_threads[i];
	if (target) {
		while (target->state != T_DEAD)
			ccs_block(t, T_JOIN, target, 0);
		ccs_sync("join", target->tid);
	}
	return REAL(join)(th, ret);
}

static int mutex_kind(const pthread_mutex_t *m)
{
	return m->__data.__kind & 3; /* glibc: 1 recursive, 2 error-checking */
}

/* mutex_acquire -- lock KEY as a mutex or spin lock; TRY: do not wait (internal) */
static int mutex_acquire(struct sthread *t, void *key, int kind, int try, int timed)
{
	struct lockst *l = ccs_lock_get(key);
	if (l->owner == t->idx && kind == PTHREAD_MUTEX_RECURSIVE) {
		l->count++;
		ccs_point(0);
		return 0;
	}
	if (l->owner == t->idx && kind == PTHREAD_MUTEX_ERRORCHECK)
		return EDEADLK;
	if (l->owner >= 0 && try) {
		ccs_point(1);
		return EBUSY;
	}
	while (l->owner >= 0) {   /* a normal mutex relocked by its owner waits forever: deadlock */
		if (ccs_block(t, T_MUTEX, key, timed))
			return ETIMEDOUT;
		l = ccs_lock_get(key);
	}
	l->owner = t->idx;
	l->count = 1;
	ccs_sync("acq", l->serial);
	ccs_point(0);
	return 0;
}

static int mutex_release(struct sthread *t, void *key, int kind, int sched)
{
	struct lockst *l = ccs_lock_get(key);
	if (l->owner != t->idx && kind == PTHREAD_MUTEX_ERRORCHECK)
		return EPERM;
	if (l->owner == t->idx && kind == PTHREAD_MUTEX_RECURSIVE && --l->count > 0)
		goto out;
	l->owner = -1;
	l->count = 0;
	ccs_sync("rel", l->serial);
out:
	if (sched)
		ccs_point(0);
	return 0;
}

int pthread_mutex_lock(pthread_mutex_t *m)
{
	struct sthread *t = modelled_at(CC_NO_SITE, "pthread_mutex_lock");
	if (!t)
		return REAL(mutex_lock)(m);
	return mutex_acquire(t, m, mutex_kind(m), 0, 0);
}

int pthread_mutex_trylock(pthread_mutex_t *m)
{
	struct sthread *t = modelled_at(CC_NO_SITE, "pthread_mutex_trylock");
	if (!t)
		return REAL(mutex_trylock)(m);
	return mutex_acquire(t, m, mutex_kind(m), 1, 0);
}

int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abstime)
{
	struct sthread *t = modelled_at(CC_NO_SITE, "pthread_mutex_timedlock");
	if (!t)
		return REAL(mutex_timedlock)(m, abstime);
	return mutex_acquire(t, m, mutex_kind(m), 0, 1);
}

int pthread_mutex_unlock(pthread_mutex_t *m)
{
	struct sthread *t = modelled_at(CC_NO_SITE, "pthread_mutex_unlock");
	if (!t)
		return REAL(mutex_unlock)(m);
	return mutex_release(t, m, mutex_kind(m), 1);
}

int pthread_spin_lock(pthread_spinlock_t *s)
{
	struct sthread *t = modelled_at(CC_NO_SITE, "pthread_spin_lock");
	if (!t)
		return REAL(spin_lock)(s);
	return mutex_acquire(t, (void *)s, PTHREAD_MUTEX_NORMAL, 0, 0);
}

int pthread_spin_trylock(pthread_spinlock_t *s)
{
	struct sthread *t = modelled_at(CC_NO_SITE, "pthread_spin_trylock");
	if (!t)
		return REAL(spin_trylock)(s);
	return mutex_acquire(t, (void *)s, PTHREAD_MUTEX_NORMAL, 1, 0);
}

int pthread_spin_unlock(pthread_spinlock_t *s)
{
	struct sthread *t = modelled_at(CC_NO_SITE, "pthread_spin_unlock");
	if (!t)
		return REAL(spin_unlock)(s);
	return mutex_release(t, (void *)s, PTHREAD_MUTEX_NORMAL, 1);
}

/* rw_acquire -- read (WRITE 0) or write lock; TRY: do not wait (internal) */
static int rw_acquire(struct sthread *t, pthread_rwlock_t *rw, int write, int try)
{
	struct lockst *l = ccs_lock_get(rw);
	for (;;) {
		int busy = l->owner >= 0 || (write && l->readers > 0);
		if (!busy)
			break;
		if (l->owner == t->idx)
			return EDEADLK;
		if (try) {
			ccs_point(1);
			return EBUSY;
		}
		ccs_block(t, write ? T_WR : T_RD, rw, 0);
		l = ccs_lock_get(rw);
	}
	if (write)
		l->owner = t->idx;
	else
		l->readers++;
	ccs_sync(write ? "acq" : "racq", l->serial);
	ccs_point(0);
	return 0;
}

int pthread_rwlock_rdlock(pthread_rwlock_t *rw)
{
	struct sthread *t = modelled_at(CC_NO_SITE, "pthread_rwlock_rdlock");
	return t ? rw_acquire(t, rw, 0, 0) : REAL(rw_rdlock)(rw);
}

int pthread_rwlock_wrlock(pthread_rwlock_t *rw)
{
	struct sthread *t = modelled_at(CC_NO_SITE, "pthread_rwlock_wrlock");
	return t ? rw_acquire(t, rw, 1, 0) : REAL(rw_wrlock)(rw);
}

int pthread_rwlock_tryrdlock(pthread_rwlock_t *rw)
{
	struct sthread *t = modelled_at(CC_NO_SITE, "pthread_rwlock_tryrdlock");
	return t ? rw_acquire(t, rw, 0, 1) : REAL(rw_tryrdlock)(rw);
}

int pthread_rwlock_trywrlock(pthread_rwlock_t *rw)
{
	struct sthread *t = modelled_at(CC_NO_SITE, "pthread_rwlock_trywrlock");
	return t ? rw_acquire(t, rw, 1, 1) : REAL(rw_trywrlock)(rw);
}

int pthread_rwlock_unlock(pthread_rwlock_t *rw)
{
	struct sthread *t = modelled_at(CC_NO_SITE, "pthread_rwlock_unlock");
	if (!t)
		return REAL(rw_unlock)(rw);
	struct lockst *l = ccs_lock_get(rw);
	if (l->owner == t->idx)
		l->owner = -1;
	else if (l->readers > 0)
		l->readers--;
	else
		return EPERM;
	ccs_sync("rel", l->serial);
	ccs_point(0);
	return 0;
}

/* cond_wait -- release M, wait for a signal (or the timeout), take M again (internal) */
static int cond_wait(struct sthread *t, pthread_cond_t *c, pthread_mutex_t *m, int timed)
{
	int kind = mutex_kind(m);
	struct lockst *l = ccs_lock_get(m);
	if (l->owner != t->idx)
		return EPERM;
	int depth = l->count;
	mutex_release(t, m, kind, 0);
	t->signaled = 0;
	t->wait_seq = ++wait_seq;
	int expired = ccs_block(t, T_COND, c, timed);
	t->signaled = 0;
	l = ccs_lock_get(m);
	while (l->owner >= 0) {
		ccs_block(t, T_MUTEX, m, 0);
		l = ccs_lock_get(m);
	}
	l->owner = t->idx;
	l->count = depth;
	ccs_sync("acq", l->serial);
	return expired ? ETIMEDOUT : 0;
}

int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	struct sthread *t = modelled_at(CC_NO_SITE, "pthread_cond_wait");
	return t ? cond_wait(t, c, m, 0) : REAL(cond_wait)(c, m);
}

int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abstime)
{
	struct sthread *t = modelled_at(CC_NO_SITE, "pthread_cond_timedwait");
	return t ? cond_wait(t, c, m, 1) : REAL(cond_timedwait)(c, m, abstime);
}

/* cond_wake -- signal the longest waiter on C, or all (internal) */
static void cond_wake(pthread_cond_t *c, int all)
{
	struct sthread *first = NULL;
	for (int i = 0; i < ccs_nthreads; i++) {
		struct sthread *w = ccs_threads[i];
		if (w->state != T_COND || w->obj != c || w->signaled)
			continue;
		if (all)
			w->signaled = 1;
		else if (!first || w->wait_seq < first->wait_seq)
			first = w;
	}
	if (first)
		first->signaled = 1;
	ccs_point(0);
}

int pthread_cond_signal(pthread_cond_t *c)
{
	if (!modelled_at(CC_NO_SITE, "pthread_cond_signal"))
		return REAL(cond_signal)(c);
	cond_wake(c, 0);
	return 0;
}

int pthread_cond_broadcast(pthread_cond_t *c)
{
	if (!modelled_at(CC_NO_SITE, "pthread_cond_broadcast"))
		return REAL(cond_broadcast)(c);
	cond_wake(c, 1);
	return 0;
}

/*
 * init and destroy -- the real functions only write the object; the model
 * forgets its state (mutex_kind reads the type the real init stored).
 */
int pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a)
{
	static int (*real)(pthread_mutex_t *, const pthread_mutexattr_t *);
	if (!real)
		real = dlsym(RTLD_NEXT, "pthread_mutex_init");
	if (modelled())
		ccs_lock_reset(m);
	return real(m, a);
}

int pthread_rwlock_init(pthread_rwlock_t *rw, const pthread_rwlockattr_t *a)
{
	static int (*real)(pthread_rwlock_t *, const pthread_rwlockattr_t *);
	if (!real)
		real = dlsym(RTLD_NEXT, "pthread_rwlock_init");
	if (modelled())
		ccs_lock_reset(rw);
	return real(rw, a);
}

int pthread_spin_init(pthread_spinlock_t *s, int pshared)
{
	static int (*real)(pthread_spinlock_t *, int);
	if (!real)
		real = dlsym(RTLD_NEXT, "pthread_spin_init");
	if (modelled())
		ccs_lock_reset((void *)s);
	return real(s, pshared);
}

int pthread_barrier_init(pthread_barrier_t *b, const pthread_barrierattr_t *a, unsigned count)
{
	static int (*real)(pthread_barrier_t *, const pthread_barrierattr_t *, unsigned);
	if (!real)
		real = dlsym(RTLD_NEXT, "pthread_barrier_init");
	if (modelled()) {
		ccs_lock_reset(b);
		ccs_lock_get(b)->need = (int)count;
	}
	return real(b, a, count);
}

/* pthread_barrier_wait -- wait for the generation to change; the last to arrive changes it */
int pthread_barrier_wait(pthread_barrier_t *b)
{
	static int (*real)(pthread_barrier_t *);
	struct sthread *t = modelled_at(CC_NO_SITE, "pthread_barrier_wait");
	if (!t) {
		if (!real)
			real = dlsym(RTLD_NEXT, "pthread_barrier_wait");
		return real(b);
	}
	struct lockst *l = ccs_lock_get(b);
	if (++l->readers >= l->need) {
		l->readers = 0;
		l->gen++;
		ccs_point(0);
		return PTHREAD_BARRIER_SERIAL_THREAD;
	}
	t->wait_seq = l->gen;
	ccs_block(t, T_BARRIER, b, 0);
	return 0;
}

/* sched_yield -- a spin step: let another thread run */
int sched_yield(void)
{
	if (modelled_at(CC_NO_SITE, "sched_yield") && __cc_sched_on) {
		ccs_point(1);
		return 0;
	}
	return REAL(yield)();
}

/* usleep, nanosleep -- virtual time: a spin step instead of sleeping */
int usleep(useconds_t us)
{
	if (modelled_at(CC_NO_SITE, "usleep") && __cc_sched_on) {
		ccs_point(1);
		return 0;
	}
	return REAL(usleep)(us);
}

int nanosleep(const struct timespec *req, struct timespec *rem)
{
	if (modelled_at(CC_NO_SITE, "nanosleep") && __cc_sched_on) {
		ccs_point(1);
		return 0;
	}
	return REAL(nanosleep)(req, rem);
}
