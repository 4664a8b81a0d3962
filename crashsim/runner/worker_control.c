/*
 * worker_control.c -- the runner's side of the reused check process: start
 * a worker and wait for its snapshot, post a batch of states into the
 * shared area, wait for it (each state against its own deadline), answer
 * how each state ended (a clean check from its slot, a dead worker as a
 * forked child's end), decide which states to check again, and stop it
 * (worker.h, "Batches").  The worker process is worker_loop.c's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "worker.h"

/* worker_free -- close the runner's end of a worker that has been reaped (internal) */
static void worker_free(struct runner *r)
{
	struct ccr_worker *w = r->worker;
	close(w->pidfd);
	close(w->cmd);
	close(w->done);
	munmap(w->sh, sizeof(struct w_shared) + W_REQ_BYTES);
	free(w);
	r->worker = NULL;
	r->vm_stale = 1;
}

/* reap -- wait for the worker's end (internal) */
static void reap(pid_t pid, int *status, struct rusage *ru)
{
	while (wait4(pid, status, 0, ru) < 0 && errno == EINTR)
		;
}

/* ccr_worker_stop -- end the worker and whatever its checks left, if there is one */
void ccr_worker_stop(struct runner *r)
{
	if (r->worker == NULL)
		return;
	int status;
	struct rusage ru;
	kill(-r->worker->pid, SIGKILL);
	kill(r->worker->pid, SIGKILL);
	reap(r->worker->pid, &status, &ru);
	worker_free(r);
}

