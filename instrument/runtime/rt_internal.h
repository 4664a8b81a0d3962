/*
 * rt_internal.h -- state shared by the runtime's files (internal)
 *
 * The runtime is split by job: rt_trace.c owns the trace file and the event
 * buffer, rt_regions.c the registered PM regions and pools, rt_hooks.c the
 * entry points the pass calls, rt_api.c the public API of crashcheck.h,
 * rt_threads.c thread ids and the switch to locked logging, rt_shadow.c and
 * rt_pmemobj.c the pools libpmemobj maps and the stores made inside it, rt_supply.c the
 * post-crash images of regions past the pool handed to recovery, rt_sched*.c the
 * deterministic scheduler (docs/scheduler.md; rt_sched.h) and libc's real pthread
 * functions (rt_sched_pthread.c), which the runtime's own code must call instead of the
 * interposed ones.
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
	CC_EV_STORE8 = 13,      /* compact plain 8-byte store into region 0 (16 bytes in all) */
};

enum cc_flush_kind { CC_FLUSH_CLFLUSH = 1, CC_FLUSH_CLFLUSHOPT = 2, CC_FLUSH_CLWB = 3 };
enum cc_fence_kind { CC_FENCE_SFENCE = 1, CC_FENCE_MFENCE = 2, CC_FENCE_LOCKED = 3, CC_FENCE_SEQCST = 4 };
enum cc_origin {
	CC_ORIGIN_PLAIN = 0, CC_ORIGIN_ATOMIC = 1, CC_ORIGIN_RMW = 2, CC_ORIGIN_CMPXCHG = 3,
	CC_ORIGIN_MEMSET = 4, CC_ORIGIN_MEMCPY = 5, CC_ORIGIN_MEMMOVE = 6, CC_ORIGIN_ASM = 7,
	CC_ORIGIN_LIBPMEM = 8,
	CC_ORIGIN_LIBRARY = 9,  /* written inside a precompiled library call: durable when logged */
};

/* The layout the pass emits for each site (64 bytes, in section cc_sites). */
struct crashcheck_site {
	const char *file;
	const char *func;
	const char *inl_file;
	const char *inl_func;
	uint32_t line, col, inl_line, inl_col;
	const char *chain;	/* helper frames it was named past, innermost first, one a line; then,
				 * after a \x1e, its inline chain (the calls it was inlined at, nearest
				 * first), which the trace writes as a field of its own */
	uint64_t flags;		/* CC_SITE_OWN: in one of the structure's own files */
};

#define CC_SITE_OWN 1u
#define CC_SITE_CODE_POINTER 2u   /* a store of a code address (the pass's SITE_CODE_POINTER) */
#define CC_NO_SITE 0xffffffffu
#define CC_LINE_SIZE 64u

/*
 * Fast filter: an address is worth a closer look only if
 * addr - cc_pm_lo < cc_pm_span.  The span stays 0 while tracing is off, so
 * every hook returns after one subtraction and compare.
 */
extern uintptr_t cc_pm_lo;
extern uintptr_t cc_pm_span;

/* rt_trace.c: the event buffer is global so the hot hooks can append inline. */
extern unsigned char *cc_buf;
extern size_t cc_buf_len;
extern uint32_t cc_buf_events;
extern const struct crashcheck_site __start_cc_sites[] __attribute__((weak));
extern const struct crashcheck_site __stop_cc_sites[] __attribute__((weak));
#define CC_BUF_SIZE (1u << 20)
#define CC_EV_HEAD 16
#define CC_ADDR_MASK ((1ull << 48) - 1)
int cc_trace_enabled(void);
const char *cc_trace_path(void);
void cc_emit(uint8_t kind, uint8_t sub, uint32_t site, uint64_t addr, uint32_t size,
	     const void *payload, uint32_t plen);
