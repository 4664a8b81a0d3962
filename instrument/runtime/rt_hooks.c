/*
 * rt_hooks.c -- the entry points the crashcheck pass inserts into code under test
 *
 * Every hook first applies the fast filter (one subtraction and compare
 * against the hull of the PM regions), so accesses outside PM, and all
 * accesses while tracing is off, cost a call and nothing more.  Store hooks
 * are called right after the access and read the written bytes back from
 * memory; that covers vector stores and library copies without passing
 * values around.  Names start with __cc_ so they cannot clash with user code;
 * the pass declares them with the same signatures (instrument/pass).
 *
 * Each logged PM access is also a scheduling point (rt_sched.c), behind one
 * predictable branch; it passes the access's site id, which a switch there
 * puts on its trace mark.  __cc_store8 reaches it only off its inline path: the
 * scheduler runs 2+ threads, so logging is locked and never inline.  Atomics
 * get their point from __cc_sched_atomic, which the pass calls after them.
 */
#include <string.h>

#include "rt_internal.h"

#define FILTER(addr) ((uintptr_t)(addr) - cc_pm_lo < cc_pm_span)

/*
 * __cc_caller_site -- the site of the call in progress that may have entered
 * a persist helper that is not inlined (a user's pflush() in a file of its
 * own): the pass sets it around such calls and a helper's flushes and fences
 * log it in place of their own site, so they are named at the line that
 * called the helper (instrument/pass/CrashcheckPass.cpp).  Per thread; NULL
 * outside such a call.
 */
__thread crashcheck_site_t __cc_caller_site __attribute__((tls_model("initial-exec")));

/* log_store -- log a store of SIZE bytes at ADDR, in pieces if huge (internal) */
static void log_store(uint8_t kind, const void *addr, uint64_t size, uint32_t origin, uint32_t site)
{
	const unsigned char *p = addr;
	if (!cc_in_pm((uintptr_t)addr, size))
		return;
	cc_shadow_note((uintptr_t)addr, size);
	while (size > 0) {
		uint32_t n = size > (1u << 30) ? (1u << 30) : (uint32_t)size;
		cc_emit(kind, (uint8_t)origin, site, (uintptr_t)p, n, p, n);
		p += n;
		size -= n;
	}
}

/* __cc_store8 -- a plain 8-byte store (the hot path) */
void __cc_store8(const void *addr, crashcheck_site_t site)
{
	CC_LAZY_STORE(addr, 8);
	if (!FILTER(addr))
		return;
	if (cc_nregions > 1 && !cc_in_pm_slow((uintptr_t)addr))
		return;
	cc_shadow_note((uintptr_t)addr, 8);
	if (cc_append_store8((uintptr_t)addr, cc_hook_site(site)))
		return;
	/* a full buffer: switch buffers and stay on the inline path (compact events) */
	if (cc_trace_make_room() && cc_append_store8((uintptr_t)addr, cc_hook_site(site)))
		return;
	cc_emit(CC_EV_STORE, CC_ORIGIN_PLAIN, cc_hook_site(site), (uintptr_t)addr, 8, addr, 8);
	CC_SCHED_ACCESS(cc_hook_site(site), addr, 8, 1);
}

/* __cc_store -- a store of SIZE bytes (plain, atomic, vector, memset/memcpy/memmove, asm) */
void __cc_store(const void *addr, uint64_t size, uint32_t origin, crashcheck_site_t site)
{
	CC_LAZY_STORE(addr, size);
	if (!FILTER(addr) || size == 0)
		return;
	log_store(CC_EV_STORE, addr, size, origin, cc_hook_site(site));
	if (__builtin_expect(cc_trace_from != UINT64_MAX, 0))
		cc_from_store((uintptr_t)addr, size, site);   /* a code address the load stores (rt_from.c) */
	if (origin != CC_ORIGIN_ATOMIC)
		CC_SCHED_ACCESS(cc_hook_site(site), addr, size, 1);
}

/* __cc_ntstore -- a non-temporal store */
void __cc_ntstore(const void *addr, uint64_t size, uint32_t origin, crashcheck_site_t site)
{
	CC_LAZY_STORE(addr, size);
	if (!FILTER(addr) || size == 0)
		return;
	log_store(CC_EV_NTSTORE, addr, size, origin, cc_hook_site(site));
	CC_SCHED_POINT(cc_hook_site(site));
}

/* __cc_locked_store -- a locked instruction (RMW, xchg): a fence, then its store if STORED */
void __cc_locked_store(const void *addr, uint64_t size, uint32_t origin, uint32_t stored,
		       crashcheck_site_t site)
{
	if (stored)
		CC_LAZY_STORE(addr, size);
	else if (cc_lazy_store)
		return;
	if (!FILTER(addr))
		return;
	if (!cc_in_pm((uintptr_t)addr, size))
		return;
	uint32_t id = cc_hook_site(site);
	cc_emit(CC_EV_FENCE, CC_FENCE_LOCKED, id, 0, 0, NULL, 0);
	if (stored)
		log_store(CC_EV_STORE, addr, size, origin, id);
	if (origin == CC_ORIGIN_ASM) /* the pass adds no __cc_sched_atomic after inline asm */
		CC_SCHED_POINT(id);
}

