/* Unit tests of runtime/common/slow.c on synthetic step-time series: the
 * per-interval value of a node is built the way a node builds it (the
 * median of its steps, or the steps at which it arrived last), from
 * step-level noise of a seeded generator, so the noise the detector sees is
 * the noise it would see. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/slow.h"

#define NODES_MAX 16
#define STEPS 20 /* steps per interval */

static uint64_t rng_state;

static double uniform(void) /* [0, 1) */
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (double)(rng_state >> 11) / (double)(1ull << 53);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* A node's median compute time over STEPS steps of base_ms * slow, each
 * step off by up to +-noise (uniform), and now and then (1 step in 50) a
 * pause of 5x (a garbage collection, a page fault storm). */
static double interval_median(double base_ms, double slow, double noise)
{
	double v[STEPS];
	for (int k = 0; k < STEPS; k++) {
		v[k] = base_ms * slow * (1 + noise * (2 * uniform() - 1));
		if (uniform() < 0.02)
			v[k] *= 5;
	}
	qsort(v, STEPS, sizeof(v[0]), cmp);
	return (v[STEPS / 2 - 1] + v[STEPS / 2]) / 2;
}

struct run {
	struct pm_slow d;
	struct pm_slow_verdict v[4 * NODES_MAX];
	size_t nv;
	int first_flag_at[NODES_MAX]; /* interval of the first FLAGGED, -1 */
	int flags[NODES_MAX], clears[NODES_MAX];
};

static void run_init(struct run *r, uint32_t nodes, const struct pm_slow_cfg *cfg)
{
	char err[128];
	struct pm_slow_cfg def;

	memset(r, 0, sizeof(*r));
	if (!cfg) {
		pm_slow_cfg_default(&def);
		cfg = &def;
	}
	assert_int_equal(pm_slow_init(&r->d, cfg, nodes, err, sizeof(err)), 0);
	for (int i = 0; i < NODES_MAX; i++)
		r->first_flag_at[i] = -1;
}

static void run_feed(struct run *r, const struct pm_slow_sample *s, int interval)
{
	struct pm_slow_verdict v[NODES_MAX];
	size_t n = pm_slow_feed(&r->d, s, v, NODES_MAX);

	for (size_t k = 0; k < n; k++) {
		assert_true(v[k].node < r->d.nodes);
		if (v[k].change == PM_SLOW_FLAGGED) {
			r->flags[v[k].node]++;
			if (r->first_flag_at[v[k].node] < 0)
				r->first_flag_at[v[k].node] = interval;
		} else {
			r->clears[v[k].node]++;
		}
		if (r->nv < sizeof(r->v) / sizeof(r->v[0]))
			r->v[r->nv++] = v[k];
	}
}

/* intervals of a COMPUTE job; slow(node, interval) gives the factor. */
static void run_compute(struct run *r, uint32_t nodes, int intervals, double noise,
			double (*slow)(uint32_t, int))
{
	for (int t = 0; t < intervals; t++) {
		struct pm_slow_sample s[NODES_MAX];
		/* Every node slows together now and then (a shared filesystem
		 * stall): common to all, never a culprit. */
		double common = uniform() < 0.1 ? 1.8 : 1.0;
		for (uint32_t i = 0; i < nodes; i++)
			s[i] = (struct pm_slow_sample){ .kind = PM_SLOW_COMPUTE,
							.compute_ms = interval_median(100 * common, slow(i, t), noise),
							.steps = STEPS };
		run_feed(r, s, t);
	}
}

static double none_slow(uint32_t node, int t) { (void)node; (void)t; return 1.0; }

static void test_steady_job_never_flagged(void **state)
{
	struct run r;
	(void)state;
	rng_state = 1;
	run_init(&r, 8, NULL);
	run_compute(&r, 8, 200, 0.0, none_slow);
	assert_int_equal(r.nv, 0);
	pm_slow_free(&r.d);
}

/* The false-alarm test: all nodes equally noisy (+-30% per step, pauses,
 * common stalls), 50 seeds x 300 intervals x 2, 4 and 8 nodes. */
