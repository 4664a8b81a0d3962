/*
 * sf_hostile.h -- the hostile code every self-fuzz target runs, chosen by SF_* macros
 * (tests/selffuzz/params.py names them; gen.py writes their values).  Legal code a user could
 * write: none of it breaks the target's crash consistency, it only makes crashcheck's life hard.
 *
 *   sf_stores(scratch, n)  huge memsets, many pending lines, wide, torn and non-temporal stores,
 *                          values from time/pid/addresses, threads storing beside it; all of it
 *                          made durable before it returns (so crash points in it have many states),
 *                          unless SF_UNFLUSHED leaves the memset / pending lines pending for good
 *   sf_fault()             the fault of this variant: a hang, a crash, an exit, a stop or a flood
 *   sf_noise()             a line on stdout and stderr per call, or 4 MB once
 */
#ifndef SF_HOSTILE_H
#define SF_HOSTILE_H

#include <immintrin.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef SF_MEMSET
#define SF_MEMSET 0
#endif
#ifndef SF_PENDING
#define SF_PENDING 0
#endif
#ifndef SF_UNFLUSHED
#define SF_UNFLUSHED 0          /* 1: the memset and pending lines are never written back */
#endif
#ifndef SF_WIDE
#define SF_WIDE 0
#endif
#ifndef SF_TORN
#define SF_TORN 0
#endif
#ifndef SF_NT
#define SF_NT 0
#endif
#ifndef SF_NONDET
#define SF_NONDET 0             /* 1 time, 2 pid, 3 a stack address */
#endif
#ifndef SF_FAULT
#define SF_FAULT 0              /* 1 loop, 2 sleep, 3 segv, 4 abort, 5 exit0, 6 exit3, 7 stop, 8 flood */
#endif
#ifndef SF_THREADS
#define SF_THREADS 0
#endif
#ifndef SF_NOISE
#define SF_NOISE 0
#endif

#define SF_LINE 64
/* scratch bytes the stores need: every line is its own, past the structure's data; whole lines, so
 * the small stores' lines after them are aligned (a 32-byte vector store must be) */
#define SF_SCRATCH_BIG_ (SF_MEMSET > SF_PENDING * SF_LINE ? SF_MEMSET : SF_PENDING * SF_LINE)
#define SF_SCRATCH_BIG ((SF_SCRATCH_BIG_ + SF_LINE - 1) / SF_LINE * SF_LINE)
#define SF_SCRATCH (SF_SCRATCH_BIG + 8 * SF_LINE)

/* sf_persist -- write back [p, p + n) and fence (internal) */
static inline void sf_persist(const void *p, size_t n)
{
	for (uintptr_t l = (uintptr_t)p & ~(uintptr_t)(SF_LINE - 1); l < (uintptr_t)p + n; l += SF_LINE)
		_mm_clwb((void *)l);
	_mm_sfence();
}

/* sf_value -- a value the run cannot predict when SF_NONDET asks for one */
static inline uint64_t sf_value(uint64_t base)
{
#if SF_NONDET == 1
	return base ^ (uint64_t)time(NULL);
#elif SF_NONDET == 2
	return base ^ (uint64_t)getpid();
#elif SF_NONDET == 3
	int here;
	return base ^ (uint64_t)(uintptr_t)&here;
#else
	return base;
#endif
}

#if SF_THREADS
struct sf_job {
	uint8_t *line;
	uint64_t v;
};

static void *sf_thread(void *arg)
{
	struct sf_job *j = (struct sf_job *)arg;
	memcpy(j->line, &j->v, 8);
	sf_persist(j->line, 8);
	return NULL;
}
#endif

