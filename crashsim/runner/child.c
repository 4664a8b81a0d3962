/*
 * child.c -- the checker runner's child: one forked process per state
 *
 * One state
 *   The runner validates the state's writes, then forks.  The child applies
 *   the writes to its copy-on-write view of the pool (the parent's base is
 *   never touched, and only the pages written are copied), points fds 0-2
 *   away from the protocol (stdout and stderr both go to a capture file),
 *   installs its limits and calls CHECK, which writes one JSON object to a
 *   second capture file.  Both capture files are memfds reused for every
 *   state (rewound before each fork; the child's file offset tells how much
 *   it wrote), so the parent never has to drain a pipe while it waits, and
 *   output size is bounded by RLIMIT_FSIZE.  The fatal-signal handlers, the
 *   alternate stack and RLIMIT_CORE = 0 are set once in the parent and
 *   inherited, to keep per-state system calls few.
 *
 * Limits and how a child ends
 *   The parent waits (sigtimedwait on SIGCHLD, blocked while serving) with
 *   the wall-clock timeout and SIGKILLs the child's process group when it
 *   runs out ("timeout"); a child that stops itself (SIGSTOP) is hung at
 *   once ("timeout" with the stop signal).  After every state the group is
 *   SIGKILLed anyway, so nothing a check forked outlives it ("stray" says
 *   something was left).  A child that kills the runner cannot be stopped
 *   from doing so; it dies with it (PR_SET_PDEATHSIG) and the client starts
 *   a new runner.  RLIMIT_CPU (SIGXCPU) also counts as "timeout".
 *   RLIMIT_AS is the runner's mapped size at fork time plus mem_bytes.
 *   When memory runs out, malloc returns NULL and the check then
 *   dies in whatever way it handles that (SIGSEGV on the NULL, abort, exit);
 *   to tell that apart from an ordinary crash, the child's fatal-signal
 *   handler and exit path probe the address space (an mmap of
 *   min(mem_bytes / 8, 8 MiB)) and note in a shared page when it is nearly
 *   full: an abnormal end with a nearly full address space is "oom".  The
 *   handler runs on an alternate stack, so stack overflow is reported as the
 *   SIGSEGV it is.  Core dumps are switched off.
 *
 * This file finds how a check ended (struct ccr_end); answer.c reads what
 * it wrote and answers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runner_internal.h"

#define FSIZE_LIMIT ((rlim_t)256 << 20)  /* bytes a child may write to its capture files */
#define ALTSTACK_SIZE (64 * 1024)

/* State the child's signal handlers need (a child runs one check). */
struct shared_page {
	volatile int oom;
};
static struct shared_page *shared;
static size_t probe_bytes;

static const int fatal_signals[] = { SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE, SIGSYS, SIGTRAP };
#define NFATAL (sizeof(fatal_signals) / sizeof(fatal_signals[0]))

/* What ccr_child_handlers_install replaced, for ccr_child_handlers_restore
 * (one runner per process, like shared above). */
static struct saved_state {
	struct sigaction fatal[NFATAL];
	stack_t altstack;
	struct rlimit core;
} saved;

/* now_ms -- monotonic milliseconds (internal) */
static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* vm_size -- the process's address-space size in bytes, 0 if unknown (internal) */
static size_t vm_size(void)
{
	char text[128];
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	text[n] = '\0';
	return (size_t)strtoull(text, NULL, 10) * (size_t)sysconf(_SC_PAGESIZE);
}

/* open_capture -- a memfd (or unlinked temp file) for a child's output (internal) */
static int open_capture(const char *name)
{
	int fd = memfd_create(name, MFD_CLOEXEC);
	if (fd >= 0)
		return fd;
	FILE *f = tmpfile();
	return f ? dup(fileno(f)) : -1;
}

/*
 * ccr_child_setup -- the shared page, alternate stack, capture files and
 * /dev/null every child uses; -1 with errno set if one is missing (what was
 * made is left for ccr_child_teardown)
 */
int ccr_child_setup(struct runner *r, size_t page)
{
	shared = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	r->altstack = malloc(ALTSTACK_SIZE);
	r->res_fd = open_capture("cc-result");
	r->err_fd = open_capture("cc-stderr");
	r->null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (shared == MAP_FAILED || r->altstack == NULL || r->res_fd < 0 || r->err_fd < 0 || r->null_fd < 0) {
		if (shared == MAP_FAILED)
			shared = NULL;
		return -1;
	}
	probe_bytes = r->lim.mem_bytes / 8 < ((size_t)8 << 20) ? r->lim.mem_bytes / 8 : (size_t)8 << 20;
	if (probe_bytes < page)
		probe_bytes = page;
	/* the result file's head, shared with the worker (without it, the
	 * worker writes through the file as a forked check does) */
	r->out_map = NULL;
	if (ftruncate(r->res_fd, (off_t)CCR_OUT_MAP) == 0) {
		void *m = mmap(NULL, CCR_OUT_MAP, PROT_READ | PROT_WRITE, MAP_SHARED, r->res_fd, 0);
		r->out_map = m == MAP_FAILED ? NULL : m;
	}
	return 0;
}

