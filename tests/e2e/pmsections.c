/*
 * pmsections.c -- a small libpmem program marked in pmreorder sections, for the tests of
 * pmreorder's engine configuration and PMREORDER_MARKERS in `crashcheck run`
 * (tests/e2e/test_program_engines.py).
 *
 *   pmsections write POOL   three marked sections:
 *     setup: x then y, each persisted on its own: a crash between them leaves x without y, an
 *            inconsistent state the program accepts (the section is meant to be unchecked);
 *     pair:  a then b, in two cache lines, flushed together behind one fence: b may persist
 *            without a;
 *     put:   v, persisted before put.END (with -DPUT_BUG: after it).
 *   With -DEND_BAD it then sets x alone, outside any section: the run ends inconsistent.
 *   pmsections check POOL   exit 0 when consistent: x == y, b implies a, and v persisted once the
 *     markers say put ended. It insists on PMREORDER_MARKERS (unset: exit 2), which must be a
 *     prefix of the markers the writer emits, joined by '|' (else exit 3).
 *   pmsections check-tag POOL   the same, and the pool must still hold the tag "TAG!" at offset
 *     1024, which only a set-up command writes (else exit 6).
 */
#include <libpmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <valgrind/valgrind.h>

#define PMC_EMIT_LOG (VG_USERREQ_TOOL_BASE('P', 'C') + 30)
#define MARK(text) VALGRIND_DO_CLIENT_REQUEST_STMT(PMC_EMIT_LOG, (text), 0, 0, 0, 0)
#define POOL_SIZE 4096
#define ALL "setup.BEGIN|setup.END|pair.BEGIN|pair.END|put.BEGIN|put.END"

struct pool {
	uint64_t x, y;
	char pad1[112];
	uint64_t a;              /* offset 128: its own cache line */
	char pad2[56];
	uint64_t b;              /* offset 192: another */
	char pad3[56];
	uint64_t v;              /* offset 256 */
};

static struct pool *map(const char *path)
{
	size_t len;
	int is_pmem;
	void *p = pmem_map_file(path, POOL_SIZE, PMEM_FILE_CREATE, 0600, &len, &is_pmem);
	if (p == NULL) {
		perror(path);
		exit(4);
	}
	return p;
}

static int check(struct pool *p)
{
	const char *m = getenv("PMREORDER_MARKERS");
	if (m == NULL) {
		puts("PMREORDER_MARKERS is not set");
		return 2;
	}
	size_t n = strlen(m);
	if (n > 0 && (strncmp(m, ALL, n) != 0 || (ALL[n] != '\0' && ALL[n] != '|'))) {
		printf("PMREORDER_MARKERS is not a prefix of the markers emitted: '%s'\n", m);
		return 3;
	}
	if (p->x != p->y) {
		printf("x %lu without y %lu\n", (unsigned long)p->x, (unsigned long)p->y);
		return 1;
	}
	if (p->b && !p->a) {
		puts("b persisted without a");
		return 1;
	}
	if (strstr(m, "put.END") && p->v != 1) {
		puts("put ended but v did not persist");
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 5;
	struct pool *p = map(argv[2]);
	if (strcmp(argv[1], "check-tag") == 0 && memcmp((char *)p + 1024, "TAG!", 4) != 0) {
		puts("no tag from the set-up command");
		return 6;
	}
	if (strncmp(argv[1], "check", 5) == 0)
		return check(p);
	MARK("setup.BEGIN");
	p->x = 1;
	pmem_persist(&p->x, 8);
	p->y = 1;
	pmem_persist(&p->y, 8);
	MARK("setup.END");
	MARK("pair.BEGIN");
	p->a = 1;
	p->b = 1;
	pmem_flush(&p->a, 8);
	pmem_flush(&p->b, 8);
	pmem_drain();
	MARK("pair.END");
	MARK("put.BEGIN");
	p->v = 1;
#ifdef PUT_BUG
	MARK("put.END");
	pmem_persist(&p->v, 8);
#else
	pmem_persist(&p->v, 8);
	MARK("put.END");
#endif
#ifdef END_BAD
	p->x = 2;                /* past every section: only the crash-free image holds it */
	pmem_persist(&p->x, 8);
#endif
	return 0;
}
