/*
 * rt_valgrind.c -- the markers a run under Valgrind's pmemcheck leaves in its store log, and
 * the answers to Valgrind client requests in code the pass compiled
 *
 * Owns: telling pmemcheck what the pass would have written to a crashcheck
 * trace but pmemcheck cannot see: the pool file (a registered PM file), the
 * other PM ranges (`region 0xADDR SIZE`), the operation boundaries
 * (`op_begin N` / `op_end N`) and the PM objects
 * (`alloc 0xADDR SIZE` / `free 0xADDR`, with the allocation's site), as VALGRIND_PMC_EMIT_LOG lines that
 * `crashcheck trace import` reads back (crashsim/pmemcheck_import.py).
 * Outside Valgrind each call is one inline check of RUNNING_ON_VALGRIND.
 *
 * pmemcheck's client requests are defined here by number rather than by
 * including its pmemcheck.h, which Debian does not ship (pmemcheck is not
 * packaged): only valgrind.h (Debian's `valgrind` package) is needed, and
 * without it the markers compile away.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "rt_internal.h"

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define CC_HAVE_VALGRIND 1
#endif
#endif

#ifdef CC_HAVE_VALGRIND
/* pmemcheck's request numbers: its enum Vg_PMemCheckClientRequest counts up from
 * VG_USERREQ_TOOL_BASE('P','C'); these are its 1st, 2nd and 31st entries. */
#define CC_PMC_BASE VG_USERREQ_TOOL_BASE('P', 'C')
#define CC_PMC_REGISTER_PMEM_MAPPING CC_PMC_BASE
#define CC_PMC_REGISTER_PMEM_FILE (CC_PMC_BASE + 1)
#define CC_PMC_EMIT_LOG (CC_PMC_BASE + 30)
#endif

/* cc_vg_active -- non-zero when running under Valgrind (any tool) */
int cc_vg_active(void)
{
#ifdef CC_HAVE_VALGRIND
	return RUNNING_ON_VALGRIND != 0;
#else
	return 0;
#endif
}

/* cc_vg_register_file -- the pool file FD is mapped at ADDR for SIZE bytes: PM whose
 * stores pmemcheck logs (the mapping), backed by that file (logged as REGISTER_FILE, the
 * region of the imported trace), as libpmem's pmem_map_file tells it */
void cc_vg_register_file(int fd, void *addr, size_t size)
{
#ifdef CC_HAVE_VALGRIND
	if (!cc_vg_active())
		return;
	(void)VALGRIND_DO_CLIENT_REQUEST_EXPR(0, CC_PMC_REGISTER_PMEM_MAPPING, addr, size, 0, 0, 0);
	(void)VALGRIND_DO_CLIENT_REQUEST_EXPR(0, CC_PMC_REGISTER_PMEM_FILE, fd, addr, size, 0, 0);
#else
	(void)fd, (void)addr, (void)size;
#endif
}

/* cc_vg_region -- a PM range registered by crashcheck_register_pm (not a pool file): pmemcheck
 * logs its stores once it is a PM mapping, and `region 0xADDR SIZE` names it in the log (a
 * mapping without a file is not logged otherwise) */
void cc_vg_region(void *addr, size_t size)
{
#ifdef CC_HAVE_VALGRIND
	if (!cc_vg_active())
		return;
	(void)VALGRIND_DO_CLIENT_REQUEST_EXPR(0, CC_PMC_REGISTER_PMEM_MAPPING, addr, size, 0, 0, 0);
	cc_vg_log("region %#lx %zu", (unsigned long)(uintptr_t)addr, size);
#else
	(void)addr, (void)size;
#endif
}