/* ccr_child_teardown -- undo ccr_child_setup, as far as it got */
void ccr_child_teardown(struct runner *r, size_t page)
{
	if (shared) {
		munmap(shared, page);
		shared = NULL;
	}
	if (r->out_map)
		munmap(r->out_map, CCR_OUT_MAP);
	r->out_map = NULL;
	if (r->res_fd >= 0)
		close(r->res_fd);
	if (r->err_fd >= 0)
		close(r->err_fd);
	if (r->null_fd >= 0)
		close(r->null_fd);
	free(r->altstack);
}

/* probe_oom -- note in the shared page if the address space is nearly full (internal) */
static void probe_oom(void)
{
	if (shared == NULL || probe_bytes == 0)
		return;
	void *p = mmap(NULL, probe_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		shared->oom = 1;
	else
		munmap(p, probe_bytes);
}

/* child_fatal -- a check died of a fatal signal: probe, hand it to the handler this one
 * replaced (the driver's, which tells crashcheck's own faults apart: instrument/runtime/
 * rt_fault.c), then die of it (internal) */
static void child_fatal(int sig, siginfo_t *si, void *uc)
{
	probe_oom();
	for (size_t i = 0; i < NFATAL; i++) {
		const struct sigaction *old = &saved.fatal[i];
		if (fatal_signals[i] != sig || old->sa_sigaction == child_fatal)
			continue;
		if (old->sa_flags & SA_SIGINFO)
			old->sa_sigaction(sig, si, uc);
		else if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN)
			old->sa_handler(sig);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

/* child_exit -- a check called exit(): probe (internal) */
static void child_exit(void)
{
	probe_oom();
}

/*
 * ccr_child_handlers_install -- give the process the fatal-signal handlers,
 * alternate stack and core limit every child needs.  Done once in the
 * parent (fork copies them) instead of eight system calls per child; the
 * parent's own behaviour on a fatal signal stays the same (the handler
 * re-raises it).  Undone by ccr_child_handlers_restore
 */
void ccr_child_handlers_install(struct runner *r)
{
	struct saved_state *old = &saved;
	stack_t ss = { .ss_sp = r->altstack, .ss_size = ALTSTACK_SIZE, .ss_flags = 0 };
	sigaltstack(&ss, &old->altstack);
	for (size_t i = 0; i < NFATAL; i++) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = child_fatal;
		sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
		sigemptyset(&sa.sa_mask);
		sigaction(fatal_signals[i], &sa, &old->fatal[i]);
	}
	getrlimit(RLIMIT_CORE, &old->core);
	struct rlimit none = { 0, old->core.rlim_max };
	setrlimit(RLIMIT_CORE, &none);
}

/* ccr_child_handlers_restore -- undo ccr_child_handlers_install */
void ccr_child_handlers_restore(void)
{
	const struct saved_state *old = &saved;
	for (size_t i = 0; i < NFATAL; i++)
		sigaction(fatal_signals[i], &old->fatal[i], NULL);
	sigaltstack(&old->altstack, NULL);
	setrlimit(RLIMIT_CORE, &old->core);
}

/*
 * ccr_child_limits -- in a check's process: RLIMIT_FSIZE, RLIMIT_CPU (plus
 * CPU_EXTRA seconds a reused worker may have used before the check starts)
 * and RLIMIT_AS (VM_BYTES plus the check's allowance), with the OOM probe
 * on exit()
 */
void ccr_child_limits(struct runner *r, size_t vm_bytes, unsigned cpu_extra)
{
	struct rlimit rl;
	rl.rlim_cur = rl.rlim_max = FSIZE_LIMIT;
	setrlimit(RLIMIT_FSIZE, &rl);
	if (r->lim.cpu_seconds) {
		rl.rlim_cur = (rlim_t)r->lim.cpu_seconds + cpu_extra;
		rl.rlim_max = rl.rlim_cur + 1;
		setrlimit(RLIMIT_CPU, &rl);
	}
	if (r->lim.mem_bytes && vm_bytes) {
		rl.rlim_cur = rl.rlim_max = vm_bytes + r->lim.mem_bytes;
		setrlimit(RLIMIT_AS, &rl);
		atexit(child_exit);
	}
}

/* ccr_child_probe_oom -- the check failed: note whether memory ran out */
void ccr_child_probe_oom(void)
{
	probe_oom();
}

/* ccr_child_reset -- before a check starts: no shortage of memory noted */
void ccr_child_reset(void)
{
	shared->oom = 0;
}

/* The bytes of a sigset_t the kernel uses (the C library's type is larger,
 * and what it returns past them is not defined), and the flag the C
 * library adds to every action it installs (x86-64's SA_RESTORER, which
 * <signal.h> does not define). */
#define KERNEL_SIGSET_BYTES ((_NSIG - 1) / 8)
#define LIBC_SA_FLAGS 0x04000000

/* ccr_same_sigset -- A and B hold the same signals (internal to the runner) */
int ccr_same_sigset(const sigset_t *a, const sigset_t *b)
{
	return memcmp(a, b, KERNEL_SIGSET_BYTES) == 0;
}

/* same_action -- OLD is the disposition SA stands for (internal) */
static int same_action(const struct sigaction *old, const struct sigaction *sa)
{
	return old->sa_handler == sa->sa_handler && (old->sa_flags & ~LIBC_SA_FLAGS) == sa->sa_flags &&
	       ccr_same_sigset(&old->sa_mask, &sa->sa_mask);
}

/* ccr_child_rearm -- put back the fatal-signal handlers and alternate stack a
 * check may have replaced (a reused worker does this after checks); non-zero
 * if any of them, or SIGPIPE's disposition, had been changed */
int ccr_child_rearm(struct runner *r)
{
	stack_t ss = { .ss_sp = r->altstack, .ss_size = ALTSTACK_SIZE, .ss_flags = 0 }, old_ss;
	memset(&old_ss, 0, sizeof(old_ss));
	int changed = sigaltstack(&ss, &old_ss) != 0 || old_ss.ss_sp != ss.ss_sp ||
		      old_ss.ss_size != ss.ss_size || old_ss.ss_flags != 0;
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = child_fatal;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < NFATAL; i++) {
		memset(&old, 0, sizeof(old));
		changed |= sigaction(fatal_signals[i], &sa, &old) != 0 || !same_action(&old, &sa);
	}
	sa.sa_handler = SIG_DFL;
	sa.sa_flags = 0;
	memset(&old, 0, sizeof(old));
	changed |= sigaction(SIGPIPE, &sa, &old) != 0 || !same_action(&old, &sa);
	return changed;
}