void cc_emit_region(unsigned index, uintptr_t base, size_t size, const char *image_name);
int cc_trace_make_room(void);
uint32_t cc_site_id(crashcheck_site_t site);
void cc_trace_set_pool(uintptr_t base, size_t size);
extern uint64_t cc_trace_from;   /* the operation whose op_begin starts the trace over */
void cc_trace_from_here(void);
/* rt_from.c: the load's live objects, logged again when the trace starts over */
void cc_from_alloc(uintptr_t obj, uint64_t size, uint32_t site);
void cc_from_free(uintptr_t obj);
void cc_from_log_live(void);
void cc_from_store(uintptr_t addr, uint64_t size, crashcheck_site_t site);

/* rt_regions.c */
extern unsigned cc_nregions;
/*
 * Region 0 (the pool of the header), for compact store8 events: an 8-byte
 * store at offset OFF fits the form if OFF < cc_r0_span (the offsets whose
 * 8 bytes lie inside the region).  Offsets are 40 bits, so cc_r0_span stays
 * 0 (no compact events) for a region of 2^40 bytes or more.
 */
extern uintptr_t cc_r0_base;
extern uintptr_t cc_r0_span;
#define CC_STORE8_OFF_BITS 40
#define CC_STORE8_NO_SITE 0xffffu
int cc_in_pm_slow(uintptr_t addr);
/* register [addr, addr+len) whose bytes the trace starts from are INITIAL (NULL: as they are now) */
int cc_register_region(void *addr, size_t len, const void *initial);
/* the trace starts over: every region's bytes now become its image, logged again */
int cc_regions_restart(void);
int cc_write_sparse(int fd, const char *name, const unsigned char *base, size_t size);

/* rt_supply.c: post-crash images of the regions past the pool, handed to recovery */
unsigned cc_supply_next(void);
void cc_supply_counted(void);
const void *cc_supply_take(unsigned k, size_t *size);
int cc_supply_file(char *path, size_t len);

/* rt_shadow.c: shadows of regions a precompiled library writes (libpmemobj) */
extern uintptr_t cc_shadow_lo;
extern uintptr_t cc_shadow_span;
int cc_shadow_add(void *addr, size_t size, const void *initial);
void cc_shadow_drop(void *addr);
void cc_shadow_note_slow(uintptr_t addr, uint64_t size);
int cc_shadow_sync(uint32_t site);

/* cc_shadow_note -- a logged store: keep the shadow of its region (if any) equal to the trace */
static inline void cc_shadow_note(uintptr_t addr, uint64_t size)
{
	if (__builtin_expect(addr - cc_shadow_lo < cc_shadow_span, 0))
		cc_shadow_note_slow(addr, size);
}

/* cc_in_pm -- non-zero if ADDR lies inside a registered region (tracing only) */
static inline int cc_in_pm(uintptr_t addr, size_t size)
{
	(void)size;
	if (addr - cc_pm_lo >= cc_pm_span)
		return 0;
	return cc_nregions == 1 || cc_in_pm_slow(addr);
}

/* rt_lazy.c: lazy exploration in a checker child (crashsim/runner/lazy.c) */
typedef void (*cc_lazy_fn)(uintptr_t addr, uint64_t size);
#define CC_LAZY_CSTRING UINT64_MAX   /* a load of a NUL-terminated string */
extern int __cc_lazy_on;
extern cc_lazy_fn cc_lazy_load, cc_lazy_store;
void cc_lazy_install(cc_lazy_fn load, cc_lazy_fn store);
void __cc_check_load(const void *addr, uint64_t size);

/* rt_readlog.c: the read log of a program-mode command (crashcheck run --strategy lazy) */
void cc_readlog_mapped(const char *path, void *addr, size_t len);
void cc_readlog_opaque(const char *path);

/* CC_LAZY_STORE -- in a lazy checker child, report a store and return
 * (tracing is off there) */
#define CC_LAZY_STORE(addr, size) \
	do { \
		if (__builtin_expect(cc_lazy_store != NULL, 0)) { \
			cc_lazy_store((uintptr_t)(addr), (size)); \
			return; \
		} \
	} while (0)