static void test_noisy_job_without_culprit_never_flagged(void **state)
{
	static const uint32_t sizes[] = { 2, 4, 8 };
	(void)state;
	for (unsigned z = 0; z < 3; z++)
		for (uint64_t seed = 1; seed <= 50; seed++) {
			struct run r;
			rng_state = seed * 7919;
			run_init(&r, sizes[z], NULL);
			run_compute(&r, sizes[z], 300, 0.3, none_slow);
			assert_int_equal(r.nv, 0);
			pm_slow_free(&r.d);
		}
}

static double node5_from_10(uint32_t node, int t) { return node == 5 && t >= 10 ? 1.5 : 1.0; }

/* One node 50% slower from interval 10: flagged once, naming it, as soon
 * as `need` intervals show it, with its ratio. */
static void test_one_slow_node_flagged(void **state)
{
	struct run r;
	(void)state;
	rng_state = 3;
	run_init(&r, 8, NULL);
	run_compute(&r, 8, 60, 0.3, node5_from_10);
	assert_int_equal(r.nv, 1);
	assert_int_equal(r.v[0].node, 5);
	assert_int_equal(r.v[0].change, PM_SLOW_FLAGGED);
	assert_int_equal(r.v[0].kind, PM_SLOW_COMPUTE);
	assert_true(r.v[0].ratio > 1.3 && r.v[0].ratio < 1.7);
	assert_true(r.first_flag_at[5] >= 10 + 5 - 1 && r.first_flag_at[5] <= 10 + 6);
	assert_true(pm_slow_is_flagged(&r.d, 5));
	assert_false(pm_slow_is_flagged(&r.d, 4));
	pm_slow_free(&r.d);
}

static double node2_20pct(uint32_t node, int t) { return node == 2 && t >= 5 ? 1.3 : 1.0; }

/* 30% slower with +-30% step noise is still found: the median over 20
 * steps is steady. */
static void test_thirty_percent_found_in_noise(void **state)
{
	struct run r;
	(void)state;
	rng_state = 11;
	run_init(&r, 4, NULL);
	run_compute(&r, 4, 40, 0.3, node2_20pct);
	assert_int_equal(r.flags[2], 1);
	for (int i = 0; i < 4; i++)
		if (i != 2)
			assert_int_equal(r.flags[i], 0);
	pm_slow_free(&r.d);
}

static double node1_blip(uint32_t node, int t) { return node == 1 && (t == 20 || t == 21) ? 2.0 : 1.0; }

/* Slow for two intervals only (a short burst): no verdict. */
static void test_short_slowdown_not_flagged(void **state)
{
	struct run r;
	(void)state;
	rng_state = 5;
	run_init(&r, 8, NULL);
	run_compute(&r, 8, 60, 0.3, node1_blip);
	assert_int_equal(r.nv, 0);
	pm_slow_free(&r.d);
}

static double two_slow(uint32_t node, int t) { (void)t; return node == 0 || node == 2 ? 1.6 : 1.0; }

/* Two slow nodes of 8, and two of 4 (half: the lower median is still a
 * healthy node): both found. */
static void test_two_slow_nodes_flagged(void **state)
{
	static const uint32_t sizes[] = { 8, 4 };
	(void)state;
	for (unsigned z = 0; z < 2; z++) {
		struct run r;
		rng_state = 17;
		run_init(&r, sizes[z], NULL);
		run_compute(&r, sizes[z], 30, 0.3, two_slow);
		assert_int_equal(r.flags[0], 1);
		assert_int_equal(r.flags[2], 1);
		for (uint32_t i = 1; i < sizes[z]; i++)
			if (i != 2)
				assert_int_equal(r.flags[i], 0);
		pm_slow_free(&r.d);
	}
}

static double node3_recovers(uint32_t node, int t) { return node == 3 && t >= 10 && t < 40 ? 2.0 : 1.0; }

