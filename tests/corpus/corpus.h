/*
 * corpus.h -- shared set-up for the instrumentation corpus (the .c files of tests/corpus)
 *
 * Every corpus program opens a fresh 1 MiB pool at the default address from
 * the file named by argv[1], does one construct to it, and exits.  The
 * expected events live in the program's own header comment (see README.md);
 * tests/unit/test_instrument_corpus.py builds each program at -O0 and -O2, runs it
 * with CRASHCHECK_TRACE set and compares the trace event by event.
 */
#ifndef CORPUS_H
#define CORPUS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <crashcheck.h>

#define CORPUS_POOL_SIZE (1u << 20)

/* A compiler barrier: keeps the optimizer from merging or moving stores
 * across it.  It is inline asm with no instruction, so it logs nothing. */
#define BARRIER() __asm__ __volatile__("" ::: "memory")

/* corpus_pool -- the pool at argv[1], or exit 3 with the runtime's reason */
static inline char *corpus_pool(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "corpus.pool";
	char *pm = (char *)crashcheck_pool_open(path, CORPUS_POOL_SIZE, 0, CRASHCHECK_POOL_CREATE);
	if (pm == NULL) {
		fprintf(stderr, "corpus: %s\n", crashcheck_last_error());
		exit(3);
	}
	return pm;
}

/* opaque -- V, hidden from the optimizer (so -O2 keeps run-time values) */
static inline uint64_t opaque(uint64_t v)
{
	__asm__ __volatile__("" : "+r"(v));
	return v;
}

#endif /* CORPUS_H */
