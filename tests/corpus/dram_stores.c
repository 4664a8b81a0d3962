/* crashcheck-corpus
 * construct: stores, copies, atomics and flushes to DRAM (malloc, stack, globals) never appear; only the PM ones do
 * cpu: clwb
 * => store/plain off=0x0 size=8 data={le(1,8)} line=@pm1
 * => store/plain off=0x8 size=8 data={le(2,8)} line=@pm2
 * => fence/sfence line=@fence
 */
#include <immintrin.h>
#include <stdatomic.h>
#include <string.h>

#include "corpus.h"

uint64_t global_word;
_Atomic uint64_t global_counter;
static char global_buf[256];

/* sink -- keep a DRAM buffer alive so its stores are not optimised away */
__attribute__((noinline)) static uint64_t sink(const void *p, size_t n)
{
	uint64_t s = 0;
	for (size_t i = 0; i < n; i++)
		s += ((const unsigned char *)p)[i];
	return s;
}

int main(int argc, char **argv)
{
	char *pm = corpus_pool(argc, argv);
	char *heap = malloc(4096);
	char stack[128];
	/* A pointer the pass cannot prove is DRAM: the runtime's range check drops it. */
	char *either = opaque(0) ? pm : heap;

	*(uint64_t *)pm = 1;                          /* @pm1 */
	*(uint64_t *)heap = 3;
	memset(heap + 64, 0x11, opaque(100));
	memcpy(stack, heap, opaque(64));
	*(uint64_t *)either = 4;
	memset(either + 8, 0, opaque(40));
	global_word = 5;
	memset(global_buf, 0x22, opaque(256));
	atomic_fetch_add(&global_counter, 1);
	atomic_fetch_add((_Atomic uint64_t *)heap, 1);
	_mm_clwb(heap);
	_mm_clwb(stack);
	*(uint64_t *)(pm + 8) = 2;                    /* @pm2 */
	_mm_sfence();                                 /* @fence */
	uint64_t s = sink(heap, 4096) + sink(stack, sizeof stack) + sink(global_buf, 256) + global_word;
	free(heap);
	return s == 0 ? 1 : 0;
}