/* rt_threads.c */
extern int cc_mt_mode;
extern int cc_trace_loads;    /* CRASHCHECK_TRACE_LOADS (rt_hooks.c) */
#define CC_LOADS_WITH_THREADS 2 /* cc_trace_loads: off until the first pthread_create */
extern __thread int cc_tl_tid;
int cc_assign_tid(void);
int cc_next_tid(void);
#include <pthread.h>
int cc_real_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *), void *arg);
void cc_lock(void);
void cc_unlock(void);

/* rt_sched.c: the scheduler's core (rt_sched.h lists its other files) */
extern int __cc_sched_on;     /* the scheduler serialises (enabled, 2+ live threads) */
extern int cc_sched_enabled;  /* CRASHCHECK_SCHED is set */
void cc_sched_point(uint32_t site);
void cc_sched_op(int begin, uint64_t index, uint32_t site);
int cc_sched_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *), void *arg);
/* __cc_sched_atomic's OP: kind in bits 0-3, CC_SCHED_NOVAL, access size in bits 8-15 */
enum { CC_SCHED_LOAD = 0, CC_SCHED_STORE = 1, CC_SCHED_RMW = 2, CC_SCHED_CAS_OK = 3,
       CC_SCHED_CAS_FAIL = 4, CC_SCHED_NOVAL = 0x10 };
void __cc_sched_atomic(const void *addr, uint32_t op, uint64_t val, crashcheck_site_t site);

/* CC_SCHED_POINT -- a scheduling point after a traced PM access at SITE (an id, for the switch
   mark's site): one predictable branch when off */
#define CC_SCHED_POINT(site) do { if (__builtin_expect(__cc_sched_on, 0)) cc_sched_point(site); } while (0)
/* CC_SCHED_ACCESS -- the same after a traced PM load or plain store of SIZE bytes at ADDR (WRITE:
   a store): the stale strategy also sees which words it touched (rt_sched.c cc_sched_access) */
void cc_sched_access(uint32_t site, uintptr_t addr, uint64_t size, int write);
#define CC_SCHED_ACCESS(site, addr, size, write) \
	do { if (__builtin_expect(__cc_sched_on, 0)) cc_sched_access(site, (uintptr_t)(addr), size, write); } while (0)

#include <sched.h>
#include <time.h>
#include <unistd.h>
/* rt_sched_pthread.c: libc's real pthread functions */
struct cc_real_fns {
	int ready;
	int (*mutex_lock)(pthread_mutex_t *);
	int (*mutex_trylock)(pthread_mutex_t *);
	int (*mutex_timedlock)(pthread_mutex_t *, const struct timespec *);
	int (*mutex_unlock)(pthread_mutex_t *);
	int (*rw_rdlock)(pthread_rwlock_t *);
	int (*rw_wrlock)(pthread_rwlock_t *);
	int (*rw_tryrdlock)(pthread_rwlock_t *);
	int (*rw_trywrlock)(pthread_rwlock_t *);
	int (*rw_unlock)(pthread_rwlock_t *);
	int (*spin_lock)(pthread_spinlock_t *);
	int (*spin_trylock)(pthread_spinlock_t *);
	int (*spin_unlock)(pthread_spinlock_t *);
	int (*cond_wait)(pthread_cond_t *, pthread_mutex_t *);
	int (*cond_timedwait)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
	int (*cond_signal)(pthread_cond_t *);
	int (*cond_broadcast)(pthread_cond_t *);
	int (*join)(pthread_t, void **);
	void (*exit)(void *) __attribute__((noreturn));
	int (*yield)(void);
	int (*usleep)(useconds_t);
	int (*nanosleep)(const struct timespec *, struct timespec *);
};
extern struct cc_real_fns cc_real;
void cc_real_init(void);
/* CC_REAL(f) -- libc's F (e.g. CC_REAL(mutex_lock)(&m)), looked up on first use */
#define CC_REAL(f) (__atomic_load_n(&cc_real.ready, __ATOMIC_ACQUIRE) ? cc_real.f : (cc_real_init(), cc_real.f))

