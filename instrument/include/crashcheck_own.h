/*
 * crashcheck_own.h -- marks crashcheck's own code: included first by every
 * file of trees/common/ (driver, pool, allocator, checks) and forced into
 * every file of the runtime and the checker runner (instrument/build.mk).
 *
 * Every function compiled after it goes to the section crashcheck_own, which
 * the linker keeps whole and brackets with __start_crashcheck_own and
 * __stop_crashcheck_own.  So a fatal-signal handler can tell from an address
 * alone whether crashcheck's code or the structure's was running
 * (instrument/runtime/rt_fault.c); the structure's files never include this
 * header, and crashcheck's inline functions compiled into them are the
 * structure's code.
 */
#ifndef CRASHCHECK_OWN_H
#define CRASHCHECK_OWN_H
#pragma clang section text = "crashcheck_own"

/*
 * crashcheck_fault_guard -- from now on, a fatal signal whose fault lies in
 * crashcheck's own code writes one line about it on stderr before the
 * process dies of it (rt_fault.c; the driver calls it first thing in main)
 */
void crashcheck_fault_guard(void);
#endif