/* Slow, then back to normal: one FLAGGED, one CLEARED, in that order. */
static void test_recovered_node_cleared_once(void **state)
{
	struct run r;
	(void)state;
	rng_state = 23;
	run_init(&r, 8, NULL);
	run_compute(&r, 8, 100, 0.3, node3_recovers);
	assert_int_equal(r.nv, 2);
	assert_int_equal(r.v[0].change, PM_SLOW_FLAGGED);
	assert_int_equal(r.v[1].change, PM_SLOW_CLEARED);
	assert_int_equal(r.v[1].node, 3);
	assert_false(pm_slow_is_flagged(&r.d, 3));
	pm_slow_free(&r.d);
}

static double node4_borderline(uint32_t node, int t)
{
	if (node != 4 || t < 10)
		return 1.0;
	if (t < 20)
		return 1.6;
	/* hovers around the threshold: some windows have 3 intervals under
	 * it, some only 1 */
	return t % 8 < 5 ? 1.3 : 1.15;
}

/* A node hovering around the threshold after being flagged is reported
 * once, not at every window. */
static void test_no_flapping(void **state)
{
	struct run r;
	(void)state;
	rng_state = 29;
	run_init(&r, 8, NULL);
	run_compute(&r, 8, 200, 0.05, node4_borderline);
	assert_int_equal(r.flags[4], 1);
	assert_int_equal(r.clears[4], 0);
	pm_slow_free(&r.d);
}

/* A lost node's history goes with it: the spare in its place starts
 * clean, and a reset node is no longer flagged. */
static void test_reset_node(void **state)
{
	struct run r;
	(void)state;
	rng_state = 31;
	run_init(&r, 8, NULL);
	run_compute(&r, 8, 30, 0.3, node5_from_10);
	assert_true(pm_slow_is_flagged(&r.d, 5));
	pm_slow_reset_node(&r.d, 5);
	assert_false(pm_slow_is_flagged(&r.d, 5));
	r.nv = 0;
	run_compute(&r, 8, 3, 0.3, node5_from_10); /* fewer than need: no verdict yet */
	assert_int_equal(r.nv, 0);
	pm_slow_reset_node(&r.d, 99); /* out of range: ignored */
	pm_slow_free(&r.d);
}

/* Nodes without data, or with too few steps, are not judged; one node
 * with data has nothing to be compared with. */
static void test_no_data_no_verdict(void **state)
{
	struct run r;
	struct pm_slow_sample s[3] = {
		{ .kind = PM_SLOW_COMPUTE, .compute_ms = 500, .steps = STEPS },
		{ .kind = PM_SLOW_NONE },
		{ .kind = PM_SLOW_COMPUTE, .compute_ms = 100, .steps = 2 },
	};
	(void)state;
	run_init(&r, 3, NULL);
	for (int t = 0; t < 30; t++)
		run_feed(&r, s, t);
	assert_int_equal(r.nv, 0);
	pm_slow_free(&r.d);
}

/* Three nodes, one of them without data in every interval (a summary
 * late, a rank still starting): the other two are no majority, and the
 * slower of them is not judged against the faster. */
static void test_two_of_three_not_judged(void **state)
{
	struct run r;
	struct pm_slow_sample s[3];
	(void)state;
	run_init(&r, 3, NULL);
	for (int t = 0; t < 30; t++) {
		for (int i = 0; i < 3; i++)
			s[i] = (struct pm_slow_sample){ .kind = PM_SLOW_COMPUTE, .steps = STEPS,
							.compute_ms = i == 2 ? 200 : 100 };
		s[t % 2].kind = PM_SLOW_NONE;
		run_feed(&r, s, t);
	}
	assert_int_equal(r.nv, 0);
	/* With all three, node 2 is found (the detector is not simply off). */
	for (int t = 30; t < 40; t++) {
		for (int i = 0; i < 3; i++)
			s[i] = (struct pm_slow_sample){ .kind = PM_SLOW_COMPUTE, .steps = STEPS,
							.compute_ms = i == 2 ? 200 : 100 };
		run_feed(&r, s, t);
	}
	assert_int_equal(r.nv, 1);
	assert_int_equal(r.flags[2], 1);
	pm_slow_free(&r.d);
}

/* PHASE evidence: per-step arrivals merged up a tree. Node 3 arrives 8 ms
 * late at share `late` of the steps; the others within 0-5 ms of noise. */