/* rt_api.c */
void __cc_mark(const char *label, crashcheck_site_t site);
void cc_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* rt_valgrind.c: markers for a run under Valgrind's pmemcheck */
int cc_vg_active(void);
void cc_vg_register_file(int fd, void *addr, size_t size);
void cc_vg_region(void *addr, size_t size);
void cc_vg_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
unsigned long __cc_client_request(const unsigned long *args, unsigned long dflt, crashcheck_site_t site);
void __cc_libpmem_mark(const char *func, uint32_t end, crashcheck_site_t site);
/* rt_hooks.c: the flush and fence hooks (the pass calls them; client requests too) */
void __cc_flush(const void *addr, uint32_t kind, crashcheck_site_t site);
void __cc_fence(uint32_t kind, crashcheck_site_t site);
void cc_vg_object(const char *what, const void *obj, size_t size, crashcheck_site_t site);

static inline int cc_tid(void)
{
	int t = cc_tl_tid;
	return t >= 0 ? t : cc_assign_tid();
}

/* cc_hook_site -- id of a site pointer the pass passed (always in the table, or NULL) */
static inline uint32_t cc_hook_site(crashcheck_site_t site)
{
	return site ? (uint32_t)(site - __start_cc_sites) : CC_NO_SITE;
}

/* The shadow call stack of libraries built with the pass changed since it was last logged
 * (rt_callstack.c): cc_cs_sync logs it before the thread's next event. */
extern __thread int cc_cs_dirty __attribute__((tls_model("initial-exec")));
void cc_cs_sync(void);

/*
 * cc_append_store8 -- the hot path: log a plain 8-byte store from a
 * single-threaded program without any call.  Returns 0 if the caller must
 * take the general path (locked logging, buffer full).  A store into region
 * 0 by thread 0 from a site numbered below 0xffff (nearly all of them) is a
 * compact 16-byte `store8` event instead of a 24-byte `store`: the bytes
 * written are most of the tracing cost.
 */
static inline int cc_append_store8(uintptr_t addr, uint32_t site)
{
	if (__builtin_expect(cc_cs_dirty, 0))
		cc_cs_sync();
	if (cc_mt_mode || cc_buf_len + CC_EV_HEAD + 8 > CC_BUF_SIZE)
		return 0;
	unsigned char *p = cc_buf + cc_buf_len;
	uint64_t v, off = addr - cc_r0_base;
	__builtin_memcpy(&v, (const void *)addr, 8);
	int tid = cc_tid();
	/* a 16-bit site: the id, or 0xffff for "no site"; ids above that take the long form */
	uint32_t csite = site < CC_STORE8_NO_SITE ? site : site == CC_NO_SITE ? CC_STORE8_NO_SITE : UINT32_MAX;
	if (off < cc_r0_span && tid == 0 && csite != UINT32_MAX) {
		uint64_t w0 = (uint64_t)CC_EV_STORE8 | ((uint64_t)csite << 8) | (off << 24);
		__builtin_memcpy(p, &w0, 8);
		__builtin_memcpy(p + 8, &v, 8);
		cc_buf_len += 16;
	} else {
		uint64_t w0 = (uint64_t)CC_EV_STORE | ((uint64_t)(uint16_t)tid << 16) | ((uint64_t)site << 32);
		uint64_t w1 = ((uint64_t)addr & CC_ADDR_MASK) | ((uint64_t)8 << 48);
		__builtin_memcpy(p, &w0, 8);
		__builtin_memcpy(p + 8, &w1, 8);
		__builtin_memcpy(p + 16, &v, 8);
		cc_buf_len += CC_EV_HEAD + 8;
	}
	cc_buf_events++;
	return 1;
}

#endif /* CC_RT_INTERNAL_H */
