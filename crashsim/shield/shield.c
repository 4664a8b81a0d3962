/* crashcheck-shield -- the parent a supervised run's driver gets (harness/core/supervise.py).
 *
 * Usage: crashcheck-shield SECONDS [cpu=N] [fsize=N] [core=N] [as=N] -- COMMAND [ARG...]
 *
 * Sets the resource limits given (soft and hard), forks, runs COMMAND in the child and waits
 * for it: one exec in front of every supervised command instead of util-linux `prlimit` and
 * coreutils `timeout` (two execs, about 2 ms of CPU per judged image on the 2-core machine).
 *
 * Why a parent at all: a structure may kill its parent (kill(getppid(), SIGKILL)); that must be
 * this process, never crashcheck, which then reads "its parent died of SIGKILL while its group
 * lives on" as parent-killed.  So this process passes on how the command ended as its own: its
 * exit status, or its fatal signal raised again on itself (no core dump: RLIMIT_CORE is the
 * caller's, and crashcheck asks for 0).  SECONDS is only a backstop behind the supervisor's own
 * deadline: when it runs out the command is SIGKILLed.  SIGTERM, SIGINT, SIGHUP and SIGQUIT sent
 * to this process are passed on to the command (as `timeout` does), so a structure that signals
 * its parent ends itself rather than leaving itself behind.
 *
 * Exit statuses of its own (as `timeout`'s): 125 bad usage or a limit that cannot be set, 126
 * COMMAND found but not runnable, 127 COMMAND not found.  Never instrumented, no runtime.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile pid_t child;

static void pass_on(int sig)
{
	if (child > 0)
		kill(child, sig == SIGALRM ? SIGKILL : sig);
}

static int usage(const char *why)
{
	fprintf(stderr, "crashcheck-shield: %s\n"
		"usage: crashcheck-shield SECONDS [cpu=N] [fsize=N] [core=N] [as=N] -- COMMAND [ARG...]\n", why);
	return 125;
}

static int set_limit(const char *arg)
{
	static const struct { const char *name; int res; } names[] = {
		{"cpu=", RLIMIT_CPU}, {"fsize=", RLIMIT_FSIZE}, {"core=", RLIMIT_CORE}, {"as=", RLIMIT_AS},
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		size_t n = strlen(names[i].name);
		if (strncmp(arg, names[i].name, n))
			continue;
		char *end;
		errno = 0;
		unsigned long long v = strtoull(arg + n, &end, 10);
		if (errno || end == arg + n || *end)
			return usage("a limit's value is not a number");
		struct rlimit rl = {v, v};
		if (setrlimit(names[i].res, &rl)) {
			fprintf(stderr, "crashcheck-shield: cannot set %s: %s\n", arg, strerror(errno));
			return 125;
		}
		return 0;
	}
	return usage("unknown limit");
}

int main(int argc, char **argv)
{
	if (argc < 4)
		return usage("too few arguments");
	char *end;
	double seconds = strtod(argv[1], &end);
	if (end == argv[1] || *end || !(seconds > 0))
		return usage("SECONDS is not a positive number");
	int i = 2;
	for (; i < argc && strcmp(argv[i], "--"); i++) {
		int rc = set_limit(argv[i]);
		if (rc)
			return rc;
	}
	if (i + 1 >= argc)
		return usage("no command after --");
	char **cmd = argv + i + 1;

	pid_t pid = fork();
	if (pid < 0) {
		perror("crashcheck-shield: fork");
		return 125;
	}
	if (pid == 0) {
		execvp(cmd[0], cmd);
		int err = errno;
		fprintf(stderr, "crashcheck-shield: %s: %s\n", cmd[0], strerror(err));
		_exit(err == ENOENT ? 127 : 126);
	}
	child = pid;

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = pass_on;
	sigemptyset(&sa.sa_mask);
	int passed[] = {SIGALRM, SIGTERM, SIGINT, SIGHUP, SIGQUIT};
	for (size_t k = 0; k < sizeof passed / sizeof passed[0]; k++)
		sigaction(passed[k], &sa, NULL);
	struct itimerval backstop = {{0, 0}, {(time_t)seconds, (suseconds_t)((seconds - (time_t)seconds) * 1e6)}};
	if (!backstop.it_value.tv_sec && !backstop.it_value.tv_usec)
		backstop.it_value.tv_usec = 1;
	setitimer(ITIMER_REAL, &backstop, NULL);

	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			perror("crashcheck-shield: waitpid");
			return 125;
		}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);

	/* Die of the same signal, so our own parent reads the same end. */
	int sig = WTERMSIG(status);
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	struct rlimit nocore = {0, 0};
	setrlimit(RLIMIT_CORE, &nocore);
	signal(sig, SIG_DFL);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
	return 128 + sig;          /* a signal whose default is not to end the process */
}
