/* pm-sweep-sim: how many trial starts per second the sweep's decisions
 * (runtime/sweep: the queue and the packer, the real code) can make. A
 * simulated clock runs every trial for a short set time; at each end the
 * queue is told and asked what to start. Nothing is started for real and no
 * message is sent: the figure is the decision cost alone, an upper bound on
 * a sweep's start rate, not the rate of a sweep on a cluster.
 *
 *   pm-sweep-sim [--nodes N] [--slots S] [--trials T] [--ranks 1,2,6]
 *                [--fail-pct P] [--reps R] [--seed X]
 *
 * Defaults: 1250 nodes x 8 slots (10,000 slots), 100,000 one-rank trials
 * of 1.000..7.999 s (simulated, 1 ms steps), no failures, 5 repetitions. With --fail-pct a run
 * fails with that chance and the policy is on-failure:3 with no delay.
 * One JSON line per repetition, then the median on a line of its own.
 * slot_use: the slots' busy time over slots x the simulated span, how well
 * the packing kept them full (the last trials' tail included). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sweep/sweep_queue.h"

struct heap {
	int n, *idx;
	uint64_t *key;
};

static void heap_push(struct heap *h, int i, uint64_t key)
{
	int c = h->n++;

	while (c > 0 && h->key[(c - 1) / 2] > key) {
		h->key[c] = h->key[(c - 1) / 2];
		h->idx[c] = h->idx[(c - 1) / 2];
		c = (c - 1) / 2;
	}
	h->key[c] = key;
	h->idx[c] = i;
}

static int heap_pop(struct heap *h, uint64_t *key)
{
	int top = h->idx[0], c = 0, last = --h->n;
	uint64_t lk = h->key[last];

	*key = h->key[0];
	for (;;) {
		int k = 2 * c + 1;

		if (k >= h->n)
			break;
		if (k + 1 < h->n && h->key[k + 1] < h->key[k])
			k++;
		if (h->key[k] >= lk)
			break;
		h->key[c] = h->key[k];
		h->idx[c] = h->idx[k];
		c = k;
	}
	h->key[c] = lk;
	h->idx[c] = h->idx[last];
	return top;
}

static double now_s(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t xr(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

struct result {
	long starts, decisions;
	double wall_s, cpu_s, sim_s, busy; /* busy: slot-ms in use, for the packing's use */
	int done, failed;
};

static int run(int nodes, int slots, int trials, const int *mix, int nmix, int fail_pct,
	       struct result *res)
{
	struct pm_sq_cfg cfg = { 0 };
	struct pm_sq q;
	struct heap h;
	int *ranks = malloc(trials * sizeof(int)), *start, i, n, k;
	uint64_t now = 0, key;
	char err[256];
	double w0, c0;

	cfg.nodes = nodes;
	cfg.slots_per_node = slots;
	cfg.policy.mode = fail_pct ? PM_RESTART_ON_FAILURE : PM_RESTART_NEVER;
	cfg.policy.max_restarts = fail_pct ? 3 : 0;
	cfg.port_first = 1024;
	cfg.port_count = nodes * slots < 64000 ? nodes * slots : 64000;
	for (i = 0; i < trials; i++)
		ranks[i] = mix[i % nmix];
	if (pm_sq_init(&q, &cfg, ranks, trials, err, sizeof(err))) {
		fprintf(stderr, "pm-sweep-sim: %s\n", err);
		return -1;
	}
	memset(res, 0, sizeof(*res));
	h.n = 0;
	h.idx = malloc(trials * sizeof(int));
	h.key = malloc(trials * sizeof(uint64_t));
	start = malloc((size_t)nodes * slots * sizeof(int));
	w0 = now_s(CLOCK_MONOTONIC);
	c0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
	for (;;) {
		n = pm_sq_schedule(&q, now, start, nodes * slots);
		res->decisions++;
		for (k = 0; k < n; k++) {
			uint64_t d = 1000 + xr() % 7000;

			pm_sq_started(&q, start[k], now);
			heap_push(&h, start[k], now + d);
			res->busy += (double)d * q.t[start[k]].ranks;
		}
		res->starts += n;
		if (!h.n)
			break;
		i = heap_pop(&h, &key);
		now = key;
		{
			bool failed = fail_pct && (int)(xr() % 100) < fail_pct;

			pm_sq_ended(&q, i, failed, failed, NULL, now, NULL);
		}
		/* Ends at the same instant are told before asking what to start. */
		while (h.n && h.key[0] == now) {
			bool failed = fail_pct && (int)(xr() % 100) < fail_pct;

			i = heap_pop(&h, &key);
			pm_sq_ended(&q, i, failed, failed, NULL, now, NULL);
		}
	}
	res->wall_s = now_s(CLOCK_MONOTONIC) - w0;
	res->cpu_s = now_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
	res->sim_s = now / 1e3;
	res->done = q.count[PM_TS_DONE];
	res->failed = q.count[PM_TS_FAILED];
	if (!pm_sq_finished(&q))
		fprintf(stderr, "pm-sweep-sim: the sweep did not finish\n");
	pm_sq_free(&q);
	free(ranks);
	free(h.idx);
	free(h.key);
	free(start);
	return res->done + res->failed == trials ? 0 : -1;
}

