/*
 * runner_internal.h -- state shared by the checker runner's files (internal)
 *
 * The runner is split by job: serve.c owns the request loop and the
 * protocol (cc_runner_serve), child.c the forked child that checks one
 * state (fork, limits, signal handlers, timeout, OOM probing, reaping),
 * worker_control.c, worker_loop.c and worker_snapshot.c the reused check
 * process (restored after every state instead of a fork per state; worker.h
 * says which file owns what), lazy.c the branching of a LAZY request's child on what recovery reads,
 * image.c the pool and what is written into it (base images, patches, a
 * state's writes), answer.c the answers (a child's result checked as JSON,
 * deduplication, answers, acks and errors), buf.c the growable buffer.
 *
 * The wire protocol is docs/runner-protocol.md; keep the two in step.
 *
 * Names shared between the files carry the ccr_ prefix: the runner lives in
 * the runtime library (crashsim/build.mk), which is linked into the code
 * under test, so a plain name like buf_add could clash with the user's.
 */
#ifndef CC_RUNNER_INTERNAL_H
#define CC_RUNNER_INTERNAL_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "runner.h"

/* A growable byte buffer (answers, request bodies, captured output). */
struct buf {
	char *p;
	size_t len, cap;
};

/* One remembered answer: its 128-bit hash and the first state that gave it. */
struct seen {
	uint64_t a, b, id;
	int used;
};

struct runner {
	int in_fd, out_fd;
	uint8_t *pool;
	size_t size, map_size;
	cc_check_fn check;
	void *ctx;
	struct cc_runner_limits lim;
	int res_fd, err_fd, null_fd;
	void *altstack;
	size_t vm_bytes;       /* runner's address space size, for RLIMIT_AS */
	int vm_stale;
	struct buf inb, ans, sendq, body, out, err;
	struct buf fu;              /* the stored followup (REQ_FOLLOWUP; no NUL) */
	size_t inpos;               /* bytes of inb already consumed */
	struct seen *seen;
	size_t seen_cap, seen_len;
	int pool_fd;                /* the base image's memfd, or -1 (anonymous pool) */
	uint64_t base_gen;          /* bumped whenever the base changes (BASE, PATCH) */
	size_t pool_hi;             /* end of the highest byte ever written to the base since BASE */
	struct ccr_worker *worker;  /* worker.h: the reused check process, or NULL */
	int worker_off;             /* reuse is off (or failed to start): fork per state */
	char *out_map;              /* the result capture file's first CCR_OUT_MAP bytes, shared, or NULL */
	int settle_left;            /* states to post with settle_each (worker.h) */
	/* The wall-clock limit of a state is lim.timeout_ms.  A LIMIT request
	 * (serve.c) sets it to limit_full and lets limit_after states run out of
	 * it before the states after them get limit_short (answer.c counts them
	 * in limit_hung); a BASE puts back limit_start, the limit the runner
	 * started with. */
	unsigned limit_start, limit_full, limit_short, limit_after, limit_hung;
};

/* Bytes of the result capture file mapped shared: a reused check process
 * writes its result there without a system call (worker_loop.c), and the rest
 * of a bigger one (tests: the fixture's BIG, about 4 MB) into the file. */
#define CCR_OUT_MAP ((size_t)1 << 20)

/*
 * How one check ended: found by ccr_child_run or ccr_worker_run, reported
 * by ccr_answer_state.  Where its output is: the worker checks a batch of
 * states into the same capture files one after another, so each state's
 * result and stderr are byte ranges of them; a forked check's start at 0
 * and end at the file's offset (OUT_TO, ERR_TO -1).
 */
struct ccr_end {
	const char *status;    /* "ok", "exit", "signal", "timeout" or "oom" */
	int sig, code;         /* the signal, the exit code; -1 when there is none */
	int stray;             /* something the check forked was still running */
	int64_t out_from, out_to;   /* its result: [out_from, out_to) of the result file (its
				     * first CCR_OUT_MAP bytes read through out_map) */
	int64_t err_from, err_to;   /* its stdout and stderr: [err_from, err_to) of the stderr file */
};

