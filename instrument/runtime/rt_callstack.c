/*
 * rt_callstack.c -- the shadow call stack of libpmem/libpmemobj built with the pass, so a store
 * inside the library is named with the program's call that led there and the library's calls
 * between
 *
 * With CRASHCHECK_PASS_PMDK the pass brackets calls (instrument/pass/CrashcheckPass.cpp,
 * findFrames): inside the libraries every call that may enter code built with the pass pushes
 * a frame (the call's site, `via` the callee) and pops back to the depth it found; a program's
 * call of pmemobj_* / pmem_* starts the stack over as its bottom frame (a transaction's abort
 * longjmps out of the library past the pops of its frames, and the program's next call must not
 * sit on them).  A library callback into the program that calls the library again (a
 * constructor of pmemobj_alloc) therefore loses the outer library frames for its own calls.
 *
 * Nothing is written per call.  A push or pop only marks the thread's stack changed; before the
 * thread's next store, flush or fence in a traced region the runtime compares the stack with the
 * one it last logged for that thread and, if it differs, logs a `cc-stack ID ID ...` mark (site
 * ids, outermost first; no ids: back in the program) (docs/trace-format.md "Marks").  Deeper
 * than CC_CS_MAX frames, the innermost are left out.
 */
#include <stdio.h>
#include <string.h>

#include "rt_internal.h"

#define CC_CS_MAX 32

static __thread crashcheck_site_t stack[CC_CS_MAX];
static __thread uint32_t depth;
static __thread uint32_t logged[CC_CS_MAX];     /* site ids of the stack last logged */
static __thread uint32_t nlogged;
__thread int cc_cs_dirty __attribute__((tls_model("initial-exec")));

/* __cc_cs_push -- a call at SITE begins; returns the depth to pop back to */
uint32_t __cc_cs_push(crashcheck_site_t site)
{
	uint32_t d = depth;
	if (d < CC_CS_MAX)
		stack[d] = site;
	depth = d + 1;
	cc_cs_dirty = 1;
	return d;
}

/* __cc_cs_enter -- the program's call at SITE into the library: the bottom frame */
uint32_t __cc_cs_enter(crashcheck_site_t site)
{
	depth = 0;
	return __cc_cs_push(site);
}

/* __cc_cs_pop -- a call returned: back to depth D */
void __cc_cs_pop(uint32_t d)
{
	depth = d;
	cc_cs_dirty = 1;
}

/* cc_cs_sync -- log the thread's stack if it is not the one last logged (before an event) */
void cc_cs_sync(void)
{
	cc_cs_dirty = 0;
	uint32_t n = depth < CC_CS_MAX ? depth : CC_CS_MAX, ids[CC_CS_MAX];
	for (uint32_t i = 0; i < n; i++)
		ids[i] = cc_site_id(stack[i]);
	if (n == nlogged && !memcmp(ids, logged, n * sizeof(ids[0])))
		return;
	char text[16 + CC_CS_MAX * 11];
	int len = snprintf(text, sizeof(text), "cc-stack");
	for (uint32_t i = 0; i < n; i++)
		len += snprintf(text + len, sizeof(text) - (size_t)len, " %u", ids[i]);
	cc_emit(CC_EV_MARK, 0, n ? ids[n - 1] : CC_NO_SITE, 0, (uint32_t)len, text, (uint32_t)len);
	memcpy(logged, ids, n * sizeof(ids[0]));
	nlogged = n;
}
