/*
 * serve.c -- the checker runner's serve loop: many post-crash states per process
 *
 * Protocol
 *   Requests arrive on the input fd as a 16-byte head (u32 kind, u32 body
 *   length, u64 id) and a body; every request gets exactly one JSON line on
 *   the output fd, in order, so the client may pipeline.  The runner first
 *   says hello ({"runner": 1, ...}).  docs/runner-protocol.md is the full
 *   statement; keep the two in step.
 *
 * This file owns cc_runner_serve (runner.h): setting the process up and
 * restoring it, reading requests and dispatching them.  The work is done
 * elsewhere: image.c writes the pool, child.c forks and limits the check of
 * one state, answer.c writes every answer (runner_internal.h has the map).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runner_internal.h"

enum req_kind {
	REQ_BASE = 1,   /* body: path of an image file */
	REQ_PATCH = 2,  /* body: writes, applied to the base */
	REQ_STATE = 3,  /* body: u32 followup length, followup, writes */
	REQ_RESET = 4,  /* forget earlier results (no more dup_of to them) */
	REQ_QUIT = 5,
	REQ_LAZY = 6,   /* body: u32 followup length, followup, u32 spec length, spec, writes */
	REQ_LIMIT = 7,  /* body: u32 timeout_ms, u32 after, u32 short_ms */
	REQ_LAZY_BODY = 8,  /* body: a lazy spec's groups, kept for the LAZY requests that name them */
	REQ_FOLLOWUP = 9,   /* body: a followup, kept for the STATE and LAZY requests that name it */
};

#define REQ_HEAD 16
#define MAX_BODY ((size_t)1 << 31)
/* a STATE or LAZY request's followup length that names the stored followup (REQ_FOLLOWUP) */
#define FU_STORED 0xFFFFFFFFu

/*
 * fill_input -- make at least N unconsumed bytes available in the input
 * buffer.  Requests are read in large chunks (one read(2) usually brings a
 * whole batch); held answers are written first, since the read may block.
 * Returns 0, 1 on a clean end of input (nothing buffered), -1 (internal)
 */
static int fill_input(struct runner *r, size_t n)
{
	struct buf *b = &r->inb;
	if (b->len - r->inpos >= n)
		return 0;
	if (r->inpos) {  /* drop consumed bytes */
		memmove(b->p, b->p + r->inpos, b->len - r->inpos);
		b->len -= r->inpos;
		r->inpos = 0;
	}
	if (ccr_flush_answers(r) < 0)
		return -1;
	while (b->len < n) {
		size_t want = n - b->len > (1 << 16) ? n - b->len : (1 << 16);
		if (ccr_buf_reserve(b, want, &r->vm_stale) < 0) {
			fprintf(stderr, "crashcheck runner: out of memory reading a request of %zu bytes\n", n);
			return -1;
		}
		ssize_t k = read(r->in_fd, b->p + b->len, b->cap - b->len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			fprintf(stderr, "crashcheck runner: cannot read requests: %s\n", strerror(errno));
			return -1;
		}
		if (k == 0) {
			if (b->len == 0)
				return 1;
			fprintf(stderr, "crashcheck runner: input ended inside a request\n");
			return -1;
		}
		b->len += (size_t)k;
	}
	return 0;
}

/*
 * body_followup -- the followup a STATE or LAZY body (N bytes) starts with:
 * its own, or the stored one (FU_STORED); into *FU and *FLEN, and the bytes
 * it took of the body into *USED.  NULL, or why it is not valid (internal)
 */
static const char *body_followup(const struct runner *r, const uint8_t *body, size_t n,
				 const char **fu, size_t *flen, size_t *used)
{
	if (n < 4)
		return "body shorter than its followup length";
	uint32_t len;
	memcpy(&len, body, 4);
	if (len == FU_STORED) {
		*fu = r->fu.p ? r->fu.p : "";
		*flen = r->fu.len;
		*used = 4;
		return NULL;
	}
	if (len > n - 4)
		return "followup runs past the body";
	*fu = (const char *)body + 4;
	*flen = len;
	*used = 4 + (size_t)len;
	return NULL;
}

