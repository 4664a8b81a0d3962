/*
 * rt_shadow.c -- shadows of regions written by a precompiled library
 *
 * A region mapped by libpmemobj (rt_pmemobj.c) is written by code the pass
 * never compiled: the library's undo and redo logs, its allocator's headers
 * and bitmaps.  Such a region gets a shadow: a private copy of its bytes as
 * the trace knows them.  Every store the pass logs into the region is copied
 * into the shadow too (cc_shadow_note, from the hooks), so the shadow always
 * equals "the initial image plus every logged store".  After each call into
 * the library, cc_shadow_sync compares the mapping with the shadow and logs
 * every 8-byte word that differs as a store of origin `library` at the
 * call's site, then brings the shadow up to date.
 *
 * What that assumes (docs/pmemcheck.md "libpmemobj under the pass"): the
 * library persists what it wrote before it returns, so a `library` store is
 * durable the moment it is logged (crashsim/simulate.py), and crash points
 * inside a library call are not explored.  The order of the library's
 * stores within one call is lost; their bytes and their call site are not.
 *
 * One thread: a shadow is compared and noted without locking (the pass's
 * tracer serialises threads only under the scheduler).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

#define CC_MAX_SHADOWS 8
#define CC_PAGE 4096

static struct shadow {
	uintptr_t base;
	size_t size;
	unsigned char *copy;
} shadows[CC_MAX_SHADOWS];
static unsigned nshadows;

uintptr_t cc_shadow_lo;
uintptr_t cc_shadow_span;

/* update_hull -- the fast filter of cc_shadow_note (internal) */
static void update_hull(void)
{
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	for (unsigned i = 0; i < nshadows; i++) {
		if (shadows[i].base < lo)
			lo = shadows[i].base;
		if (shadows[i].base + shadows[i].size > hi)
			hi = shadows[i].base + shadows[i].size;
	}
	cc_shadow_lo = nshadows ? lo : 0;
	cc_shadow_span = nshadows ? hi - lo : 0;
}

/* cc_shadow_add -- shadow [addr, addr+size), whose bytes the trace knows as INITIAL (or, if
 * NULL, as they are now); -1 with the reason set if it cannot */
int cc_shadow_add(void *addr, size_t size, const void *initial)
{
	if (nshadows == CC_MAX_SHADOWS) {
		cc_set_error("too many library-mapped pools (at most %d)", CC_MAX_SHADOWS);
		return -1;
	}
	unsigned char *copy = malloc(size);
	if (copy == NULL) {
		cc_set_error("cannot allocate a %zu-byte shadow of a library-mapped pool", size);
		return -1;
	}
	memcpy(copy, initial ? initial : addr, size);
	shadows[nshadows].base = (uintptr_t)addr;
	shadows[nshadows].size = size;
	shadows[nshadows].copy = copy;
	nshadows++;
	update_hull();
	return 0;
}

/* cc_shadow_drop -- stop shadowing the region at ADDR (it is about to be unmapped) */
void cc_shadow_drop(void *addr)
{
	for (unsigned i = 0; i < nshadows; i++) {
		if (shadows[i].base != (uintptr_t)addr)
			continue;
		free(shadows[i].copy);
		shadows[i] = shadows[--nshadows];
		update_hull();
		return;
	}
}

/* cc_shadow_note_slow -- a logged store of SIZE bytes at ADDR: copy it into its shadow */
void cc_shadow_note_slow(uintptr_t addr, uint64_t size)
{
	for (unsigned i = 0; i < nshadows; i++) {
		struct shadow *s = &shadows[i];
		if (addr - s->base >= s->size)
			continue;
		uint64_t off = addr - s->base;
		if (size > s->size - off)
			size = s->size - off;
		memcpy(s->copy + off, (const void *)addr, size);
		return;
	}
}

/* sync_one -- log S's differing words as library stores at SITE; 1 if any (internal) */
static int sync_one(struct shadow *s, uint32_t site)
{
	const unsigned char *mem = (const unsigned char *)s->base;
	int any = 0;
	size_t run = 0, run_len = 0;         /* a run of differing words not yet logged */
	for (size_t page = 0; page < s->size; page += CC_PAGE) {
		size_t n = s->size - page < CC_PAGE ? s->size - page : CC_PAGE;
		if (memcmp(mem + page, s->copy + page, n) == 0) {
			if (run_len) {
				cc_emit(CC_EV_STORE, CC_ORIGIN_LIBRARY, site, s->base + run, (uint32_t)run_len,
					mem + run, (uint32_t)run_len);
				memcpy(s->copy + run, mem + run, run_len);
				run_len = 0;
			}
			continue;
		}
		for (size_t off = page; off < page + n; off += 8) {
			size_t w = page + n - off < 8 ? page + n - off : 8;
			if (memcmp(mem + off, s->copy + off, w) != 0) {
				if (run_len == 0)
					run = off;
				run_len = off + w - run;
				continue;
			}
			if (run_len) {
				cc_emit(CC_EV_STORE, CC_ORIGIN_LIBRARY, site, s->base + run, (uint32_t)run_len,
					mem + run, (uint32_t)run_len);
				memcpy(s->copy + run, mem + run, run_len);
				run_len = 0;
			}
		}
		any = 1;
	}
	if (run_len) {
		cc_emit(CC_EV_STORE, CC_ORIGIN_LIBRARY, site, s->base + run, (uint32_t)run_len,
			mem + run, (uint32_t)run_len);
		memcpy(s->copy + run, mem + run, run_len);
	}
	return any;
}

/*
 * cc_shadow_sync -- after a library call at SITE: log what it wrote into every shadowed region,
 * then a fence (the library drained before returning, which also makes the program's earlier
 * flushes durable); nothing at all when it wrote nothing.  Returns whether it wrote.
 */
int cc_shadow_sync(uint32_t site)
{
	int any = 0;
	if (!cc_trace_enabled())          /* a forked child, or the trace ended */
		return 0;
	for (unsigned i = 0; i < nshadows; i++)
		any |= sync_one(&shadows[i], site);
	if (any)
		cc_emit(CC_EV_FENCE, CC_FENCE_SFENCE, site, 0, 0, NULL, 0);
	return any;
}