/* worker_start -- fork a worker and wait until it has taken its snapshot; NULL if it cannot (internal) */
static struct ccr_worker *worker_start(struct runner *r)
{
	struct ccr_worker *w = calloc(1, sizeof(*w));
	int cmd[2] = { -1, -1 }, done[2] = { -1, -1 };
	if (w == NULL)
		return NULL;
	w->sh = mmap(NULL, sizeof(struct w_shared) + W_REQ_BYTES, PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (w->sh == MAP_FAILED || pipe2(cmd, O_CLOEXEC) < 0 || pipe2(done, O_CLOEXEC) < 0)
		goto fail;
	fflush(NULL);
	w->pid = fork();
	if (w->pid < 0)
		goto fail;
	if (w->pid == 0) {
		close(cmd[1]);
		close(done[0]);
		ccr_w_main(r, w->sh, cmd[0], done[1]);
	}
	close(cmd[0]);
	close(done[1]);
	w->cmd = cmd[1];
	w->done = done[0];
	w->pidfd = (int)syscall(SYS_pidfd_open, w->pid, 0);
	r->worker = w;
	r->vm_stale = 1;
	char b = 0;
	struct pollfd p = { w->done, POLLIN, 0 };
	if (w->pidfd < 0 || poll(&p, 1, W_START_MS) != 1 || read(w->done, &b, 1) != 1 || b != 'r') {
		ccr_worker_stop(r);
		return NULL;
	}
	return w;
fail:
	if (w->sh != MAP_FAILED && w->sh)
		munmap(w->sh, sizeof(struct w_shared) + W_REQ_BYTES);
	for (int i = 0; i < 2; i++) {
		if (cmd[i] >= 0)
			close(cmd[i]);
		if (done[i] >= 0)
			close(done[i]);
	}
	free(w);
	return NULL;
}

/* job_bytes -- what JOB takes of the hand-over area, its followup unless SHARED (internal) */
static size_t job_bytes(const struct ccr_job *job, int shared)
{
	return (shared ? 0 : job->flen + 1) + job->wlen + 2 * (size_t)job->ndec;
}

/*
 * post -- copy as many of the N JOBS as fit (at least the first, which
 * must fit) into the shared area as a batch, rewind the capture files and
 * wake the worker; the number posted, or 0 if the worker is gone (internal)
 */
static int post(struct runner *r, const struct ccr_job *jobs, int n)
{
	struct ccr_worker *w = r->worker;
	struct w_shared *sh = w->sh;
	/* without the shared result head, a check writes through the file's
	 * offset, which only tells where one state's result ends */
	int most = r->out_map ? CCR_WORKER_BATCH : 1;
	size_t off = 0;
	int k = 0;
	for (; k < n && k < most; k++) {
		/* the states of one crash point name the runner's stored followup: one copy */
		int shared = k && jobs[k].followup == jobs[k - 1].followup && jobs[k].flen == jobs[k - 1].flen;
		if (off + job_bytes(&jobs[k], shared) > W_REQ_BYTES)
			break;
		uint64_t fu_off = shared ? sh->item[k - 1].fu_off : off;
		if (!shared) {
			memcpy(sh->data + off, jobs[k].followup, jobs[k].flen);
			sh->data[off + jobs[k].flen] = '\0';
			off += jobs[k].flen + 1;
		}
		sh->item[k] = (struct w_item){ fu_off, off, jobs[k].wlen, (uint32_t)jobs[k].reads, jobs[k].ndec };
		memcpy(sh->data + off, jobs[k].writes, jobs[k].wlen);
		if (jobs[k].ndec)
			memcpy(sh->data + off + jobs[k].wlen, jobs[k].dec, 2 * (size_t)jobs[k].ndec);
		off += jobs[k].wlen + 2 * (size_t)jobs[k].ndec;
	}
	if ((!r->out_map && lseek(r->res_fd, 0, SEEK_SET) < 0) || lseek(r->err_fd, 0, SEEK_SET) < 0)
		return 0;
	sh->out_len = 0;
	sh->base_gen = r->base_gen;
	sh->pool_hi = r->pool_hi;
	sh->n = k;
	sh->ndone = 0;
	sh->settled = -1;   /* the worker is settled between batches */
	sh->unsure = 0;
	sh->settle_each = r->settle_left > 0;
	sh->cur = -1;
	sh->started_ms = now_ms();
	sh->phase = PH_POSTED;
	return write(w->cmd, "c", 1) == 1 ? k : 0;
}

/*
 * await -- wait until the worker has done the posted batch (1), or has
 * ended (0), or the state in progress has run out of time or stopped
 * itself (the signal, in *TIMED_OUT); -1 if poll fails (internal)
 */
static int await(struct runner *r, int *timed_out)
{
	struct ccr_worker *w = r->worker;
	struct w_shared *sh = w->sh;
	for (;;) {
		/* each state's deadline runs from its own start */
		int64_t deadline = r->lim.timeout_ms ? sh->started_ms + r->lim.timeout_ms : 0, now = now_ms();
		int ms = W_STOP_POLL_MS;
		if (deadline && deadline - now < ms)
			ms = deadline - now > 0 ? (int)(deadline - now) : 0;
		struct pollfd p[2] = { { w->done, POLLIN, 0 }, { w->pidfd, POLLIN, 0 } };
		int k = poll(p, 2, ms);
		if (k < 0 && errno != EINTR)
			return -1;
		char b;
		if (k > 0 && (p[0].revents & POLLIN) && read(w->done, &b, 1) == 1)
			return 1;
		if (k > 0)
			return 0;   /* it ended (pidfd readable, or its end of the pipe closed) */
		/* Nobody will continue a stopped check: it is hung now (as in child.c). */
		siginfo_t si;
		si.si_pid = 0;
		if (waitid(P_PID, (id_t)w->pid, &si, WSTOPPED | WNOHANG | WNOWAIT) == 0 && si.si_pid == w->pid &&
		    si.si_code == CLD_STOPPED) {
			*timed_out = si.si_status;
			return 0;
		}
		if (deadline && now_ms() >= sh->started_ms + r->lim.timeout_ms) {
			*timed_out = SIGKILL;
			return 0;
		}
	}
}

/* slot_end -- END of state I of the batch, which the worker checked cleanly (internal) */
static void slot_end(struct runner *r, const struct w_shared *sh, int i, struct ccr_end *end)
{
	ccr_child_end(r, 0, 0, 0.0, end);   /* exit status 0: "ok" */
	end->stray = sh->slot[i].stray;
	end->out_from = i ? (int64_t)sh->slot[i - 1].out_end : 0;
	end->err_from = i ? (int64_t)sh->slot[i - 1].err_end : 0;
	end->out_to = r->out_map ? (int64_t)sh->slot[i].out_end : -1;
	end->err_to = (int64_t)sh->slot[i].err_end;
}

/*
 * worker_ended -- the worker ended (or is killed now, TIMED_OUT) in state
 * I: how that state's check ended, as for a fork, into END (internal)
 */
static void worker_ended(struct runner *r, int i, int timed_out, struct ccr_end *end)
{
	struct ccr_worker *w = r->worker;
	struct w_shared *sh = w->sh;
	int status = 0;
	struct rusage ru;
	memset(&ru, 0, sizeof(ru));
	if (timed_out)
		kill(-w->pid, SIGKILL);
	kill(w->pid, SIGKILL);
	reap(w->pid, &status, &ru);
	end->stray = !timed_out && kill(-w->pid, SIGKILL) == 0;
	double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
		     ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6 - sh->cpu_start;
	if (sh->cur == i && sh->phase >= PH_CHECKED)
		ccr_child_end(r, 0, 0, 0.0, end);   /* the check had finished cleanly */
	else
		ccr_child_end(r, status, timed_out, cpu, end);
	end->out_from = i ? (int64_t)sh->slot[i - 1].out_end : 0;
	end->err_from = i ? (int64_t)sh->slot[i - 1].err_end : 0;
	end->out_to = r->out_map ? (int64_t)sh->out_len : -1;
	end->err_to = -1;   /* as far as the stderr file's offset */
}

/*
 * ccr_worker_run -- check the N states JOBS (validated) in the worker, as
 * one batch where it can: returns how many of them (from the first) have
 * how they ended in ENDS, or 0 when the worker cannot take the first
 * (reuse off, or a state too big for the hand-over area): fork it instead.
 * The ENDS' ranges of the capture files hold until the next call
 */
int ccr_worker_run(struct runner *r, const struct ccr_job *jobs, int n, struct ccr_end *ends)
{
	if (r->worker_off || r->pool_fd < 0 || n < 1 || job_bytes(&jobs[0], 0) > W_REQ_BYTES)
		return 0;
	if (r->worker == NULL && worker_start(r) == NULL) {
		fprintf(stderr, "crashcheck runner: cannot start a reused check process; forking per state\n");
		r->worker_off = 1;
		return 0;
	}
	int posted = post(r, jobs, n);
	if (posted == 0) {   /* it died while idle: start another */
		ccr_worker_stop(r);
		return ccr_worker_run(r, jobs, n, ends);
	}
	struct w_shared *sh = r->worker->sh;
	int timed_out = 0, finished = await(r, &timed_out);
	int done = __atomic_load_n(&sh->ndone, __ATOMIC_ACQUIRE);
	for (int i = 0; i < done; i++)
		slot_end(r, sh, i, &ends[i]);
	r->settle_left -= r->settle_left < done ? r->settle_left : done;
	if (finished == 1) {
		if (sh->unsure)   /* something changes the process: settle after each state a while */
			r->settle_left = CCR_WORKER_BATCH;
		if (sh->retire || done < 1)
			ccr_worker_stop(r);
		return done;   /* 0 (it did nothing: cannot happen): fork the first */
	}
	/* It died (or hangs) in state DONE.  If states before it ran since the
	 * last settle, one of them may have changed the process so that DONE
	 * died of it: keep the states up to the first since the settle, check
	 * the rest again, settling after each.  A state that ran out of time or
	 * stopped itself is answered as it is (a second run would take as long). */
	int keep = sh->settled + 2 < done ? sh->settled + 2 : done;
	if ((!timed_out && done > sh->settled + 1) || (sh->cur != done && done > 0)) {
		ccr_worker_stop(r);
		r->settle_left = CCR_WORKER_BATCH;
		return keep;
	}
	/* It ended in state DONE (or before it started the batch's first,
	 * answered the same way, as when a state was posted on its own). */
	worker_ended(r, done, timed_out, &ends[done]);
	worker_free(r);
	return done + 1;
}