/* sf_stores -- the hostile stores into SCRATCH (SF_SCRATCH bytes, line-aligned); durable on return */
static inline void sf_stores(uint8_t *scratch, uint64_t n)
{
	uint64_t v = sf_value(n * 0x9E3779B97F4A7C15ull + 1);
	uint8_t *tail = scratch + SF_SCRATCH_BIG;          /* 8 lines of its own for the small stores */
#if SF_MEMSET
	memset(scratch, (int)(v & 0xff) | 1, SF_MEMSET);
	_mm_sfence();                                      /* a crash point with the whole memset pending */
#if !SF_UNFLUSHED
	sf_persist(scratch, SF_MEMSET);
#endif
#endif
#if SF_PENDING
	for (int i = 0; i < SF_PENDING; i++)
		memcpy(scratch + (size_t)i * SF_LINE, &v, 8);
	_mm_sfence();                                      /* every one of those lines pending at once */
#if !SF_UNFLUSHED
	sf_persist(scratch, (size_t)SF_PENDING * SF_LINE);
#endif
#endif
#if SF_WIDE == 16
	typedef uint64_t sf_v2 __attribute__((vector_size(16)));
	*(volatile sf_v2 *)tail = (sf_v2){v, ~v};
	sf_persist(tail, 16);
#elif SF_WIDE == 32
	typedef uint64_t sf_v4 __attribute__((vector_size(32)));
	*(volatile sf_v4 *)tail = (sf_v4){v, ~v, v + 1, v - 1};
	sf_persist(tail, 32);
#endif
#if SF_TORN
	{
		struct __attribute__((packed)) sf_torn { uint8_t pad[SF_LINE - 4]; uint64_t word; };
		((volatile struct sf_torn *)(tail + SF_LINE))->word = v;   /* 4 bytes in each of two lines */
		sf_persist(tail + 2 * SF_LINE - 4, 8);
	}
#endif
#if SF_NT
	_mm_stream_si64((long long *)(tail + 3 * SF_LINE), (long long)v);
	_mm_sfence();
#endif
#if SF_NONDET
	for (uint64_t i = 0; i < v % 3; i++)               /* how many stores: unpredictable too */
		memcpy(tail + 4 * SF_LINE + 8 * i, &v, 8);
	sf_persist(tail + 4 * SF_LINE, 24);
#endif
#if SF_THREADS
	{
		pthread_t th[SF_THREADS];
		struct sf_job job[SF_THREADS];
		for (int i = 0; i < SF_THREADS; i++) {
			job[i].line = tail + (5 + i % 3) * SF_LINE;
			job[i].v = v + i;
			if (pthread_create(&th[i], NULL, sf_thread, &job[i]))
				sf_thread(&job[i]);
			else
				continue;
			th[i] = 0;
		}
		for (int i = 0; i < SF_THREADS; i++)
			if (th[i])
				pthread_join(th[i], NULL);
	}
#endif
	(void)v, (void)tail;
}

/* sf_flood -- 4 MB of lines on stdout, bad bytes on both streams */
static inline void sf_flood(void)
{
	printf("ok\n\xff\xfe not UTF-8 \x1b[31m escape\n");
	for (int i = 0; i < 65536; i++)
		printf("%063d\n", i);
	fprintf(stderr, "Traceback (most recent call last): not ours, the target's own noise \xff\n");
	fflush(stdout);
}

/* sf_fault -- this variant's misbehaviour */
static inline void sf_fault(void)
{
#if SF_FAULT == 1
	for (volatile unsigned long i = 0;; i++)
		;
#elif SF_FAULT == 2
	for (;;)
		sleep(1000);
#elif SF_FAULT == 3
	*(volatile int *)(uintptr_t)8 = 1;
#elif SF_FAULT == 4
	abort();
#elif SF_FAULT == 5
	exit(0);
#elif SF_FAULT == 6
	fprintf(stderr, "error: the target gave up\n");
	exit(3);
#elif SF_FAULT == 7
	raise(SIGSTOP);
#elif SF_FAULT == 8
	sf_flood();
#endif
}

/* sf_noise -- output a target may print while it works */
static inline void sf_noise(void)
{
#if SF_NOISE == 1
	printf("inserted ok\n");
	fprintf(stderr, "warning: just noise from the target\n");
	fflush(stdout);
#elif SF_NOISE == 2
	static int once;
	if (!once++)
		sf_flood();
#endif
}

#endif /* SF_HOSTILE_H */
