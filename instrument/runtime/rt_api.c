/*
 * rt_api.c -- the public API of crashcheck.h: markers, sites, errors
 *
 * The pass rewrites calls to crashcheck_op_begin / op_end / mark / alloc /
 * free / here so they carry the caller's site (the __cc_*_at forms below and
 * crashcheck_*_at); called from code built without the pass, the plain
 * forms record no site.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "rt_internal.h"

static __thread char last_error[512];

/* cc_set_error -- remember a one-line reason for crashcheck_last_error */
void cc_set_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
}

/* crashcheck_last_error -- the reason for the last failed call */
const char *crashcheck_last_error(void)
{
	return last_error;
}

/* crashcheck_tracing -- non-zero when events are being written to a trace */
int crashcheck_tracing(void)
{
	return cc_trace_enabled();
}

/* __cc_op_begin -- operation INDEX starts (with the caller's site) */
void __cc_op_begin(uint64_t index, crashcheck_site_t site)
{
	if (__builtin_expect(index == cc_trace_from, 0))
		cc_trace_from_here();    /* the load phase ends here (rt_trace.c) */
	cc_emit(CC_EV_OP_BEGIN, 0, cc_site_id(site), index, 0, NULL, 0);
	cc_vg_log("op_begin %llu", (unsigned long long)index);
	if (__builtin_expect(cc_sched_enabled, 0))
		cc_sched_op(1, index, cc_site_id(site));
}

/* __cc_op_end -- operation INDEX is complete */
void __cc_op_end(uint64_t index, crashcheck_site_t site)
{
	cc_emit(CC_EV_OP_END, 0, cc_site_id(site), index, 0, NULL, 0);
	cc_vg_log("op_end %llu", (unsigned long long)index);
	if (__builtin_expect(cc_sched_enabled, 0))
		cc_sched_op(0, index, cc_site_id(site));
}

/* __cc_mark -- a free-form label */
void __cc_mark(const char *label, crashcheck_site_t site)
{
	size_t n = label ? strlen(label) : 0;
	if (n > 4096)
		n = 4096;
	cc_emit(CC_EV_MARK, 0, cc_site_id(site), 0, (uint32_t)n, label, (uint32_t)n);
}

void crashcheck_op_begin(uint64_t index) { __cc_op_begin(index, NULL); }
void crashcheck_op_end(uint64_t index) { __cc_op_end(index, NULL); }
void crashcheck_mark(const char *label) { __cc_mark(label, NULL); }

/* crashcheck_here -- without the pass there is no site to return */
crashcheck_site_t crashcheck_here(void)
{
	return NULL;
}

/* crashcheck_alloc_at -- OBJ of SIZE bytes was allocated at SITE */
void crashcheck_alloc_at(void *obj, size_t size, crashcheck_site_t site)
{
	if (cc_vg_active() && size && cc_in_pm_slow((uintptr_t)obj))
		cc_vg_object("alloc", obj, size, site);
	if (!cc_in_pm((uintptr_t)obj, size))
		return;
	uint64_t size64 = size;
	cc_emit(CC_EV_ALLOC, 0, cc_site_id(site), (uintptr_t)obj, 8, &size64, 8);
	cc_from_alloc((uintptr_t)obj, size64, cc_site_id(site));
}

/* crashcheck_free_at -- OBJ was freed at SITE */
void crashcheck_free_at(void *obj, crashcheck_site_t site)
{
	if (cc_vg_active() && cc_in_pm_slow((uintptr_t)obj))
		cc_vg_object("free", obj, 0, site);
	if (!cc_in_pm((uintptr_t)obj, 1))
		return;
	cc_emit(CC_EV_FREE, 0, cc_site_id(site), (uintptr_t)obj, 0, NULL, 0);
	cc_from_free((uintptr_t)obj);
}

void crashcheck_alloc(void *obj, size_t size) { crashcheck_alloc_at(obj, size, NULL); }
void crashcheck_free(void *obj) { crashcheck_free_at(obj, NULL); }