/*
 * ccr_child_end -- how a check ended, from its wait STATUS (TIMED_OUT: the
 * signal it was killed or stopped with, else 0) and the CPU seconds it used
 */
void ccr_child_end(struct runner *r, int status, int timed_out, double cpu, struct ccr_end *end)
{
	end->sig = end->code = -1;
	if (timed_out) {
		end->status = "timeout";
		end->sig = timed_out;   /* SIGKILL, or the signal that stopped it */
	} else if (WIFSIGNALED(status)) {
		end->sig = WTERMSIG(status);
		int cpu_out = r->lim.cpu_seconds && (end->sig == SIGXCPU ||
			      (end->sig == SIGKILL && cpu >= (double)r->lim.cpu_seconds));
		end->status = cpu_out ? "timeout" : shared->oom ? "oom" : "signal";
	} else {
		end->code = WEXITSTATUS(status);
		end->status = end->code == 0 ? "ok" : shared->oom ? "oom" : "exit";
	}
}

/* child_main -- the forked child: apply the state, limit, run CHECK (internal) */
static void child_main(struct runner *r, const uint8_t *writes, size_t wlen, const char *followup)
{
	setpgid(0, 0);   /* its own group: the parent kills whatever it forked too */
	/* A check that kills the runner (kill(getppid(), SIGKILL)) cannot be
	 * prevented; the client notices, reports the state in flight and starts
	 * a new runner.  This child must then not live on as an orphan. */
	pid_t parent = getppid();
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(126);
	ccr_apply_writes(r->pool, writes, wlen);
	ccr_lazy_child_begin();

	/* Keep the protocol fds out of reach: stray prints land in the capture. */
	dup2(r->null_fd, 0);
	dup2(r->err_fd, 1);
	dup2(r->err_fd, 2);
	if (r->in_fd > 2)
		close(r->in_fd);
	if (r->out_fd > 2)
		close(r->out_fd);

	/* Handlers, the alternate stack and RLIMIT_CORE come from the parent
	 * (ccr_child_handlers_install); only what differs from it is set here. */
	sigset_t all;
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	signal(SIGPIPE, SIG_DFL);

	ccr_child_limits(r, r->vm_bytes, 0);

	FILE *out = fdopen(r->res_fd, "w");
	if (out == NULL)
		_exit(125);
	int rc = r->check(r->ctx, followup, out);
	if (fflush(out) != 0)
		rc = rc ? rc : 124;
	fflush(stdout);
	fflush(stderr);
	if (rc != 0)
		probe_oom();
	_exit(rc == 0 ? 0 : (rc & 0xff) ? (rc & 0xff) : 1);
}