static double now_ms_of(const struct result *r)
{
	return r->sim_s * 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int nodes = 1250, slots = 8, trials = 100000, fail_pct = 0, reps = 5, mix[16], nmix = 1;
	static const struct option lo[] = {
		{ "nodes", 1, 0, 'n' }, { "slots", 1, 0, 's' }, { "trials", 1, 0, 't' },
		{ "ranks", 1, 0, 'r' }, { "fail-pct", 1, 0, 'f' }, { "reps", 1, 0, 'R' },
		{ "seed", 1, 0, 'x' }, { "help", 0, 0, 'h' }, { 0, 0, 0, 0 },
	};
	double *rate, *cpu_rate;
	char *tok, *save;
	int c, r;

	mix[0] = 1;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1)
		switch (c) {
		case 'n': nodes = atoi(optarg); break;
		case 's': slots = atoi(optarg); break;
		case 't': trials = atoi(optarg); break;
		case 'f': fail_pct = atoi(optarg); break;
		case 'R': reps = atoi(optarg); break;
		case 'x': rng = strtoull(optarg, NULL, 0) | 1; break;
		case 'r':
			for (nmix = 0, tok = strtok_r(optarg, ",", &save); tok && nmix < 16;
			     tok = strtok_r(NULL, ",", &save))
				mix[nmix++] = atoi(tok);
			break;
		default:
			fprintf(stderr, "usage: pm-sweep-sim [--nodes N] [--slots S] [--trials T] "
				"[--ranks 1,2,6] [--fail-pct P] [--reps R] [--seed X]\n");
			return c == 'h' ? 0 : 2;
		}
	if (nodes < 1 || slots < 1 || trials < 1 || reps < 1 || nmix < 1 || fail_pct < 0 ||
	    fail_pct > 100) {
		fprintf(stderr, "pm-sweep-sim: sizes are positive, --fail-pct 0..100\n");
		return 2;
	}
	rate = calloc(reps, sizeof(double));
	cpu_rate = calloc(reps, sizeof(double));
	for (r = 0; r < reps; r++) {
		struct result res;

		if (run(nodes, slots, trials, mix, nmix, fail_pct, &res))
			return 1;
		rate[r] = res.starts / res.wall_s;
		cpu_rate[r] = res.starts / res.cpu_s;
		printf("{\"nodes\":%d,\"slots\":%d,\"trials\":%d,\"ranks\":\"", nodes, slots, trials);
		for (c = 0; c < nmix; c++)
			printf("%s%d", c ? "," : "", mix[c]);
		printf("\",\"fail_pct\":%d,\"starts\":%ld,\"schedule_calls\":%ld,\"done\":%d,"
		       "\"failed\":%d,\"wall_s\":%.4f,\"cpu_s\":%.4f,\"sim_s\":%.3f,"
		       "\"slot_use\":%.3f,\"starts_per_s\":%.0f,\"starts_per_cpu_s\":%.0f,\"ns_per_start\":%.0f}\n",
		       fail_pct, res.starts, res.decisions, res.done, res.failed, res.wall_s,
		       res.cpu_s, res.sim_s, res.busy / ((double)nodes * slots * now_ms_of(&res)),
		       rate[r], res.starts / res.cpu_s,
		       res.wall_s * 1e9 / res.starts);
	}
	qsort(rate, reps, sizeof(double), cmp);
	qsort(cpu_rate, reps, sizeof(double), cmp);
	printf("median starts_per_s %.0f (min %.0f, max %.0f), per CPU second %.0f (min %.0f), "
	       "%d reps\n", rate[reps / 2], rate[0], rate[reps - 1], cpu_rate[reps / 2],
	       cpu_rate[0], reps);
	free(rate);
	free(cpu_rate);
	return 0;
}
