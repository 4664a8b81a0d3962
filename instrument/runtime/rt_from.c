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
	free(table);
	table = NULL;
	cap = used = 0;
}