/* One eager state for the worker: its followup (FLEN bytes, no NUL) and writes (validated). */
struct ccr_job {
	const char *followup;
	size_t flen;
	const uint8_t *writes;
	size_t wlen;
	int reads;          /* CCR_READS: log the check's reads (a LAZY request without groups);
			     * CCR_LAZY: a LAZY request naming the stored body (lazy.c) */
	const uint8_t *dec; /* CCR_LAZY: its decision list, NDEC u16 */
	uint32_t ndec;
};
enum { CCR_READS = 1, CCR_LAZY = 2 };

/* buf.c.  Each returns 0, or -1 when out of memory; growing a buffer marks
 * the runner's address-space size stale (R->vm_stale). */
int ccr_buf_reserve(struct buf *b, size_t n, int *vm_stale);
int ccr_buf_add(struct runner *r, struct buf *b, const void *data, size_t n);
int ccr_buf_str(struct runner *r, struct buf *b, const char *s);
int ccr_buf_fmt(struct runner *r, struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* image.c */
int ccr_pool_map(struct runner *r, void *addr, char *why, size_t whylen);
void ccr_pool_unmap(struct runner *r);
int ccr_load_base(struct runner *r, const char *path, char *why, size_t whylen);
const char *ccr_check_writes(const struct runner *r, const uint8_t *w, size_t n);
void ccr_apply_writes(uint8_t *pool, const uint8_t *w, size_t n);
int ccr_patch_base(struct runner *r, const uint8_t *w, size_t n);

/* child.c */
int ccr_child_setup(struct runner *r, size_t page);
void ccr_child_teardown(struct runner *r, size_t page);
void ccr_child_handlers_install(struct runner *r);
void ccr_child_handlers_restore(void);
int ccr_child_run(struct runner *r, const uint8_t *writes, size_t wlen, const char *followup,
		  struct ccr_end *end, char *why, size_t whylen);
void ccr_child_limits(struct runner *r, size_t vm_bytes, unsigned cpu_extra);
void ccr_child_probe_oom(void);
void ccr_child_reset(void);
int ccr_child_rearm(struct runner *r);
int ccr_same_sigset(const sigset_t *a, const sigset_t *b);
void ccr_child_end(struct runner *r, int status, int timed_out, double cpu, struct ccr_end *end);

/* worker_control.c: one reused process checks state after state, restored in between (worker.h) */
#define CCR_WORKER_BATCH 128   /* states handed to the worker at once, at most */
int ccr_worker_run(struct runner *r, const struct ccr_job *jobs, int n, struct ccr_end *ends);
void ccr_worker_stop(struct runner *r);

/* lazy.c: lazy exploration (LAZY requests) */
int ccr_lazy_supported(void);
const char *ccr_lazy_parse(struct runner *r, const uint8_t *spec, size_t n);
const char *ccr_lazy_store(struct runner *r, const uint8_t *body, size_t n);
void ccr_lazy_child_begin(void);
int ccr_lazy_worker_ok(void);
const uint8_t *ccr_lazy_decisions(uint32_t *ndec);
int ccr_lazy_worker_begin(const uint8_t *dec, uint32_t ndec);
void ccr_lazy_reads_on(void);
void ccr_lazy_reset_log(void);
void ccr_lazy_setup(struct runner *r);
void ccr_lazy_teardown(struct runner *r);
int ccr_lazy_groups(void);
int ccr_lazy_active(void);
void ccr_lazy_end(void);
int ccr_lazy_answer(struct runner *r, struct buf *a);

/* answer.c */
int ccr_answer_state(struct runner *r, uint64_t id, const struct ccr_end *end);
void ccr_answers_forget(struct runner *r);
int ccr_send_answer(struct runner *r);
int ccr_send_ack(struct runner *r, const char *what, uint64_t id);
int ccr_send_error(struct runner *r, uint64_t id, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int ccr_flush_answers(struct runner *r);

#endif /* CC_RUNNER_INTERNAL_H */