/* cc_vg_log -- one EMIT_LOG line, formatted */
void cc_vg_log(const char *fmt, ...)
{
#ifdef CC_HAVE_VALGRIND
	if (!cc_vg_active())
		return;
	char text[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	(void)VALGRIND_DO_CLIENT_REQUEST_EXPR(0, CC_PMC_EMIT_LOG, text, 0, 0, 0, 0);
#else
	(void)fmt;
#endif
}

/* cc_vg_object -- `alloc 0xADDR SIZE` or `free 0xADDR` (WHAT), with the allocation SITE when the
 * caller was built with the pass: ` site FILE:LINE:COL FUNC`, and for an inlined call
 * ` inlined FILE:LINE:COL FUNC` (the caller it was inlined into) */
void cc_vg_object(const char *what, const void *obj, size_t size, crashcheck_site_t site)
{
	char where[160] = "", inl[160] = "";
	if (site && site->file) {
		snprintf(where, sizeof(where), " site %s:%u:%u %s", site->file, site->line, site->col,
			 site->func ? site->func : "?");
		if (site->inl_file && *site->inl_file)
			snprintf(inl, sizeof(inl), " inlined %s:%u:%u %s", site->inl_file, site->inl_line,
				 site->inl_col, site->inl_func ? site->inl_func : "?");
	}
	if (size)
		cc_vg_log("%s %#lx %zu%s%s", what, (unsigned long)(uintptr_t)obj, size, where, inl);
	else
		cc_vg_log("%s %#lx%s%s", what, (unsigned long)(uintptr_t)obj, where, inl);
}

/*
 * Client requests in code the pass compiled.
 *
 * The pass replaces valgrind.h's magic sequence with a call of __cc_client_request, which
 * answers it.  Under a real Valgrind (the pmemcheck tracer running a binary built with
 * crashcheck-cc) the request is passed on unchanged and Valgrind's answer returned.  Outside
 * Valgrind, in a run the pass traces (CRASHCHECK_TRACE set), the runtime stands in for
 * pmemcheck, so unmodified PMDK code that looks for it (util_init: RUNNING_ON_VALGRIND, then
 * a pmemcheck mapping check) emits its markers:
 *   RUNNING_ON_VALGRIND              1 (one Valgrind layer)
 *   PMC_REGISTER_PMEM_MAPPING/FILE   the range is remembered (not made a traced region: the
 *   PMC_REMOVE_PMEM_MAPPING          pass registers what libpmem/libpmemobj map by their calls,
 *   PMC_CHECK_IS_PMEM_MAPPING        and PMDK registers DRAM here only to probe for pmemcheck):
 *                                    1 when the range lies in a remembered range or a traced region
 *   PMC_DO_FLUSH / PMC_DO_FENCE      a clwb of each line of the range in a traced region / an
 *                                    sfence (libpmem's msync path persists this way)
 *   PMC_EMIT_LOG                     a mark with its text (pmreorder's NAME.BEGIN / NAME.END)
 * Every other request (memcheck, helgrind, drd, pmemcheck's transactions, SET_CLEAN...) returns
 * its default, the value the sequence gives outside Valgrind.  Outside a traced run every
 * request returns its default (a checker sees no Valgrind, as under pmreorder), EMIT_LOG aside
 * (a mark is a no-op when not tracing).
 * Request numbers are spelled out: valgrind.h's VG_USERREQ__RUNNING_ON_VALGRIND, and pmemcheck's
 * enum, which counts up from VG_USERREQ_TOOL_BASE('P','C').
 */
#define CC_REQ_RUNNING_ON_VALGRIND 0x1001ul
#define CC_REQ_PMC ((((unsigned long)'P' & 0xff) << 24) | (((unsigned long)'C' & 0xff) << 16))
enum {
	CC_REQ_PMC_REGISTER_PMEM_MAPPING = 0,
	CC_REQ_PMC_REGISTER_PMEM_FILE = 1,
	CC_REQ_PMC_REMOVE_PMEM_MAPPING = 2,
	CC_REQ_PMC_CHECK_IS_PMEM_MAPPING = 3,
	CC_REQ_PMC_DO_FLUSH = 5,
	CC_REQ_PMC_DO_FENCE = 6,
	CC_REQ_PMC_EMIT_LOG = 30,
};

/* The ranges registered through client requests (few: PMDK registers a probe, then its files). */
#define CC_VG_RANGES 64
static struct { uintptr_t addr, len; } vg_ranges[CC_VG_RANGES];
static unsigned vg_nranges;

/* vg_tracing -- this run is traced by the pass: stand in for pmemcheck.  Read from the
 * environment, not the trace file, because a library's constructor may ask before the
 * runtime's own constructor opened the trace. */
static int vg_tracing(void)
{
	static int cached = -1;
	if (cached < 0) {
		const char *t = getenv("CRASHCHECK_TRACE");
		cached = t != NULL && *t != '\0';
	}
	return cached;
}

static void vg_add(uintptr_t addr, uintptr_t len)
{
	cc_lock();
	if (vg_nranges < CC_VG_RANGES && len) {
		vg_ranges[vg_nranges].addr = addr;
		vg_ranges[vg_nranges].len = len;
		vg_nranges++;
	}
	cc_unlock();
}

/* vg_remove -- forget the remembered ranges that lie inside [ADDR, ADDR+LEN) */
static void vg_remove(uintptr_t addr, uintptr_t len)
{
	cc_lock();
	unsigned k = 0;
	for (unsigned i = 0; i < vg_nranges; i++)
		if (!(vg_ranges[i].addr >= addr && vg_ranges[i].addr + vg_ranges[i].len <= addr + len))
			vg_ranges[k++] = vg_ranges[i];
	vg_nranges = k;
	cc_unlock();
}

/* vg_is_pmem -- [ADDR, ADDR+LEN) lies in a remembered range or in a traced region */
static int vg_is_pmem(uintptr_t addr, uintptr_t len)
{
	if (len == 0)
		len = 1;
	int yes = cc_in_pm(addr, 1) && cc_in_pm(addr + len - 1, 1);
	cc_lock();
	for (unsigned i = 0; i < vg_nranges && !yes; i++)
		yes = addr >= vg_ranges[i].addr && addr + len <= vg_ranges[i].addr + vg_ranges[i].len;
	cc_unlock();
	return yes;
}

/* __cc_client_request -- answer the request in valgrind.h's block ARGS (the request number,
 * then five arguments); DEFAULT is the answer outside Valgrind */
unsigned long __cc_client_request(const unsigned long *args, unsigned long dflt, crashcheck_site_t site)
{
	if (args == NULL)
		return dflt;
#ifdef CC_HAVE_VALGRIND
	if (cc_vg_active())
		return VALGRIND_DO_CLIENT_REQUEST_EXPR(dflt, args[0], args[1], args[2], args[3], args[4], args[5]);
#endif
	unsigned long req = args[0];
	if (req == CC_REQ_PMC + CC_REQ_PMC_EMIT_LOG) {
		if (args[1])
			__cc_mark((const char *)args[1], site);
		return dflt;
	}
	if (!vg_tracing())
		return dflt;
	if (req == CC_REQ_RUNNING_ON_VALGRIND)
		return 1;
	switch (req - CC_REQ_PMC) {
	case CC_REQ_PMC_REGISTER_PMEM_MAPPING:
		vg_add(args[1], args[2]);
		return 0;
	case CC_REQ_PMC_REGISTER_PMEM_FILE:
		vg_add(args[2], args[3]);
		return 0;
	case CC_REQ_PMC_REMOVE_PMEM_MAPPING:
		vg_remove(args[1], args[2]);
		return 0;
	case CC_REQ_PMC_CHECK_IS_PMEM_MAPPING:
		return (unsigned long)vg_is_pmem(args[1], args[2]);
	case CC_REQ_PMC_DO_FLUSH:
		for (uintptr_t a = args[1] & ~(uintptr_t)(CC_LINE_SIZE - 1); a < args[1] + args[2]; a += CC_LINE_SIZE)
			__cc_flush((const void *)a, CC_FLUSH_CLWB, site);
		return 0;
	case CC_REQ_PMC_DO_FENCE:
		__cc_fence(CC_FENCE_SFENCE, site);
		return 0;
	default:
		return dflt;
	}
}

/* __cc_libpmem_mark -- the markers PMDK's libpmem emits around FUNC (one of its memmove, memcpy
 * and memset functions) when PMREORDER_EMIT_LOG is non-zero under pmemcheck: FUNC.BEGIN then
 * libpmem.BEGIN before (END: libpmem.END then FUNC.END after).  The pass calls it around the
 * events of such a call, in a traced run standing in for pmemcheck as __cc_client_request does. */
void __cc_libpmem_mark(const char *func, uint32_t end, crashcheck_site_t site)
{
	static int emit = -1;
	if (emit < 0) {
		const char *e = getenv("PMREORDER_EMIT_LOG");
		emit = e != NULL && atoi(e) != 0;
	}
	if (!emit || !vg_tracing() || func == NULL)
		return;
	char label[128];
	snprintf(label, sizeof(label), "%s.%s", func, end ? "END" : "BEGIN");
	if (!end)
		__cc_mark(label, site);
	__cc_mark(end ? "libpmem.END" : "libpmem.BEGIN", site);
	if (end)
		__cc_mark(label, site);
}
