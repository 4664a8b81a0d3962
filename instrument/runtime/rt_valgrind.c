/*
 * rt_valgrind.c -- the markers a run under Valgrind's pmemcheck leaves in its store log
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

/* __cc_client_request -- a Valgrind client request in code the pass compiled (valgrind.h's
 * request block ARGS: the request number, then its arguments).  pmemcheck's EMIT_LOG text becomes
 * a mark of the trace, so a program marked for pmreorder (NAME.BEGIN / NAME.END) is marked for
 * crashcheck unchanged (`crashcheck run` reads such marks as operations).  Its number is
 * VG_USERREQ_TOOL_BASE('P','C') + 30, spelled out: it does not depend on valgrind.h here. */
#define CC_REQ_PMC_EMIT_LOG ((((unsigned long)'P' & 0xff) << 24 | ((unsigned long)'C' & 0xff) << 16) + 30)
void __cc_client_request(const unsigned long *args, crashcheck_site_t site)
{
	if (args && args[0] == CC_REQ_PMC_EMIT_LOG && args[1])
		__cc_mark((const char *)args[1], site);
}
