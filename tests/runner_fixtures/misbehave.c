/*
 * misbehave.c -- a checker-runner fixture whose CHECK misbehaves on demand
 *
 * The first u64 of the pool image selects what CHECK does, so one runner
 * process serves states of every kind (the test sends states whose writes
 * set that word).  Usage:
 *
 *   misbehave serve SIZE [TIMEOUT_MS MEM_MB CPU_S]   serve at the pool address
 *   misbehave premap SIZE                          map the pool address first
 *                                                   (the runner must refuse)
 *
 * The pool address is $CRASHCHECK_POOL_ADDR (hex) or 0x600000000000.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runner.h"

enum cmd {
	CMD_OK = 0,         /* {"cmd":0,"sum":...,"followup":...} */
	CMD_SEGV = 1,       /* write through NULL */
	CMD_ABORT = 2,
	CMD_SPIN = 3,       /* busy loop forever */
	CMD_HOG = 4,        /* malloc+touch 1 MiB blocks forever, then use the NULL */
	CMD_EXIT3 = 5,      /* exit(3) without output */
	CMD_BADJSON = 6,
	CMD_NOISY = 7,      /* 100 lines on stdout and stderr, then a result */
	CMD_RC5 = 8,        /* a result, then return 5 */
	CMD_PRETTY = 9,     /* a multi-line (pretty-printed) result */
	CMD_RECURSE = 10,   /* stack overflow */
	CMD_SLEEP = 11,     /* blocked in a system call forever */
	CMD_XMALLOC = 12,   /* checked allocation that aborts on failure */
	CMD_SCRIBBLE = 13,  /* writes into the pool, then a result */
	CMD_BYTES = 14,     /* non-UTF-8 bytes on stderr, unicode in the result */
	CMD_BIG = 15,       /* a result of several MB */
	CMD_FORK = 16,      /* forks; child and grandchild both hang (pids on stderr) */
	CMD_ECHO = 17,      /* writes the followup text verbatim as its output */
	CMD_STOP = 18,      /* stops itself (SIGSTOP) */
	CMD_LINGER = 19,    /* forks a grandchild that lives on (pid on stderr), then a result */
	CMD_EXIT0 = 20,     /* exit(0) without output */
	CMD_KILLPARENT = 21, /* kills the runner, then waits */
	CMD_DIRTY = 22,     /* changes a global, the heap, the pool, fds, a timer, umask, an rlimit, the
	                     * working directory; reports what it found */
	CMD_NAP = 23,       /* sleeps 1.5 s, then a result */
	CMD_SMEAR = 24,     /* reports, then writes, every page of the pool, of a 3 MiB global array
	                     * and of 1 MiB of stack (more pages than a reused check process keeps),
	                     * the C library's random state and a thread-local counter */
	CMD_LEAKMAP = 25,   /* reports how many mappings it finds, then leaves one more behind */
};

/* What CMD_DIRTY finds and changes: a reused check process must put all of it back. */
static int dirty_count;
static char *dirty_note;

static uint64_t *pool;
/* Allocations are chained here so the compiler cannot elide them. */
static void *volatile hoard;

/* words_sum -- sum of pool words 1..15 (what "ok" reports) */
static uint64_t words_sum(void)
{
	uint64_t s = 0;
	for (int i = 1; i < 16; i++)
		s += pool[i];
	return s;
}

/* What CMD_SMEAR sums and then writes over: 768 pages, more than the reused process keeps;
 * and a thread-local counter (in the few pages of the initial thread's TLS block). */
static uint8_t smear_global[3 << 20];
static __thread int smear_tls;

/* smear_stack -- sum, then write, DEPTH KiB of stack frames; returns the sum (internal) */
static __attribute__((noinline)) uint64_t smear_stack(int depth)
{
	volatile uint8_t frame[1024];
	uint64_t s = 0;
	for (size_t i = 0; i < sizeof(frame); i++) {
		s += frame[i];
		frame[i] = (uint8_t)(i + 1);
	}
	return s + (depth > 1 ? smear_stack(depth - 1) : 0);   /* frame is volatile: kept */
}

