/*
 * lazyread.c -- a checker-runner fixture for lazy exploration, compiled WITH the crashcheck pass
 *
 * Its check reads the pool the way recovery code does: which bytes it reads
 * depends on the bytes it read before.  Starting at word 0 it follows a chain
 * of STEPS words (the followup text, default 6), each word naming the next
 * one; on the way it compares bytes with memcmp, measures a string with
 * strlen, writes a word and reads it back (bytes the check wrote itself are
 * not the crash's), and does an atomic add.  The result lists everything it
 * read, so two states give the same result exactly when the check could not
 * tell them apart: what lazy exploration's classes must respect.  A followup
 * with a 'p' in it ("6p") also reports the process that ran the check (which
 * shows whether an execution ran in the reused check process or a fork).
 *
 *   lazyread serve SIZE    serve at $CRASHCHECK_POOL_ADDR (hex) or 0x600000000000
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runner.h"

static volatile uint64_t *pool;
static size_t words;

static int check(void *ctx, const char *followup, FILE *out)
{
	(void)ctx;
	int steps = followup && *followup ? atoi(followup) : 6;
	size_t at = 0;
	fprintf(out, "{\"read\":[");
	for (int i = 0; i < steps; i++) {
		uint64_t w = pool[at];
		fprintf(out, "%s%llu", i ? "," : "", (unsigned long long)w);
		switch (w % 4) {
		case 0:   /* compare two 4-byte pieces elsewhere */
			fprintf(out, ",%d", memcmp((const void *)(pool + (w >> 8) % words),
						   (const void *)(pool + (w >> 16) % words), 4) < 0);
			break;
		case 1:   /* a string's length, bounded by the pool's end */
			if (memchr((const void *)(pool + (w >> 8) % words), 0,
				   (words - (w >> 8) % words) * 8))
				fprintf(out, ",%zu", strlen((const char *)(pool + (w >> 8) % words)));
			break;
		case 2: { /* write a word, then read it back (its bytes are the check's own) */
			size_t k = (w >> 8) % words;
			pool[k] = w ^ 0x5a5a;
			fprintf(out, ",%llu", (unsigned long long)pool[k]);
			break;
		}
		default:  /* an atomic read-modify-write */
			fprintf(out, ",%llu", (unsigned long long)__atomic_fetch_add(
				&pool[(w >> 8) % words], 1, __ATOMIC_SEQ_CST));
		}
		at = (size_t)(w >> 3) % words;
	}
	if (followup && strchr(followup, 'p'))
		fprintf(out, "],\"pid\":%d}\n", (int)getpid());
	else
		fprintf(out, "]}\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3 || strcmp(argv[1], "serve") != 0) {
		fprintf(stderr, "usage: %s serve SIZE\n", argv[0]);
		return 2;
	}
	size_t size = strtoull(argv[2], NULL, 0);
	const char *env = getenv("CRASHCHECK_POOL_ADDR");
	uintptr_t addr = env ? strtoull(env, NULL, 16) : 0x600000000000ull;
	pool = (volatile uint64_t *)addr;
	words = size / 8;
	struct cc_runner_limits lim = { 5000u, (size_t)256 << 20, 5u };
	return cc_runner_serve(0, 1, (void *)addr, size, check, NULL, &lim) == 0 ? 0 : 1;
}
