/*
 * fault.h -- name the operation a fatal signal cut short, on the thread it hit
 *
 * With several threads the result lines alone cannot say which operation
 * died: one thread may be inside its operation while others are inside
 * theirs.  The signal of a fault (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT,
 * SIGTRAP, SIGSYS) is delivered to the thread that faulted, so a handler
 * that reads that thread's own record of its operation knows.  It writes
 * one line `!fault T I SIG` (thread section T, operation index I, signal
 * number SIG) to the results file and hands the signal on to whatever
 * handled it before (the runtime's trace flush), so the process still dies
 * of it.  docs/trees.md describes the line.
 */
#ifndef CC_FAULT_H
#define CC_FAULT_H

/* cc_fault_watch -- from now on a fault inside an operation writes its `!fault` line to FD */
void cc_fault_watch(int fd);

/*
 * cc_fault_op -- the calling thread is now inside operation OP of thread
 * section THREAD (0: the load phase or a single-threaded history); OP < 0:
 * inside none.  Cheap (two thread-local stores after the first call).
 */
void cc_fault_op(unsigned thread, long op);

#endif /* CC_FAULT_H */
