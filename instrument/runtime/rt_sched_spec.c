/*
 * rt_sched_spec.c -- the schedule spec: $CRASHCHECK_SCHED (random:SEED,
 * pct:SEED:DEPTH[:STEPS], stale:SEED:PERIOD, aim:SEED:THREAD:SITE:NTH:OPS or
 * replay:FILE, with a replay's
 * schedule file), the limits of CRASHCHECK_SCHED_SPIN_LIMIT, _OP_STEPS,
 * _FAIR, _HANG_MS and _MAX_STEPS, a writer aim's prefix (CRASHCHECK_SCHED_PREFIX: a schedule
 * file replayed up to the aimed store), and the schedule file a run writes
 * (CRASHCHECK_SCHED_OUT); docs/scheduler.md.  Read once, at start-up
 * (rt_sched.c's constructor); a bad spec ends the run with exit 2.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt_sched.h"

static char strat_text[256];
static uint64_t pct_steps = 1000;
static uint64_t replay_fair;

static uint64_t env_u64(const char *name, uint64_t def)
{
	const char *v = getenv(name);
	return v && *v ? strtoull(v, NULL, 0) : def;
}

static void bad_spec(const char *why) __attribute__((noreturn));
static void bad_spec(const char *why)
{
	fprintf(stderr, "crashcheck: CRASHCHECK_SCHED=%s: %s (expected random:SEED, "
		"pct:SEED:DEPTH[:STEPS], stale:SEED:PERIOD, aim:SEED:THREAD:SITE:NTH:OPS or replay:FILE)\n", strat_text, why);
	exit(2);
}

/* parse_seed -- the strategy's SEED at P into rng_state; it must end at SEP (internal) */
static char *parse_seed(const char *p, char sep)
{
	char *end;
	ccs_rng_state = strtoull(p, &end, 0);
	if (end == p || *end != sep)
		bad_spec("the seed is not a number");
	return end;
}