/*
 * state_body -- a STATE body's followup and writes into *JOB; NULL, or why
 * it is not a valid state (internal)
 */
static const char *state_body(struct runner *r, const uint8_t *body, size_t n, struct ccr_job *job)
{
	const char *fu;
	size_t flen, used;
	const char *bad = body_followup(r, body, n, &fu, &flen, &used);
	if (bad)
		return bad;
	*job = (struct ccr_job){ fu, flen, body + used, n - used, 0, NULL, 0 };
	return ccr_check_writes(r, job->writes, job->wlen);
}

/* followup_str -- JOB's followup as a C string (in R->body); NULL when out of memory (internal) */
static const char *followup_str(struct runner *r, const struct ccr_job *job)
{
	r->body.len = 0;
	if (ccr_buf_add(r, &r->body, job->followup, job->flen) < 0 || ccr_buf_add(r, &r->body, "", 1) < 0)
		return NULL;
	return r->body.p;
}

/* fork_state -- check JOB (state ID) in a child of its own and answer (internal) */
static int fork_state(struct runner *r, uint64_t id, const struct ccr_job *job)
{
	struct ccr_end end;
	char why[600];
	const char *fu = followup_str(r, job);
	if (fu == NULL)
		return ccr_send_error(r, id, "out of memory");
	if (ccr_child_run(r, job->writes, job->wlen, fu, &end, why, sizeof(why)) < 0)
		return ccr_send_error(r, id, "%s", why);
	return ccr_answer_state(r, id, &end);
}

/*
 * next_state -- the next buffered request, if it is a whole, valid STATE:
 * its id and body into *ID and *JOB, consumed; 0 if there is none (the
 * serve loop takes what is there, and answers an invalid one) (internal)
 */
static int next_state(struct runner *r, uint64_t *id, struct ccr_job *job)
{
	size_t have = r->inb.len - r->inpos;
	const uint8_t *head = (const uint8_t *)r->inb.p + r->inpos;
	uint32_t kind, len;
	if (have < REQ_HEAD)
		return 0;
	memcpy(&kind, head, 4);
	memcpy(&len, head + 4, 4);
	if (kind != REQ_STATE || have - REQ_HEAD < len || state_body(r, head + REQ_HEAD, len, job) != NULL)
		return 0;
	memcpy(id, head + 8, 8);
	r->inpos += REQ_HEAD + (size_t)len;
	return 1;
}

/*
 * run_eager -- check the STATE request ID (BODY of N bytes) and the valid
 * STATE requests buffered right after it, as one batch for the reused
 * check process (a wake-up of it per batch, not per state), and answer
 * each in order; a state it cannot take forks (internal)
 */
static int run_eager(struct runner *r, uint64_t id, const uint8_t *body, size_t n)
{
	struct ccr_job jobs[CCR_WORKER_BATCH];
	struct ccr_end ends[CCR_WORKER_BATCH];
	uint64_t ids[CCR_WORKER_BATCH];
	const char *bad = state_body(r, body, n, &jobs[0]);
	if (bad)
		return ccr_send_error(r, id, "state %llu: %s", (unsigned long long)id, bad);
	ids[0] = id;
	int count = 1;
	while (count < CCR_WORKER_BATCH && !r->worker_off && next_state(r, &ids[count], &jobs[count]))
		count++;
	for (int i = 0; i < count;) {
		int got = ccr_worker_run(r, jobs + i, count - i, ends + i);
		if (got == 0 && fork_state(r, ids[i], &jobs[i]) < 0)
			return -1;
		for (int k = i; k < i + got; k++)
			if (ccr_answer_state(r, ids[k], &ends[k]) < 0)
				return -1;
		i += got ? got : 1;
	}
	return 0;
}

