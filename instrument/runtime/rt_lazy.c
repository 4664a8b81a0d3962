/*
 * rt_lazy.c -- the runtime's half of lazy crash-state exploration
 *
 * In a checker child exploring lazily (crashsim/runner/lazy.c), some cache
 * lines of the post-crash pool are not fixed yet: which of their legal
 * contents the crash left is decided only when recovery reads them.  The
 * pass puts `if (__cc_lazy_on) __cc_check_load(ptr, size)` before every load
 * that may touch PM (plain and atomic loads, the read half of RMW and
 * cmpxchg, memcpy/memmove sources, memcmp/strcmp-like library calls), and
 * the store hooks (rt_hooks.c) report every store while lazy mode is on, so
 * the runner knows which bytes recovery itself wrote before it read them.
 *
 * Tracing is always off in a checker child; with lazy mode off, the store
 * hooks pay one load and a predictable branch for it.  The runner's handlers
 * do their own range checks (the hull of the undetermined lines).
 */
#include "rt_internal.h"

int __cc_lazy_on;
cc_lazy_fn cc_lazy_load, cc_lazy_store;

/* cc_lazy_install -- route check loads and stores to the runner (NULLs: off).
 * Whether the code under test was compiled with check loads is told by the
 * pass's marker, __cc_module_check_loads (crashsim/runner/lazy.c asks). */
void cc_lazy_install(cc_lazy_fn load, cc_lazy_fn store)
{
	cc_lazy_load = load;
	cc_lazy_store = store;
	__cc_lazy_on = load != NULL;
}

/* __cc_check_load -- recovery is about to read SIZE bytes at ADDR
 * (SIZE == CC_LAZY_CSTRING: a NUL-terminated string of unknown length) */
void __cc_check_load(const void *addr, uint64_t size)
{
	if (cc_lazy_load)
		cc_lazy_load((uintptr_t)addr, size);
}