static void run_phase(struct run *r, uint32_t nodes, int intervals, double late)
{
	for (int t = 0; t < intervals; t++) {
		struct pm_slow_sample s[NODES_MAX];
		for (uint32_t i = 0; i < nodes; i++)
			s[i] = (struct pm_slow_sample){ .kind = PM_SLOW_PHASE, .steps = STEPS };
		for (int k = 0; k < STEPS; k++) {
			uint64_t step = (uint64_t)t * STEPS + (uint64_t)k;
			uint64_t base = 1000000 + step * 100;
			struct pm_slow_arrival a[NODES_MAX];
			for (uint32_t i = 0; i < nodes; i++) {
				uint64_t at = base + (uint64_t)(uniform() * 5);
				if (i == 3 && uniform() < late)
					at += 8;
				pm_slow_arrival_init(&a[i], step, i, at);
			}
			/* a binary tree: node i's parent (i-1)/2, merged leaves up */
			for (uint32_t i = nodes - 1; i > 0; i--)
				pm_slow_arrival_merge(&a[(i - 1) / 2], &a[i]);
			long c = pm_slow_arrival_culprit(&a[0], 1);
			if (c >= 0)
				s[c].last++;
		}
		run_feed(r, s, t);
	}
}

static void test_phase_culprit_flagged(void **state)
{
	struct run r;
	(void)state;
	rng_state = 37;
	run_init(&r, 8, NULL);
	run_phase(&r, 8, 20, 0.95);
	assert_int_equal(r.flags[3], 1);
	assert_int_equal(r.v[0].kind, PM_SLOW_PHASE);
	for (int i = 0; i < 8; i++)
		if (i != 3)
			assert_int_equal(r.flags[i], 0);
	pm_slow_free(&r.d);
}

static void test_phase_without_culprit_never_flagged(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 30; seed++) {
		struct run r;
		rng_state = seed * 104729;
		run_init(&r, 4, NULL);
		run_phase(&r, 4, 200, 0.0);
		assert_int_equal(r.nv, 0);
		pm_slow_free(&r.d);
	}
}

static void test_arrival_merge(void **state)
{
	struct pm_slow_arrival a, b, none = { 0 };
	(void)state;

	pm_slow_arrival_init(&a, 7, 1, 100);
	pm_slow_arrival_init(&b, 7, 2, 110);
	pm_slow_arrival_merge(&a, &b);
	assert_int_equal(a.last_node, 2);
	assert_int_equal(a.last_ms, 110);
	assert_int_equal(a.second_ms, 100);
	assert_int_equal(pm_slow_arrival_culprit(&a, 5), 2);
	assert_int_equal(pm_slow_arrival_culprit(&a, 10), -1); /* within resolution */

	pm_slow_arrival_init(&b, 7, 3, 105); /* between: the second moves up */
	pm_slow_arrival_merge(&a, &b);
	assert_int_equal(a.last_node, 2);
	assert_int_equal(a.second_ms, 105);
	assert_int_equal(pm_slow_arrival_culprit(&a, 5), -1);

	pm_slow_arrival_init(&b, 7, 4, 110); /* a tie for last: no culprit */
	pm_slow_arrival_merge(&a, &b);
	assert_int_equal(pm_slow_arrival_culprit(&a, 0), -1);

	pm_slow_arrival_merge(&a, &none); /* an empty subtree changes nothing */
	assert_int_equal(a.last_ms, 110);

	pm_slow_arrival_init(&a, 7, 1, 50); /* alone: nobody to be last of */
	assert_int_equal(pm_slow_arrival_culprit(&a, 0), -1);
}