/* run_lazy -- check one LAZY request's class of states in a child of its own and answer (internal) */
static int run_lazy(struct runner *r, uint64_t id, const uint8_t *body, size_t n)
{
	const char *fu;
	size_t flen, used;
	const char *fbad = body_followup(r, body, n, &fu, &flen, &used);
	if (fbad)
		return ccr_send_error(r, id, "state %llu: %s", (unsigned long long)id, fbad);
	const uint8_t *writes = body + used;
	size_t wlen = n - used;
	if (!ccr_lazy_supported())
		return ccr_send_error(r, id, "state %llu: lazy exploration needs code compiled with "
				      "check loads (the crashcheck pass without CRASHCHECK_PASS_CHECK_LOADS=0)",
				      (unsigned long long)id);
	uint32_t slen;
	if (wlen < 4)
		return ccr_send_error(r, id, "state %llu: body shorter than its spec length",
				      (unsigned long long)id);
	memcpy(&slen, writes, 4);
	if (slen > wlen - 4)
		return ccr_send_error(r, id, "state %llu: lazy spec runs past the body",
				      (unsigned long long)id);
	const char *why = ccr_lazy_parse(r, writes + 4, slen);
	if (why)
		return ccr_send_error(r, id, "state %llu: %s", (unsigned long long)id, why);
	writes += 4 + slen;
	wlen -= 4 + slen;
	const char *bad = ccr_check_writes(r, writes, wlen);
	struct ccr_job job = { fu, flen, writes, wlen, CCR_READS, NULL, 0 };
	struct ccr_end end;
	int rc;
	if (bad) {
		rc = ccr_send_error(r, id, "state %llu: %s", (unsigned long long)id, bad);
	} else if ((ccr_lazy_groups() == 0 || ccr_lazy_worker_ok()) && !r->worker_off) {
		/* no undetermined lines (one state, whose reads are logged), or
		 * groups the worker can read (the stored body's shared copy): in
		 * the reused check process, a batch of its own (the log is one) */
		ccr_lazy_reset_log();
		if (ccr_lazy_groups() != 0) {
			job.reads = CCR_LAZY;
			job.dec = ccr_lazy_decisions(&job.ndec);
		}
		if (ccr_worker_run(r, &job, 1, &end) == 1)
			rc = ccr_answer_state(r, id, &end);
		else
			rc = fork_state(r, id, &job);
	} else {
		rc = fork_state(r, id, &job);
	}
	ccr_lazy_end();
	return rc;
}

/*
 * set_limit -- the wall-clock limit of the states after this request: FULL
 * ms, until AFTER of them (0: no matter how many) have run out of it; then
 * SHORT ms for the rest, until the next LIMIT or BASE.  Once the check of a
 * crash point has hung a few times, the client expects its other states to
 * hang alike: they need not each take the whole limit to show it (internal)
 */
static void set_limit(struct runner *r, unsigned full, unsigned after, unsigned shorter)
{
	r->lim.timeout_ms = r->limit_full = full;
	r->limit_after = after;
	r->limit_short = shorter;
	r->limit_hung = 0;
}