/* __cc_flush -- clflush / clflushopt / clwb of the line holding ADDR */
void __cc_flush(const void *addr, uint32_t kind, crashcheck_site_t site)
{
	if (!FILTER(addr) || !cc_in_pm((uintptr_t)addr, 1))
		return;
	uintptr_t line = (uintptr_t)addr & ~(uintptr_t)(CC_LINE_SIZE - 1);
	cc_emit(CC_EV_FLUSH, (uint8_t)kind, cc_hook_site(site), line, CC_LINE_SIZE, NULL, 0);
	CC_SCHED_POINT(cc_hook_site(site));
}

/*
 * __cc_fence -- sfence, mfence or a seq_cst fence.  Once a region is
 * registered every fence is logged, whether or not it follows a PM access:
 * each one is a crash point.
 */
void __cc_fence(uint32_t kind, crashcheck_site_t site)
{
	if (cc_pm_span == 0)
		return;
	cc_emit(CC_EV_FENCE, (uint8_t)kind, cc_hook_site(site), 0, 0, NULL, 0);
	CC_SCHED_POINT(cc_hook_site(site));
}

/* cc_trace_loads -- log the loads the pass instrumented: on (1) unless CRASHCHECK_TRACE_LOADS=0
 * (rt_trace.c reads it), so a driver built with loads for threaded runs (where the harness
 * looks for persistency races in them) traces a single-threaded run without them; =threads
 * (CC_LOADS_WITH_THREADS) turns them on at the first pthread_create (rt_threads.c), so the
 * single-threaded set-up before a threaded history's threads start (a load phase of hundreds
 * of operations) logs none */
int cc_trace_loads = 1;

/* __cc_load -- a load of SIZE bytes (only with load instrumentation).  The hook runs before the
 * load, so its scheduling point comes first and the event after it: a thread held or switched
 * out there (a writer aim holds its reader before the load until the writer's store) loads when
 * it resumes, after what the others did meanwhile, and the trace must say so (logged before the
 * point, the load of a pending store looked like one before the store: lfhash's clear-no-help) */
void __cc_load(const void *addr, uint64_t size, crashcheck_site_t site)
{
	if (cc_trace_loads != 1 || !FILTER(addr) || !cc_in_pm((uintptr_t)addr, size))
		return;
	CC_SCHED_ACCESS(cc_hook_site(site), addr, size, 0);
	cc_emit(CC_EV_LOAD, 0, cc_hook_site(site), (uintptr_t)addr, (uint32_t)size, NULL, 0);
}

/* libpmem modes, decided by the pass from the function's name */
enum { PMEM_FLUSH_DRAIN = 0, PMEM_FLUSH_ONLY = 1, PMEM_DRAIN_ONLY = 2, PMEM_BY_FLAGS = 3 };
#define PMEM_F_MEM_NODRAIN (1u << 0)
#define PMEM_F_MEM_NOFLUSH (1u << 5)
#define NO_STORE 0xffu

/*
 * __cc_pmem -- what a libpmem call did to [addr, addr+len): the copy or fill
 * (if STORED), the flush of every line, and the drain (an sfence), as MODE
 * and FLAGS say.  libpmem flushes with the best instruction the CPU has; it
 * is logged as clwb, which like clflushopt needs the drain to be durable.
 */
void __cc_pmem(const void *addr, uint64_t len, uint32_t stored, uint32_t mode, uint32_t flags,
	       crashcheck_site_t site)
{
	if (stored != NO_STORE && len)
		CC_LAZY_STORE(addr, len);
	if (cc_pm_span == 0 || cc_lazy_store)
		return;
	uint32_t id = cc_hook_site(site);
	int flush = mode != PMEM_DRAIN_ONLY, drain = mode == PMEM_FLUSH_DRAIN || mode == PMEM_DRAIN_ONLY;
	if (mode == PMEM_BY_FLAGS) {
		flush = !(flags & PMEM_F_MEM_NOFLUSH);
		drain = flush && !(flags & PMEM_F_MEM_NODRAIN);
	}
	if (stored != NO_STORE && len && FILTER(addr))
		log_store(CC_EV_STORE, addr, len, CC_ORIGIN_LIBPMEM, id);
	if (flush && len) {
		uintptr_t p = (uintptr_t)addr & ~(uintptr_t)(CC_LINE_SIZE - 1);
		for (; p < (uintptr_t)addr + len; p += CC_LINE_SIZE)
			if (FILTER(p) && cc_in_pm(p, 1))
				cc_emit(CC_EV_FLUSH, CC_FLUSH_CLWB, id, p, CC_LINE_SIZE, NULL, 0);
	}
	if (drain)
		cc_emit(CC_EV_FENCE, CC_FENCE_SFENCE, id, 0, 0, NULL, 0);
	CC_SCHED_POINT(id);
}
