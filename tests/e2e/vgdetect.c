/*
 * vgdetect.c -- a libpmem program that marks its sections for pmreorder only when it finds itself
 * under pmemcheck, the way PMDK's own code decides (RUNNING_ON_VALGRIND, then registering a
 * variable of its own as PM and asking pmemcheck whether it is PM), for the tests of Valgrind
 * client requests under the pass (tests/e2e/test_client_requests.py).
 *
 *   vgdetect write POOL   prints "valgrind=V pmemcheck=P other=O" (O: the answer to a request no
 *     tool knows, whose default is 77), then, marked `put.BEGIN` / `put.END` when P: sets flag
 *     before data (with -DVG_GOOD: data first), each persisted with pmem_persist; then, marked
 *     `note.*`, writes a note that it persists only through pmemcheck's DO_FLUSH and DO_FENCE
 *     requests (no flush instruction: libpmem's msync path persists this way).
 *   vgdetect scratch POOL   with libpmem's pmem_memset_persist alone: flag set, data 0 (an
 *     inconsistent state, left on purpose), then the whole struct cleared; then data, then flag,
 *     correctly. pmreorder's users skip such set-up with `-x pmem_memset_persist=NoReorderNoCheck`
 *     and PMREORDER_EMIT_LOG=1 (libpmem's own markers around its memset/memcpy functions).
 *   vgdetect check POOL   exit 0 when consistent: flag set implies data == 42; 1 otherwise.
 *   vgdetect check-tag POOL   the same, and the pool must hold "TAG!" at offset 1024, which only
 *     a set-up command writes before the run (else exit 6).
 */
#include <libpmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <valgrind/valgrind.h>

#define PMC(n) (VG_USERREQ_TOOL_BASE('P', 'C') + (n))
#define PMC_REGISTER(addr, len) VALGRIND_DO_CLIENT_REQUEST_STMT(PMC(0), (addr), (len), 0, 0, 0)
#define PMC_REMOVE(addr, len) VALGRIND_DO_CLIENT_REQUEST_STMT(PMC(2), (addr), (len), 0, 0, 0)
#define PMC_IS_PMEM(addr, len) VALGRIND_DO_CLIENT_REQUEST_EXPR(0, PMC(3), (addr), (len), 0, 0, 0)
#define PMC_DO_FLUSH(addr, len) VALGRIND_DO_CLIENT_REQUEST_STMT(PMC(5), (addr), (len), 0, 0, 0)
#define PMC_DO_FENCE VALGRIND_DO_CLIENT_REQUEST_STMT(PMC(6), 0, 0, 0, 0, 0)
#define PMC_EMIT_LOG(text) VALGRIND_DO_CLIENT_REQUEST_STMT(PMC(30), (text), 0, 0, 0, 0)
#define POOL_SIZE 4096

struct pool {
	uint64_t flag;
	char pad[56];
	uint64_t data;        /* its own cache line */
	char pad2[56];
	uint64_t note;
};

static unsigned on_pmemcheck;

/* detect -- PMDK's test: under Valgrind, is a variable registered as PM seen as PM? */
static unsigned detect(unsigned on_valgrind)
{
	if (!on_valgrind)
		return 0;
	PMC_REGISTER(&on_pmemcheck, sizeof(on_pmemcheck));
	unsigned yes = (unsigned)PMC_IS_PMEM(&on_pmemcheck, sizeof(on_pmemcheck));
	PMC_REMOVE(&on_pmemcheck, sizeof(on_pmemcheck));
	return yes ? 1 : 0;
}

#define MARK(text) do { if (on_pmemcheck) PMC_EMIT_LOG(text); } while (0)

int main(int argc, char **argv)
{
	if (argc != 3 || (strcmp(argv[1], "write") && strcmp(argv[1], "check") && strcmp(argv[1], "scratch") &&
			  strcmp(argv[1], "check-tag")))
		return fprintf(stderr, "usage: vgdetect write|scratch|check|check-tag POOL\n"), 2;
	size_t len;
	int is_pmem;
	struct pool *p = pmem_map_file(argv[2], POOL_SIZE, PMEM_FILE_CREATE, 0600, &len, &is_pmem);
	if (p == NULL)
		return perror(argv[2]), 4;
	if (!strcmp(argv[1], "check-tag") && memcmp((char *)p + 1024, "TAG!", 4) != 0)
		return printf("error: no tag from the set-up command\n"), 6;
	if (!strncmp(argv[1], "check", 5)) {
		if (p->flag && p->data != 42)
			return printf("error: flag without data (%lu)\n", (unsigned long)p->data), 1;
		return 0;
	}
	if (!strcmp(argv[1], "scratch")) {
		pmem_memset_persist(&p->flag, 1, 1);
		pmem_memset_persist(&p->data, 0, sizeof(p->data));
		pmem_memset_persist(p, 0, sizeof(*p));
		p->data = 42;
		pmem_persist(&p->data, sizeof(p->data));
		p->flag = 1;
		pmem_persist(&p->flag, sizeof(p->flag));
		return 0;
	}
	unsigned on_valgrind = RUNNING_ON_VALGRIND;
	on_pmemcheck = detect(on_valgrind);
	unsigned long other = VALGRIND_DO_CLIENT_REQUEST_EXPR(77, VG_USERREQ_TOOL_BASE('Z', 'Z'), 0, 0, 0, 0, 0);
	printf("valgrind=%u pmemcheck=%u other=%lu\n", on_valgrind, on_pmemcheck, other);
	MARK("put.BEGIN");
#ifdef VG_GOOD
	p->data = 42;
	pmem_persist(&p->data, sizeof(p->data));
	p->flag = 1;
	pmem_persist(&p->flag, sizeof(p->flag));
#else
	p->flag = 1;
	pmem_persist(&p->flag, sizeof(p->flag));
	p->data = 42;
	pmem_persist(&p->data, sizeof(p->data));
#endif
	MARK("put.END");
	MARK("note.BEGIN");
	p->note = 7;
	PMC_DO_FLUSH(&p->note, sizeof(p->note));
	PMC_DO_FENCE;
	MARK("note.END");
	pmem_unmap(p, len);
	return 0;
}