/* serve_loop -- read and answer requests until quit or EOF (internal) */
static int serve_loop(struct runner *r)
{
	for (;;) {
		int got = fill_input(r, REQ_HEAD);
		if (got != 0)
			return got == 1 ? 0 : -1;
		uint32_t kind, len;
		uint64_t id;
		const uint8_t *head = (const uint8_t *)r->inb.p + r->inpos;
		memcpy(&kind, head, 4);
		memcpy(&len, head + 4, 4);
		memcpy(&id, head + 8, 8);
		if (len > MAX_BODY) {
			ccr_send_error(r, id, "request body of %u bytes is too large", len);
			return -1;
		}
		if (fill_input(r, REQ_HEAD + (size_t)len) != 0)
			return -1;
		uint8_t *body = (uint8_t *)r->inb.p + r->inpos + REQ_HEAD;
		r->inpos += REQ_HEAD + (size_t)len;
		int rc;
		char why[600];
		const char *bad;
		switch (kind) {
		case REQ_BASE:
			r->body.len = 0;
			if (memchr(body, '\0', len))
				rc = ccr_send_error(r, id, "base image path contains a NUL byte");
			else if (ccr_buf_add(r, &r->body, body, len) < 0 || ccr_buf_add(r, &r->body, "", 1) < 0)
				rc = ccr_send_error(r, id, "out of memory");
			else if (ccr_load_base(r, r->body.p, why, sizeof(why)) < 0)
				rc = ccr_send_error(r, id, "%s", why);
			else
				rc = ccr_send_ack(r, "base", id);
			set_limit(r, r->limit_start, 0, 0);
			break;
		case REQ_PATCH:
			if ((bad = ccr_check_writes(r, body, len)) != NULL) {
				rc = ccr_send_error(r, id, "patch %llu: %s", (unsigned long long)id, bad);
			} else if (ccr_patch_base(r, body, len) < 0) {
				rc = ccr_send_error(r, id, "patch %llu: cannot write the pool: %s",
						    (unsigned long long)id, strerror(errno));
			} else {
				rc = ccr_send_ack(r, "patch", id);
			}
			break;
		case REQ_STATE:
			rc = run_eager(r, id, body, len);
			break;
		case REQ_LAZY:
			rc = run_lazy(r, id, body, len);
			break;
		case REQ_LAZY_BODY:
			if ((bad = ccr_lazy_store(r, body, len)) != NULL)
				rc = ccr_send_error(r, id, "lazy body %llu: %s", (unsigned long long)id, bad);
			else
				rc = ccr_send_ack(r, "lazy-body", id);
			break;
		case REQ_FOLLOWUP:
			/* kept until the next one: a crash point's states name it instead of
			 * each carrying a few KiB of continuation (docs/runner-protocol.md) */
			r->fu.len = 0;
			if (memchr(body, '\0', len))
				rc = ccr_send_error(r, id, "followup %llu contains a NUL byte", (unsigned long long)id);
			else if (ccr_buf_add(r, &r->fu, body, len) < 0)
				rc = ccr_send_error(r, id, "out of memory");
			else
				rc = ccr_send_ack(r, "followup", id);
			break;
		case REQ_LIMIT:
			if (len != 12) {
				rc = ccr_send_error(r, id, "limit %llu: body of %u bytes, not 12",
						    (unsigned long long)id, len);
			} else {
				uint32_t v[3];
				memcpy(v, body, sizeof(v));
				set_limit(r, v[0], v[1], v[2]);
				rc = ccr_send_ack(r, "limit", id);
			}
			break;
		case REQ_RESET:
			ccr_answers_forget(r);
			rc = ccr_send_ack(r, "reset", id);
			break;
		case REQ_QUIT:
			ccr_send_ack(r, "quit", id);
			ccr_flush_answers(r);
			return 0;
		default:
			ccr_send_error(r, id, "unknown request kind %u (protocol out of step)", kind);
			ccr_flush_answers(r);
			return -1;
		}
		if (rc < 0)
			return -1;
	}
}

/* hello -- the first line: who we are and where the pool is (internal) */
static int hello(struct runner *r)
{
	r->ans.len = 0;
	if (ccr_buf_fmt(r, &r->ans, "{\"runner\":1,\"pool\":\"0x%llx\",\"size\":%zu,\"pid\":%d,",
			(unsigned long long)(uintptr_t)r->pool, r->size, (int)getpid()) < 0 ||
	    ccr_buf_fmt(r, &r->ans, "\"limits\":{\"timeout_ms\":%u,\"mem_bytes\":%zu,\"cpu_seconds\":%u},",
			r->lim.timeout_ms, r->lim.mem_bytes, r->lim.cpu_seconds) < 0 ||
	    ccr_buf_fmt(r, &r->ans, "\"lazy\":%s,\"lazy_body\":true,\"followup_stored\":true,\"reuse\":%s}", ccr_lazy_supported() ? "true" : "false",
			r->worker_off || r->pool_fd < 0 ? "false" : "true") < 0)
		return -1;
	return ccr_send_answer(r);
}