/* recurse -- eat the stack (the endless recursion is the point) */
#pragma clang diagnostic ignored "-Winfinite-recursion"
static int recurse(volatile char *prev, int depth)
{
	volatile char frame[4096];
	frame[0] = (char)depth;
	frame[4095] = prev ? prev[0] : 0;
	return recurse(frame, depth + 1) + frame[100];
}

/* check -- the misbehaving CHECK */
static int check(void *ctx, const char *followup, FILE *out)
{
	(void)ctx;
	switch (pool[0]) {
	case CMD_OK:
		fprintf(out, "{\"cmd\":0,\"sum\":%llu,\"followup\":\"%s\"}\n",
			(unsigned long long)words_sum(), followup);
		return 0;
	case CMD_SEGV:
		fprintf(stderr, "about to crash\n");
		*(volatile int *)(uintptr_t)8 = 1;
		return 0;
	case CMD_ABORT:
		fprintf(stderr, "about to abort\n");
		abort();
	case CMD_SPIN:
		for (volatile uint64_t i = 0;; i++)
			;
	case CMD_HOG:
		for (;;) {
			char *p = malloc(1 << 20);
			memset(p, 1, 1 << 20);   /* NULL once the limit is reached: SIGSEGV */
			*(void **)p = hoard;
			hoard = p;
		}
	case CMD_EXIT3:
		exit(3);
	case CMD_BADJSON:
		fprintf(out, "{\"cmd\": 6, oops}\n");
		return 0;
	case CMD_NOISY:
		for (int i = 0; i < 100; i++) {
			printf("stdout line %d\n", i);
			fprintf(stderr, "stderr line %d\n", i);
		}
		fprintf(out, "{\"cmd\":7}\n");
		return 0;
	case CMD_RC5:
		fprintf(out, "{\"cmd\":8}\n");
		return 5;
	case CMD_PRETTY:
		fprintf(out, "{\n  \"cmd\": 9,\n  \"list\": [1, 2,\n 3],\n  \"s\": \"a b\"\n}\n");
		return 0;
	case CMD_RECURSE:
		return recurse(NULL, 0);
	case CMD_SLEEP:
		for (;;)
			pause();
	case CMD_XMALLOC:
		for (;;) {
			char *p = malloc(1 << 20);
			if (p == NULL) {
				fprintf(stderr, "out of memory\n");
				abort();
			}
			memset(p, 1, 1 << 20);
			*(void **)p = hoard;
			hoard = p;
		}
	case CMD_SCRIBBLE:
		memset(pool + 1, 0xff, 15 * 8);
		fprintf(out, "{\"cmd\":13,\"sum\":%llu}\n", (unsigned long long)words_sum());
		return 0;
	case CMD_BYTES:
		fprintf(stderr, "bad bytes: \xff\xfe \xc3\x28 end\n");
		fprintf(out, "{\"cmd\":14,\"s\":\"caf\xc3\xa9 \\u00e9\"}\n");
		return 0;
	case CMD_BIG:
		fprintf(out, "{\"cmd\":15,\"items\":[");
		for (int i = 0; i < 200000; i++)
			fprintf(out, "%s[%d,\"%08x\"]", i ? "," : "", i, i * 2654435761u);
		fprintf(out, "]}\n");
		return 0;
	case CMD_FORK:
		if (fork() == 0)
			fprintf(stderr, "grandchild %d\n", (int)getpid());
		else
			fprintf(stderr, "child %d\n", (int)getpid());
		fflush(stderr);
		for (;;)
			pause();
	case CMD_ECHO:
		fputs(followup, out);
		return 0;
	case CMD_STOP:
		raise(SIGSTOP);
		fprintf(out, "{\"cmd\":18,\"continued\":true}\n");
		return 0;
	case CMD_LINGER:
		if (fork() == 0) {
			fprintf(stderr, "grandchild %d\n", (int)getpid());
			fflush(stderr);
			for (;;)
				pause();
		}
		usleep(20000);     /* let the grandchild say its pid */
		fprintf(out, "{\"cmd\":19}\n");
		return 0;
	case CMD_EXIT0:
		exit(0);
	case CMD_DIRTY: {
		int fd = open("/dev/null", 0);   /* left open */
		char cwd[4096];
		struct rlimit nf;
		mode_t mask = umask(077);        /* left changed, as the limit and the directory */
		getrlimit(RLIMIT_NOFILE, &nf);
		fprintf(out, "{\"cmd\":22,\"count\":%d,\"note\":\"%s\",\"fd\":%d,\"word1\":%llu,"
			"\"umask\":%o,\"nofile\":%llu,\"cwd\":\"%s\"}\n",
			++dirty_count, dirty_note ? dirty_note : "", fd, (unsigned long long)pool[1],
			(unsigned)mask, (unsigned long long)nf.rlim_cur, getcwd(cwd, sizeof(cwd)) ? cwd : "?");
		nf.rlim_cur = nf.rlim_cur > 200 ? 200 : nf.rlim_cur;
		setrlimit(RLIMIT_NOFILE, &nf);
		if (chdir("/") != 0)
			return 3;
		dirty_note = strdup("dirty");
		pool[1] += 1000;
		signal(SIGSEGV, SIG_IGN);
		alarm(1);   /* would kill a later check that runs for longer */
		return 0;
	}
	case CMD_SMEAR: {
		/* the pool past its first word (which selects the command), the array, the stack */
		size_t words = (size_t)(uintptr_t)ctx / 8;
		uint64_t ps = 0, gs = 0;
		for (size_t i = 1; i < words; i++) {
			ps += pool[i] * i;
			pool[i] = i;
		}
		for (size_t i = 0; i < sizeof(smear_global); i++) {
			gs += smear_global[i];
			smear_global[i] = (uint8_t)i;
		}
		uint64_t ss = smear_stack(1024);
		int rnd = rand();   /* the C library's own globals: its random state */
		srand((unsigned)ps + 1);
		fprintf(out, "{\"cmd\":24,\"pool\":%llu,\"global\":%llu,\"stack\":%llu,\"rand\":%d,\"tls\":%d}\n",
			(unsigned long long)ps, (unsigned long long)gs, (unsigned long long)ss, rnd, smear_tls++);
		return 0;
	}
	case CMD_LEAKMAP: {
		FILE *m = fopen("/proc/self/maps", "r");
		int n = 0, ch;
		while (m && (ch = getc(m)) != EOF)
			n += ch == '\n';
		if (m)
			fclose(m);
		/* read-only: merges with no neighbour, so it is a line of the maps of its own */
		void *p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		fprintf(out, "{\"cmd\":25,\"maps\":%d,\"left\":%s}\n", n, p == MAP_FAILED ? "false" : "true");
		return 0;
	}
	case CMD_NAP:
		usleep(1500000);
		fprintf(out, "{\"cmd\":23}\n");
		return 0;
	case CMD_KILLPARENT:
		kill(getppid(), SIGKILL);
		for (;;)
			pause();
	default:
		fprintf(out, "{\"cmd\":%llu,\"unknown\":true}\n", (unsigned long long)pool[0]);
		return 0;
	}
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: misbehave serve|premap SIZE [TIMEOUT_MS MEM_MB CPU_S]\n");
		return 2;
	}
	const char *env = getenv("CRASHCHECK_POOL_ADDR");
	uintptr_t addr = env ? (uintptr_t)strtoull(env, NULL, 0) : (uintptr_t)0x600000000000ULL;
	size_t size = (size_t)strtoull(argv[2], NULL, 0);
	struct cc_runner_limits lim = CC_RUNNER_DEFAULT_LIMITS;
	if (argc >= 6) {
		lim.timeout_ms = (unsigned)atoi(argv[3]);
		lim.mem_bytes = (size_t)atoi(argv[4]) << 20;
		lim.cpu_seconds = (unsigned)atoi(argv[5]);
	}
	if (strcmp(argv[1], "premap") == 0) {
		void *p = mmap((void *)addr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		if (p == MAP_FAILED) {
			perror("premap");
			return 2;
		}
	}
	pool = (uint64_t *)addr;
	return cc_runner_serve(0, 1, (void *)addr, size, check, (void *)(uintptr_t)size, &lim) == 0 ? 0 : 1;
}
