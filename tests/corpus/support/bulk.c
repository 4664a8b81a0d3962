/*
 * bulk.c -- many events, for the trace reader's tests (tests/unit/test_trace_reader.py)
 *
 * usage: bulk POOL N HOW -- op_begin(0), N 8-byte stores to the pool, op_end(0), then:
 *   exit   return normally (a complete trace)
 *   segv   die by SIGSEGV
 *   abort  die by abort()
 *   kill   crashcheck_trace_flush(), 10 more stores, then SIGKILL (no handler runs)
 */
#include <signal.h>
#include <string.h>

#include "../corpus.h"

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	char *pm = corpus_pool(argc, argv);
	uint64_t n = strtoull(argv[2], NULL, 0), *w = (uint64_t *)pm;
	crashcheck_op_begin(0);
	for (uint64_t i = 0; i < n; i++) {
		w[i % (CORPUS_POOL_SIZE / 8)] = i;
		BARRIER(); /* one 8-byte store event each, no vectorising */
	}
	crashcheck_op_end(0);
	if (strcmp(argv[3], "segv") == 0)
		*(volatile uint64_t *)opaque(8) = 1;
	if (strcmp(argv[3], "abort") == 0)
		abort();
	if (strcmp(argv[3], "kill") == 0) {
		crashcheck_trace_flush();
		for (uint64_t i = 0; i < 10; i++)
			w[i] = i;
		raise(SIGKILL);
	}
	return 0;
}