static void test_cfg_refusals(void **state)
{
	struct pm_slow_cfg c;
	struct pm_slow d;
	char err[160];
	(void)state;

	pm_slow_cfg_default(&c);
	assert_int_equal(pm_slow_cfg_check(&c, err, sizeof(err)), 0);
	c.threshold = 0;
	assert_int_equal(pm_slow_cfg_check(&c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "must be above 0"));
	pm_slow_cfg_default(&c);
	c.phase_share = 0.5;
	assert_int_equal(pm_slow_init(&d, &c, 4, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "above 0.5"));
	pm_slow_cfg_default(&c);
	c.window = PM_SLOW_MAX_WINDOW + 1;
	assert_int_equal(pm_slow_cfg_check(&c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "from 1 to 32"));
	pm_slow_cfg_default(&c);
	c.need = 7;
	assert_int_equal(pm_slow_cfg_check(&c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "to the window (6)"));
	pm_slow_cfg_default(&c);
	c.min_steps = 0;
	assert_int_equal(pm_slow_cfg_check(&c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "at least 1 step"));
}

/* A slow job (a step a second) gives few steps per interval: compute
 * medians of 3 steps count, of 2 do not; phase shares need 10. */
static void test_min_compute_steps(void **state)
{
	struct pm_slow d;
	struct pm_slow_cfg c;
	struct pm_slow_sample s[3];
	struct pm_slow_verdict v[3];
	char err[128];
	size_t n = 0;
	(void)state;

	pm_slow_cfg_default(&c);
	assert_int_equal(c.min_compute_steps, 3);
	assert_int_equal(pm_slow_init(&d, &c, 3, err, sizeof(err)), 0);
	for (int k = 0; k < 10; k++) {
		for (int i = 0; i < 3; i++)
			s[i] = (struct pm_slow_sample){ .kind = PM_SLOW_COMPUTE, .steps = 2,
							.compute_ms = i == 1 ? 300 : 100 };
		assert_int_equal(pm_slow_feed(&d, s, v, 3), 0);
	}
	for (int k = 0; k < 10 && !n; k++) {
		for (int i = 0; i < 3; i++)
			s[i].steps = 3;
		n = pm_slow_feed(&d, s, v, 3);
	}
	assert_int_equal(n, 1);
	assert_int_equal(v[0].node, 1);
	assert_int_equal(v[0].kind, PM_SLOW_COMPUTE);
	pm_slow_free(&d);
	c.min_compute_steps = 0;
	assert_int_equal(pm_slow_cfg_check(&c, err, sizeof(err)), -1);
}

static void test_describe(void **state)
{
	char buf[256];
	struct pm_slow_verdict v = { .node = 5, .change = PM_SLOW_FLAGGED, .kind = PM_SLOW_COMPUTE,
				     .ratio = 1.52, .slow = 5, .of = 6 };
	(void)state;

	pm_slow_describe(&v, buf, sizeof(buf));
	assert_non_null(strstr(buf, "node 5 is slow"));
	assert_non_null(strstr(buf, "1.52x"));
	assert_non_null(strstr(buf, "5 of 6 intervals"));
	assert_non_null(strstr(buf, "evidence: compute time"));
	v.kind = PM_SLOW_PHASE;
	v.change = PM_SLOW_CLEARED;
	v.ratio = 0.9;
	pm_slow_describe(&v, buf, sizeof(buf));
	assert_non_null(strstr(buf, "no longer slow"));
	assert_non_null(strstr(buf, "90% of the steps"));
	assert_non_null(strstr(buf, "heartbeat phase"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_steady_job_never_flagged),
		cmocka_unit_test(test_noisy_job_without_culprit_never_flagged),
		cmocka_unit_test(test_one_slow_node_flagged),
		cmocka_unit_test(test_thirty_percent_found_in_noise),
		cmocka_unit_test(test_short_slowdown_not_flagged),
		cmocka_unit_test(test_two_slow_nodes_flagged),
		cmocka_unit_test(test_two_of_three_not_judged),
		cmocka_unit_test(test_recovered_node_cleared_once),
		cmocka_unit_test(test_no_flapping),
		cmocka_unit_test(test_reset_node),
		cmocka_unit_test(test_no_data_no_verdict),
		cmocka_unit_test(test_phase_culprit_flagged),
		cmocka_unit_test(test_phase_without_culprit_never_flagged),
		cmocka_unit_test(test_arrival_merge),
		cmocka_unit_test(test_cfg_refusals),
		cmocka_unit_test(test_describe),
		cmocka_unit_test(test_min_compute_steps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