/*
 * wait_child -- reap PID within the timeout; kills it if time runs out.
 * SIGCHLD is blocked while the runner serves, so sigtimedwait() sleeps
 * until a child ends or the deadline passes: two system calls per state in
 * the common case.  A SIGCHLD left over from an earlier child only costs
 * one more round of the loop (internal)
 */
static int wait_child(struct runner *r, pid_t pid, int *status, struct rusage *ru, int *timed_out)
{
	int stop_sig = 0;
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	*timed_out = 0;
	int64_t deadline = r->lim.timeout_ms ? now_ms() + r->lim.timeout_ms : 0;
	for (;;) {
		struct timespec ts, *tp = NULL;
		if (deadline) {
			int64_t left = deadline - now_ms();
			if (left < 0)
				left = 0;
			ts.tv_sec = left / 1000;
			ts.tv_nsec = (left % 1000) * 1000000;
			tp = &ts;
		}
		int expired = sigtimedwait(&chld, NULL, tp) < 0 && errno == EAGAIN;
		pid_t w = wait4(pid, status, WNOHANG | WUNTRACED, ru);
		if (w == pid && WIFSTOPPED(*status)) {
			/* Nobody will send it SIGCONT: a stopped check is hung now,
			 * not when the timeout (which may be off) runs out. */
			stop_sig = WSTOPSIG(*status);
			break;
		}
		if (w == pid)
			return 0;
		if (w < 0 && errno != EINTR)
			return -1;
		if (expired && deadline && now_ms() >= deadline)
			break;
	}
	*timed_out = stop_sig ? stop_sig : SIGKILL;
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);   /* in case it had not reached setpgid yet */
	for (;;) {
		pid_t w = wait4(pid, status, 0, ru);
		if (w == pid)
			return 0;
		if (w < 0 && errno != EINTR)
			return -1;
	}
}

/*
 * ccr_child_run -- fork a child that checks the state WRITES (validated)
 * with FOLLOWUP, wait for it within the limits and kill what it left; 0
 * with how it ended in *END, or -1 and the reason in WHY
 */
int ccr_child_run(struct runner *r, const uint8_t *writes, size_t wlen, const char *followup,
		  struct ccr_end *end, char *why, size_t whylen)
{
	if (r->vm_stale && r->lim.mem_bytes) {
		r->vm_bytes = vm_size();
		r->vm_stale = 0;
	}
	/* Rewind the capture files; the child's writes move the shared offsets,
	 * which then tell how much it wrote (stale bytes beyond are ignored). */
	if (lseek(r->res_fd, 0, SEEK_SET) < 0 || lseek(r->err_fd, 0, SEEK_SET) < 0) {
		snprintf(why, whylen, "cannot rewind the capture files: %s", strerror(errno));
		return -1;
	}
	ccr_child_reset();
	fflush(NULL);

	pid_t pid = fork();
	if (pid < 0) {
		snprintf(why, whylen, "fork failed: %s", strerror(errno));
		return -1;
	}
	if (pid == 0)
		child_main(r, writes, wlen, followup);

	int status = 0, timed_out = 0;
	struct rusage ru;
	memset(&ru, 0, sizeof(ru));
	if (wait_child(r, pid, &status, &ru, &timed_out) < 0) {
		snprintf(why, whylen, "cannot wait for the check: %s", strerror(errno));
		return -1;
	}
	/* Whatever the check forked dies with it, after every state (not only on
	 * a timeout): a lingering grandchild could otherwise write into the
	 * capture files of later states.  kill() succeeding means something was
	 * left running: the answer says so ("stray"). */
	end->stray = !timed_out && kill(-pid, SIGKILL) == 0;

	double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
		     ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
	ccr_child_end(r, status, timed_out, cpu, end);
	end->out_from = end->err_from = 0;
	end->out_to = end->err_to = -1;   /* as far as the files' offsets */
	return 0;
}
