/*
 * fault.c -- the `!fault T I SIG` line of the operation a fatal signal hit (see fault.h)
 *
 * Owns only this: each thread's record of the operation it is inside, and
 * a handler of the fault signals that writes that record out and passes
 * the signal on.  Everything in the handler is async-signal-safe (write,
 * sigaction, raise).
 */
#include "crashcheck_own.h" /* first: this file is crashcheck's own code (rt_fault.c) */
#include <errno.h>
#include <signal.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fault.h"

/* the signals a fault in the code itself raises, on the thread that faulted */
static const int fault_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS};
#define NFAULT (sizeof(fault_signals) / sizeof(fault_signals[0]))

static struct sigaction before[NFAULT];  /* what handled each before us: the signal goes on there */
static int results_fd = -1;

static __thread long cur_op = -1;        /* the operation this thread is inside, or -1 */
static __thread unsigned cur_thread;     /* its thread section */
static __thread int stack_set;           /* this thread has its signal stack */

/* a stack of its own for the handler, so an operation that overflowed its stack is still named.
 * The handlers the signal goes on to run on it too: the runtime's trace flush (rt_trace.c) takes
 * some 330 KiB, so this is as large as the one rt_fault.c gives the main thread, and a thread
 * that already has one at least this large keeps it. Reserved, not committed (MAP_NORESERVE). */
#define FAULT_STACK ((size_t)1 << 20)

/* put_u -- V in decimal at P; returns the end (internal, async-signal-safe) */
static char *put_u(char *p, unsigned long v)
{
	char tmp[24];
	int n = 0;
	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	while (n)
		*p++ = tmp[--n];
	return p;
}

/* on_fault -- write this thread's `!fault` line, then pass SIG on to the handler before us */
static void on_fault(int sig)
{
	int saved = errno;
	if (results_fd >= 0 && cur_op >= 0) {
		char line[80], *p = line;
		memcpy(p, "!fault ", 7);
		p = put_u(p + 7, cur_thread);
		*p++ = ' ';
		p = put_u(p, (unsigned long)cur_op);
		*p++ = ' ';
		p = put_u(p, (unsigned long)sig);
		*p++ = '\n';
		ssize_t w = write(results_fd, line, (size_t)(p - line));
		(void)w;
		cur_op = -1;     /* one line per thread, should the signal come back here */
	}
	/* Restore the earlier action and raise: SIG stays pending (blocked while this handler runs)
	 * and is delivered to that action as soon as this returns, on the faulting thread, so the
	 * runtime still flushes its trace and the process dies of SIG as it would have. */
	for (size_t i = 0; i < NFAULT; i++)
		if (fault_signals[i] == sig)
			sigaction(sig, &before[i], NULL);
	raise(sig);
	errno = saved;
}

/* cc_fault_watch -- install the handler for every fault signal */
void cc_fault_watch(int fd)
{
	results_fd = fd;
	for (size_t i = 0; i < NFAULT; i++) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_fault;
		sa.sa_flags = SA_ONSTACK;
		sigemptyset(&sa.sa_mask);
		sigaction(fault_signals[i], &sa, &before[i]);
	}
}

/* cc_fault_op -- record the operation the calling thread is inside */
void cc_fault_op(unsigned thread, long op)
{
	if (!stack_set && results_fd >= 0) {
		stack_set = 1;
		stack_t cur;
		if (sigaltstack(NULL, &cur) != 0 || (cur.ss_flags & SS_DISABLE) || cur.ss_size < FAULT_STACK) {
			/* never unmapped: one per thread of a run, and the thread may die with it in use */
			void *sp = mmap(NULL, FAULT_STACK, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
			stack_t ss = {.ss_sp = sp, .ss_size = FAULT_STACK, .ss_flags = 0};
			if (sp != MAP_FAILED)
				sigaltstack(&ss, NULL);
		}
	}
	cur_thread = thread;
	cur_op = op;
}