/*
 * cc_runner_serve -- serve check requests from IN_FD, answering on OUT_FD
 */
int cc_runner_serve(int in_fd, int out_fd, void *pool_addr, size_t pool_size,
		    cc_check_fn check, void *ctx, const struct cc_runner_limits *lim)
{
	static const struct cc_runner_limits defaults = CC_RUNNER_DEFAULT_LIMITS;
	struct runner r;
	memset(&r, 0, sizeof(r));
	r.in_fd = in_fd;
	r.out_fd = out_fd;
	r.check = check;
	r.ctx = ctx;
	r.lim = lim ? *lim : defaults;
	r.limit_start = r.limit_full = r.lim.timeout_ms;
	r.size = pool_size;
	r.res_fd = r.err_fd = r.null_fd = r.pool_fd = -1;
	/* CRASHCHECK_RUNNER_REUSE=0: a fork per state (worker.h says why not) */
	const char *reuse = getenv("CRASHCHECK_RUNNER_REUSE");
	r.worker_off = reuse && !strcmp(reuse, "0");
	r.vm_stale = 1;
	int ret = -1;

	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	r.map_size = (pool_size + page - 1) / page * page;
	struct sigaction old_chld, old_pipe, sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;   /* reaping needs SIGCHLD not ignored */
	sigaction(SIGCHLD, &sa, &old_chld);
	sa.sa_handler = SIG_IGN;   /* a vanished client is an EPIPE, not a death */
	sigaction(SIGPIPE, &sa, &old_pipe);
	sigset_t chld, old_mask;  /* child.c collects SIGCHLD with sigtimedwait */
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &old_mask);
	fflush(NULL);

	char why[600];
	if (check == NULL || pool_size == 0 || (uintptr_t)pool_addr % page) {
		ccr_send_error(&r, 0, "bad arguments: check %s, pool 0x%llx of %zu bytes (must be page-aligned and non-empty)",
			       check ? "set" : "NULL", (unsigned long long)(uintptr_t)pool_addr, pool_size);
		goto out;
	}
	if (ccr_pool_map(&r, pool_addr, why, sizeof(why)) < 0) {
		ccr_send_error(&r, 0, "%s", why);
		goto out;
	}
	if (ccr_child_setup(&r, page) < 0) {
		ccr_send_error(&r, 0, "cannot set up the runner: %s", strerror(errno));
		goto out;
	}
	ccr_lazy_setup(&r);

	ccr_child_handlers_install(&r);
	if (hello(&r) == 0)
		ret = serve_loop(&r);
	ccr_worker_stop(&r);
	ccr_child_handlers_restore();
out:
	ccr_flush_answers(&r);
	ccr_lazy_teardown(&r);
	ccr_pool_unmap(&r);
	ccr_child_teardown(&r, page);
	free(r.inb.p);
	free(r.ans.p);
	free(r.sendq.p);
	free(r.body.p);
	free(r.fu.p);
	free(r.out.p);
	free(r.err.p);
	free(r.seen);
	/* Drop a SIGCHLD still pending from our children before unblocking it. */
	struct timespec zero = { 0, 0 };
	while (sigtimedwait(&chld, NULL, &zero) > 0)
		;
	sigprocmask(SIG_SETMASK, &old_mask, NULL);
	sigaction(SIGCHLD, &old_chld, NULL);
	sigaction(SIGPIPE, &old_pipe, NULL);
	return ret;
}
