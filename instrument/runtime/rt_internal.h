/*
 * rt_internal.h -- state shared by the runtime's files (internal)
 *
 * The runtime is split by job: rt_trace.c owns the trace file and the event
 * buffer, rt_regions.c the registered PM regions and pools, rt_hooks.c the
 * entry points the pass calls, rt_api.c the public API of crashcheck.h,
 * rt_threads.c thread ids and the switch to locked logging.
 *
 * The event encoding is docs/trace-format.md; keep the two in step.
 */
#ifndef CC_RT_INTERNAL_H
#define CC_RT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "crashcheck.h"

/* Event kinds (docs/trace-format.md). */
enum cc_kind {
	CC_EV_STORE = 1,
	CC_EV_NTSTORE = 2,
	CC_EV_FLUSH = 3,
	CC_EV_FENCE = 4,
	CC_EV_OP_BEGIN = 5,
	CC_EV_OP_END = 6,
	CC_EV_ALLOC = 7,
	CC_EV_FREE = 8,
	CC_EV_MARK = 9,
	CC_EV_LOAD = 10,
	CC_EV_REGION = 11,
	CC_EV_END = 12,
};

enum cc_flush_kind { CC_FLUSH_CLFLUSH = 1, CC_FLUSH_CLFLUSHOPT = 2, CC_FLUSH_CLWB = 3 };
enum cc_fence_kind { CC_FENCE_SFENCE = 1, CC_FENCE_MFENCE = 2, CC_FENCE_LOCKED = 3, CC_FENCE_SEQCST = 4 };
enum cc_origin {
	CC_ORIGIN_PLAIN = 0, CC_ORIGIN_ATOMIC = 1, CC_ORIGIN_RMW = 2, CC_ORIGIN_CMPXCHG = 3,
	CC_ORIGIN_MEMSET = 4, CC_ORIGIN_MEMCPY = 5, CC_ORIGIN_MEMMOVE = 6, CC_ORIGIN_ASM = 7,
	CC_ORIGIN_LIBPMEM = 8,
};

/* The layout the pass emits for each site (64 bytes, in section cc_sites). */
struct crashcheck_site {
	const char *file;
	const char *func;
	const char *inl_file;
	const char *inl_func;
	uint32_t line, col, inl_line, inl_col;
	uint64_t reserved[2];
};

#define CC_NO_SITE 0xffffffffu
#define CC_LINE_SIZE 64u

/*
 * Fast filter: an address is worth a closer look only if
 * addr - cc_pm_lo < cc_pm_span.  The span stays 0 while tracing is off, so
 * every hook returns after one subtraction and compare.
 */
extern uintptr_t cc_pm_lo;
extern uintptr_t cc_pm_span;

/* rt_trace.c */
int cc_trace_enabled(void);
const char *cc_trace_path(void);
void cc_emit(uint8_t kind, uint8_t sub, uint32_t site, uint64_t addr, uint32_t size,
	     const void *payload, uint32_t plen);
void cc_emit_region(unsigned index, uintptr_t base, size_t size, const char *image_name);
uint32_t cc_site_id(crashcheck_site_t site);
void cc_trace_set_pool(uintptr_t base, size_t size);

/* rt_regions.c */
int cc_in_pm(uintptr_t addr, size_t size);

/* rt_threads.c */
extern int cc_mt_mode;
extern __thread int cc_tl_tid;
int cc_assign_tid(void);
void cc_lock(void);
void cc_unlock(void);

/* rt_api.c */
void cc_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static inline int cc_tid(void)
{
	int t = cc_tl_tid;
	return t >= 0 ? t : cc_assign_tid();
}

#endif /* CC_RT_INTERNAL_H */
