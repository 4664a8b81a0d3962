/*
 * rt_from.c -- the objects a load phase allocated, for a trace that starts over after it
 *
 * With $CRASHCHECK_TRACE_FROM=N the trace starts over at operation N's
 * op_begin (rt_trace.c's cc_trace_from_here), dropping the load's events,
 * its allocations too.  But a checked operation that frees an object the
 * load allocated, and a crash that leaks it, must still name the function
 * that allocated it (specs/leaks.py: a known-by-design leak is matched by its
 * allocating site).  So until the trace starts over, the live objects are
 * kept here (address, size, site), and logged again as `alloc` events right
 * after the regions' new images.  Single-threaded (a load phase is).
 *
 * Likewise the stores of a code address the load made into PM (a constructor's
 * vtable pointer: the pass flags their sites): the harness reports any such
 * store in a trace as code-pointer-in-pm and leaves that history's crash states
 * alone, so each address stored is logged again after the objects (in address
 * order) as a store of the bytes there now, its line flushed, then one fence:
 * all before the first checked operation, where crash points are set-up and
 * never checked.
 */
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

struct live { uintptr_t obj; uint64_t size; uint32_t site; };

static struct live *table;      /* open addressing; obj 0 is an empty slot, 1 a removed one */
static size_t cap, used;        /* slots, and slots taken (removed ones too) */
static int done;                /* the trace started over: nothing more to keep */

static size_t slot_of(uintptr_t obj, size_t n)
{
	return (size_t)((obj >> 4) * 0x9e3779b97f4a7c15ull) & (n - 1);
}

/* grow -- twice the slots, removed ones dropped (internal) */
static int grow(void)
{
	size_t ncap = cap ? cap * 2 : 1024;
	struct live *nt = calloc(ncap, sizeof(*nt));
	if (nt == NULL)
		return -1;
	size_t nused = 0;
	for (size_t i = 0; i < cap; i++) {
		if (table[i].obj <= 1)
			continue;
		size_t j = slot_of(table[i].obj, ncap);
		while (nt[j].obj)
			j = (j + 1) & (ncap - 1);
		nt[j] = table[i];
		nused++;
	}
	free(table);
	table = nt;
	cap = ncap;
	used = nused;
	return 0;
}

/* cc_from_alloc -- OBJ of SIZE bytes was allocated at SITE (while a start-over is ahead) */
void cc_from_alloc(uintptr_t obj, uint64_t size, uint32_t site)
{
	if (done || cc_trace_from == UINT64_MAX || obj <= 1)
		return;
	if ((used + 1) * 2 > cap && grow() != 0) {
		cc_set_error("out of memory keeping the load's allocations");
		return;
	}
	size_t j = slot_of(obj, cap);
	while (table[j].obj > 1 && table[j].obj != obj)
		j = (j + 1) & (cap - 1);
	if (table[j].obj == 0)
		used++;
	table[j].obj = obj;
	table[j].size = size;
	table[j].site = site;
}

/* cc_from_free -- OBJ was freed (while a start-over is ahead) */
void cc_from_free(uintptr_t obj)
{
	if (done || cap == 0)
		return;
	for (size_t j = slot_of(obj, cap); table[j].obj; j = (j + 1) & (cap - 1))
		if (table[j].obj == obj) {
			table[j].obj = 1;
			return;
		}
}

struct codeptr { uintptr_t addr; uint64_t size; uint64_t seq; uint32_t site; };
static struct codeptr *codeptrs;    /* every such store, in order (one address may repeat) */
static size_t ncodeptrs, codeptr_cap;

/* cc_from_store -- a store of SIZE bytes at ADDR in PM, at SITE (while a start-over is ahead):
 * kept if SITE stores a code address (appended: a load may store thousands; duplicates go at
 * the start-over, log_codeptrs) */
void cc_from_store(uintptr_t addr, uint64_t size, crashcheck_site_t site)
{
	if (done || site == NULL || !(site->flags & CC_SITE_CODE_POINTER))
		return;
	if (ncodeptrs == codeptr_cap) {
		size_t ncap = codeptr_cap ? codeptr_cap * 2 : 16;
		struct codeptr *n = realloc(codeptrs, ncap * sizeof(*n));
		if (n == NULL) {
			cc_set_error("out of memory keeping the load's code addresses");
			return;
		}
		codeptrs = n;
		codeptr_cap = ncap;
	}
	codeptrs[ncodeptrs] = (struct codeptr){addr, size, ncodeptrs, cc_site_id(site)};
	ncodeptrs++;
}

/* by_addr_then_seq -- qsort order: address, then the order stored (internal) */
static int by_addr_then_seq(const void *x, const void *y)
{
	const struct codeptr *a = x, *b = y;
	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* log_codeptrs -- the load's stores of code addresses again, durable before the checked part */
static void log_codeptrs(void)
{
	/* in address order, the last store at each address (the same trace on every run) */
	qsort(codeptrs, ncodeptrs, sizeof(*codeptrs), by_addr_then_seq);
	for (size_t i = 0; i < ncodeptrs; i++) {
		if (i + 1 < ncodeptrs && codeptrs[i + 1].addr == codeptrs[i].addr)
			continue;
		struct codeptr *c = &codeptrs[i];
		cc_emit(CC_EV_STORE, CC_ORIGIN_PLAIN, c->site, c->addr, (uint32_t)c->size,
			(const void *)c->addr, (uint32_t)c->size);
		for (uintptr_t line = c->addr & ~(uintptr_t)(CC_LINE_SIZE - 1); line < c->addr + c->size;
		     line += CC_LINE_SIZE)
			cc_emit(CC_EV_FLUSH, CC_FLUSH_CLWB, c->site, line, CC_LINE_SIZE, NULL, 0);
	}
	if (ncodeptrs)
		cc_emit(CC_EV_FENCE, CC_FENCE_SFENCE, codeptrs[0].site, 0, 0, NULL, 0);
	free(codeptrs);
	codeptrs = NULL;
	ncodeptrs = codeptr_cap = 0;
}

/* cc_from_log_live -- log every live object again, in address order, and stop keeping them */
void cc_from_log_live(void)
{
	done = 1;
	size_t n = 0;
	for (size_t i = 0; i < cap; i++)
		if (table[i].obj > 1)
			table[n++] = table[i];
	for (size_t i = 1; i < n; i++) {      /* insertion sort: the same trace on every run */
		struct live x = table[i];
		size_t j = i;
		while (j > 0 && table[j - 1].obj > x.obj) {
			table[j] = table[j - 1];
			j--;
		}
		table[j] = x;
	}
	for (size_t i = 0; i < n; i++)
		cc_emit(CC_EV_ALLOC, 0, table[i].site, table[i].obj, 8, &table[i].size, 8);
	log_codeptrs();
	free(table);
	table = NULL;
	cap = used = 0;
}
