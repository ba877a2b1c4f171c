/* The slow-node detector on synthetic jobs: detection time and accuracy
 * for a node slowed by a factor, and the false alarms of jobs with no
 * culprit. Each node's interval value is the median of its steps, each step
 * off by up to +-NOISE, with a 5x pause in 1 step of 50 and, 1 interval in
 * 10, a stall common to every node: the noise this 2-core machine showed
 * is smaller. Decision cost only: the real signal's path (heartbeats, the
 * tree) is not in it.
 *
 *   bench_slow [-r RUNS] [-i INTERVAL_S] [-n NODES]                      */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/slow.h"

#define STEPS 20
#define NOISE 0.3

static unsigned long long rng;

static double uniform(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (double)(rng >> 11) / (double)(1ull << 53);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

static double interval_median(double base)
{
	double v[STEPS];
	for (int k = 0; k < STEPS; k++) {
		v[k] = base * (1 + NOISE * (2 * uniform() - 1));
		if (uniform() < 0.02)
			v[k] *= 5;
	}
	qsort(v, STEPS, sizeof(v[0]), cmp);
	return (v[STEPS / 2 - 1] + v[STEPS / 2]) / 2;
}

/* Intervals until the culprit (node 1) is flagged after its slowdown
 * starts at interval 10, or -1 within `intervals`; *wrong: another node
 * flagged. */
static int one_run(unsigned nodes, double factor, int intervals, int *wrong)
{
	struct pm_slow d;
	struct pm_slow_cfg cfg;
	struct pm_slow_sample s[1024];
	struct pm_slow_verdict v[1024];
	char err[128];
	int found = -1;

	pm_slow_cfg_default(&cfg);
	if (pm_slow_init(&d, &cfg, nodes, err, sizeof(err)) < 0) {
		fprintf(stderr, "bench_slow: %s\n", err);
		exit(1);
	}
	*wrong = 0;
	for (int t = 0; t < intervals; t++) {
		double common = uniform() < 0.1 ? 1.8 : 1.0;
		for (unsigned i = 0; i < nodes; i++) {
			double f = i == 1 && t >= 10 ? factor : 1.0;
			s[i] = (struct pm_slow_sample){ .kind = PM_SLOW_COMPUTE,
							.compute_ms = interval_median(100 * common * f),
							.steps = STEPS };
		}
		size_t n = pm_slow_feed(&d, s, v, 1024);
		for (size_t k = 0; k < n; k++) {
			if (v[k].change != PM_SLOW_FLAGGED)
				continue;
			if (v[k].node == 1 && factor > 1 && found < 0)
				found = t - 10 + 1;
			else if (v[k].node != 1 || factor <= 1)
				(*wrong)++;
		}
	}
	pm_slow_free(&d);
	return found;
}

int main(int argc, char **argv)
{
	static const double factors[] = { 1.1, 1.2, 1.3, 1.5, 2.0 };
	int runs = 200, opt, times[10000];
	double interval_s = 5;
	unsigned nodes = 8;

	while ((opt = getopt(argc, argv, "r:i:n:")) != -1) {
		if (opt == 'r')
			runs = atoi(optarg);
		else if (opt == 'i')
			interval_s = atof(optarg);
		else if (opt == 'n')
			nodes = (unsigned)atoi(optarg);
		else
			return 2;
	}
	if (runs < 1 || runs > 10000 || nodes < 2 || nodes > 1024 || interval_s <= 0) {
		fprintf(stderr, "bench_slow: -r 1..10000, -n 2..1024, -i > 0\n");
		return 2;
	}
	printf("nodes %u, interval %.0f s, %d runs each, step noise +-%.0f%%, window 6, need 5, threshold 20%%\n",
	       nodes, interval_s, runs, NOISE * 100);
	printf("%-8s %-10s %-14s %-14s %s\n", "slowdown", "detected", "median_s", "max_s", "wrong_node");
	for (unsigned f = 0; f < sizeof(factors) / sizeof(factors[0]); f++) {
		int n = 0, wrong_total = 0;
		rng = 12345 + f;
		for (int r = 0; r < runs; r++) {
			int wrong, t = one_run(nodes, factors[f], 70, &wrong);
			wrong_total += wrong;
			if (t > 0)
				times[n++] = t;
		}
		qsort(times, (size_t)n, sizeof(times[0]), cmp_int);
		printf("%-8.1fx %4d/%-5d %-14.0f %-14.0f %d\n", factors[f], n, runs,
		       n ? times[n / 2] * interval_s : -1, n ? times[n - 1] * interval_s : -1, wrong_total);
	}
	{
		int alarms = 0, wrong;
		rng = 999;
		for (int r = 0; r < runs * 5; r++) {
			one_run(nodes, 1.0, 360, &wrong);
			alarms += wrong > 0;
		}
		printf("no culprit: %d of %d runs of %.0f min with a false alarm\n", alarms, runs * 5,
		       360 * interval_s / 60);
	}
	return 0;
}
