/*
 * pool_errors.c -- the runtime's pool errors, for tests/unit/test_instrument_pool.py
 *
 * usage: pool_errors POOL MODE SIZE [ADDR]
 *   open     crashcheck_pool_open(POOL, SIZE, ADDR, 0)
 *   create   crashcheck_pool_open(POOL, SIZE, ADDR, CRASHCHECK_POOL_CREATE)
 *   mapped   map the last page of [ADDR, ADDR+SIZE) first, then open with CREATE
 *   overlap  create the pool, then register a range overlapping it
 * Prints "ok ADDRESS" or "error: " and crashcheck_last_error(); exits 0 or 1.
 */
#include <string.h>
#include <sys/mman.h>

#include "../corpus.h"

int main(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	const char *mode = argv[2];
	size_t size = strtoull(argv[3], NULL, 0);
	uintptr_t addr = argc > 4 ? strtoull(argv[4], NULL, 0) : 0;
	int flags = strcmp(mode, "open") == 0 ? 0 : CRASHCHECK_POOL_CREATE;
	if (strcmp(mode, "mapped") == 0) {
		/* Only the last page of the range is taken: a partial overlap must be caught too. */
		void *at = (void *)(addr + size - 4096);
		void *p = mmap(at, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (p != at) {
			printf("setup: cannot map %p\n", at);
			return 2;
		}
	}
	char *pm = crashcheck_pool_open(argv[1], size, addr, flags);
	if (pm != NULL && strcmp(mode, "overlap") == 0) {
		if (crashcheck_register_pm(pm + size - 4096, 8192) == 0) {
			printf("ok overlap registered\n");
			return 0;
		}
		pm = NULL;
	}
	if (pm == NULL) {
		printf("error: %s\n", crashcheck_last_error());
		return 1;
	}
	printf("ok %#lx\n", (unsigned long)(uintptr_t)pm);
	return 0;
}