/* load_replay -- read a schedule file: "STEP TID" lines, '#' comments (internal) */
static void load_replay(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "crashcheck: cannot read schedule %s: %s\n", path, strerror(errno));
		exit(2);
	}
	char line[256];
	size_t cap = 0;
	uint64_t last = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long step;
		int tid;
		/* the default rule depends on FAIR: a recorded run's value wins over the environment */
		if (sscanf(line, "# fair %llu", &step) == 1)
			replay_fair = step;
		/* steps are numbered as in the recorded run: with its loads as points or without
		 * (files written before the line existed name the strategy, stale's had them) */
		if (sscanf(line, "# load-points %llu", &step) == 1)
			ccs_load_points = step != 0;
		if (strncmp(line, "# strategy stale:", 17) == 0 || strncmp(line, "# strategy aim:", 15) == 0)
			ccs_load_points = 1;
		/* a writer aim's prefix ended there (rt_sched_strategy.c): loads are points after */
		if (sscanf(line, "# load-points-from %llu", &step) == 1)
			ccs_load_from = step;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (sscanf(line, "%llu %d", &step, &tid) != 2 || step <= last) {
			fprintf(stderr, "crashcheck: schedule %s: bad line (want increasing \"STEP THREAD\"): %s",
				path, line);
			exit(2);
		}
		last = step;
		if (ccs_nreplay == cap) {
			cap = cap ? cap * 2 : 64;
			ccs_replay = realloc(ccs_replay, cap * sizeof(*ccs_replay));
			if (!ccs_replay)
				abort();
		}
		ccs_replay[ccs_nreplay++] = (struct entry){ step, tid };
	}
	fclose(f);
	if (!ccs_replay)
		ccs_replay = calloc(1, sizeof(*ccs_replay));
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* ccs_read_spec -- the strategy and limits from SPEC ($CRASHCHECK_SCHED) and the environment */
void ccs_read_spec(const char *spec)
{
	snprintf(strat_text, sizeof(strat_text), "%s", spec);
	cc_real_init();
	if (strncmp(spec, "random:", 7) == 0) {
		ccs_strat = S_RANDOM;
		parse_seed(spec + 7, '\0');
	} else if (strncmp(spec, "pct:", 4) == 0) {
		ccs_strat = S_PCT;
		char *end = parse_seed(spec + 4, ':');
		ccs_pct_depth = (int)strtol(end + 1, &end, 0);
		if (ccs_pct_depth < 1 || ccs_pct_depth > 64 || (*end && *end != ':'))
			bad_spec("the depth must be 1 to 64");
		if (*end == ':') {
			pct_steps = strtoull(end + 1, &end, 0);
			if (pct_steps < 1 || *end)
				bad_spec("STEPS must be a positive number");
		}
	} else if (strncmp(spec, "stale:", 6) == 0) {
		ccs_strat = S_STALE;
		char *end = parse_seed(spec + 6, ':');
		ccs_stale_period = strtoull(end + 1, &end, 0);
		if (ccs_stale_period < 1 || *end)
			bad_spec("PERIOD must be a positive number");
		ccs_pct_depth = 1;   /* thread priorities as PCT's, above 1 */
		ccs_stale_top = INT64_MAX / 2;
	} else if (strncmp(spec, "aim:", 4) == 0) {
		/* aim:SEED:TID:SITE:NTH:OPS[:READER:RSITE] -- stale's priorities, no random parking, one
		 * aimed park; with READER:RSITE a writer aim (woken once READER loaded at RSITE and acted) */
		ccs_strat = S_STALE;
		char *end = parse_seed(spec + 4, ':');
		unsigned long long f[6] = {0};
		int nf = 0;
		for (; nf < 6; nf++) {
			char *p = end + 1;
			f[nf] = strtoull(p, &end, 0);
			if (end == p || (*end != ':' && *end != '\0'))
				bad_spec("aim takes SEED:THREAD:SITE:NTH:OPS[:READER:RSITE], all numbers");
			if (*end == '\0')
				break;
		}
		if (nf != 3 && nf != 5)
			bad_spec("aim takes SEED:THREAD:SITE:NTH:OPS[:READER:RSITE], all numbers");
		if (f[0] < 1 || f[0] > MAX_THREADS || f[1] > UINT32_MAX || f[2] < 1 || f[3] < 1 || f[3] > 1000)
			bad_spec("aim's THREAD, NTH and OPS must be positive (OPS at most 1000)");
		if (nf == 5 && (f[4] < 1 || f[4] > MAX_THREADS || f[4] == f[0] || f[5] > UINT32_MAX))
			bad_spec("aim's READER must be a positive thread other than THREAD");
		ccs_aim_reader = (int)f[4];
		ccs_aim_rsite = (uint32_t)f[5];
		ccs_aim_tid = (int)f[0];
		ccs_aim_site = (uint32_t)f[1];
		ccs_aim_nth = f[2];
		ccs_aim_ops = (int)f[3];
		ccs_stale_period = 0;
		ccs_pct_depth = 1;
		ccs_stale_top = INT64_MAX / 2;
		/* a writer aim's prefix: the checked run's schedule file, replayed (its steps counted
		 * as it counted them) until the writer's aimed store, so the store is reached in the
		 * state the candidate came from */
		const char *prefix = getenv("CRASHCHECK_SCHED_PREFIX");
		if (prefix && *prefix && ccs_aim_reader) {
			load_replay(prefix);
			ccs_aim_prefix = 1;
		}
	} else if (strncmp(spec, "replay:", 7) == 0) {
		ccs_strat = S_REPLAY;
		load_replay(spec + 7);
	} else {
		bad_spec("unknown strategy");
	}
	if (ccs_strat == S_STALE && !ccs_aim_prefix)
		ccs_load_points = 1;
	ccs_spin_limit = env_u64("CRASHCHECK_SCHED_SPIN_LIMIT", ccs_spin_limit);
	ccs_op_limit = env_u64("CRASHCHECK_SCHED_OP_STEPS", ccs_op_limit);
	ccs_fair_limit = env_u64("CRASHCHECK_SCHED_FAIR", ccs_fair_limit);
	if (replay_fair)
		ccs_fair_limit = replay_fair;
	ccs_hang_ms = env_u64("CRASHCHECK_SCHED_HANG_MS", ccs_hang_ms);
	ccs_max_steps = env_u64("CRASHCHECK_SCHED_MAX_STEPS", ccs_max_steps);
	if (ccs_strat == S_PCT) {
		/* the d-1 priority change points, uniform over the first STEPS steps */
		ccs_pct_changes = calloc((size_t)ccs_pct_depth, sizeof(uint64_t));
		for (int i = 0; i < ccs_pct_depth - 1; i++)
			ccs_pct_changes[i] = 1 + ccs_below(pct_steps);
		qsort(ccs_pct_changes, (size_t)(ccs_pct_depth > 1 ? ccs_pct_depth - 1 : 0), sizeof(uint64_t), cmp_u64);
	}
	const char *out = getenv("CRASHCHECK_SCHED_OUT");
	if (out && *out) {
		ccs_out_fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (ccs_out_fd < 0) {
			fprintf(stderr, "crashcheck: cannot create schedule file %s: %s\n", out, strerror(errno));
			exit(2);
		}
		ccs_out_line("# crashcheck-schedule 1\n# strategy %s\n# fair %llu\n# load-points %d\n",
			 strat_text, (unsigned long long)ccs_fair_limit, ccs_load_points);
	}
}
