/* Unit tests of runtime/common/slowsum.c: the heartbeat's text, a node's
 * summary of its ranks, the summaries merged up a tree and the root's
 * samples and verdicts, end to end on synthetic arrivals. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/slowsum.h"

static void test_beat_parse(void **state)
{
	uint64_t step;
	double c;
	(void)state;

	assert_int_equal(pm_beat_parse("12\n", &step, &c), 0);
	assert_int_equal(step, 12);
	assert_true(c < 0);
	assert_int_equal(pm_beat_parse(" 7 3.25\n", &step, &c), 0);
	assert_int_equal(step, 7);
	assert_true(c > 3.24 && c < 3.26);
	assert_int_equal(pm_beat_parse("0", &step, &c), 0);
	assert_int_equal(step, 0);
	assert_int_equal(pm_beat_parse("", &step, &c), -1);
	assert_int_equal(pm_beat_parse("x", &step, &c), -1);
	assert_int_equal(pm_beat_parse("-1", &step, &c), -1);
	assert_int_equal(pm_beat_parse("12 abc", &step, &c), -1);
	assert_int_equal(pm_beat_parse("12 3 4", &step, &c), -1);
	assert_int_equal(pm_beat_parse("12\n13\n", &step, &c), -1);
	assert_int_equal(pm_beat_parse("99999999999999999999999", &step, &c), -1);
}

struct sink {
	char text[16][8192];
	int n;
	size_t longest;
};

static void emit(void *arg, const char *text)
{
	struct sink *s = arg;
	assert_true(s->n < 16);
	snprintf(s->text[s->n++], sizeof(s->text[0]), "%s", text);
	if (strlen(text) > s->longest)
		s->longest = strlen(text);
}

/* A step is the node's once all its ranks reached it, at the last one's
 * time; a repeated or older step of a rank counts nothing. */
static void test_node_arrival(void **state)
{
	struct pm_slownode n;
	struct sink s = { .n = 0 };
	uint64_t step, a, b;
	uint32_t node, cnt;
	(void)state;

	assert_int_equal(pm_slownode_init(&n, 3, 2), 0);
	pm_slownode_beat(&n, 0, 5, 1000, -1);
	pm_slownode_beat(&n, 0, 5, 1001, -1); /* the same step again */
	assert_int_equal(n.nrecs, 0);
	pm_slownode_beat(&n, 1, 5, 1040, -1);
	assert_int_equal(n.nrecs, 1);
	pm_slownode_beat(&n, 1, 4, 1050, -1); /* older: ignored */
	pm_slownode_beat(&n, 9, 6, 1050, -1); /* no such rank */
	pm_slownode_flush(&n, 4097, emit, &s);
	assert_int_equal(s.n, 1);
	assert_int_equal(sscanf(s.text[0], "s %lu %lu %lu %u %u", &step, &a, &b, &node, &cnt), 5);
	assert_int_equal(step, 5);
	assert_int_equal(a, 1040);
	assert_int_equal(b, 0);
	assert_int_equal(node, 3);
	assert_int_equal(cnt, 1);
	/* Flushed: nothing more to say. */
	s.n = 0;
	pm_slownode_flush(&n, 4097, emit, &s);
	assert_int_equal(s.n, 0);
	pm_slownode_free(&n);
}

/* Compute times: the node's median goes up; a child's line passes on. */
static void test_node_compute(void **state)
{
	struct pm_slownode n;
	struct sink s = { .n = 0 };
	char err[128];
	(void)state;

	assert_int_equal(pm_slownode_init(&n, 1, 2), 0);
	for (int k = 0; k < 10; k++) {
		pm_slownode_beat(&n, 0, (uint64_t)k, 100 + k, 10.0 + k % 2);
		pm_slownode_beat(&n, 1, (uint64_t)k, 100 + k, k == 3 ? 500.0 : 11.0);
	}
	assert_int_equal(pm_slownode_merge(&n, "c 4 10 33.000\n", err, sizeof(err)), 0);
	pm_slownode_flush(&n, 4097, emit, &s);
	assert_int_equal(s.n, 1);
	assert_non_null(strstr(s.text[0], "c 4 10 33.000\n"));
	assert_non_null(strstr(s.text[0], "c 1 10 11.000\n"));
	pm_slownode_free(&n);
}

/* A flush longer than one frame is cut at lines. */
static void test_flush_chunks(void **state)
{
	struct pm_slownode n;
	struct sink s = { .n = 0 };
	(void)state;

	assert_int_equal(pm_slownode_init(&n, 2, 1), 0);
	for (uint64_t k = 0; k < 300; k++)
		pm_slownode_beat(&n, 0, k, 1700000000000ull + k, -1);
	pm_slownode_flush(&n, 1001, emit, &s);
	assert_true(s.n > 1);
	assert_true(s.longest <= 1000);
	for (int i = 0; i < s.n; i++)
		assert_int_equal(s.text[i][strlen(s.text[i]) - 1], '\n');
	pm_slownode_free(&n);
}

static void test_bad_text(void **state)
{
	struct pm_slownode n;
	struct pm_slowroot r;
	struct pm_slow_cfg cfg;
	char err[160];
	(void)state;

	pm_slow_cfg_default(&cfg);
	assert_int_equal(pm_slownode_init(&n, 0, 1), 0);
	assert_int_equal(pm_slownode_merge(&n, "x 1 2\n", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "line 1"));
	assert_int_equal(pm_slownode_merge(&n, "c 1 2 3\ns 1 2 3 4\n", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "line 2"));
	assert_int_equal(pm_slownode_merge(&n, "s 1 2 3 4 0\n", err, sizeof(err)), -1);
	assert_int_equal(pm_slownode_merge(&n, "c 1 2 -3\n", err, sizeof(err)), -1);
	assert_int_equal(pm_slownode_merge(&n, "c 1 2 3 junk\n", err, sizeof(err)), -1);
	assert_int_equal(pm_slownode_merge(&n, "", err, sizeof(err)), 0);
	assert_int_equal(pm_slowroot_init(&r, &cfg, 3, err, sizeof(err)), 0);
	assert_int_equal(pm_slowroot_add(&r, "s 1 2\n", 3, err, sizeof(err)), -1);
	/* A node beyond the step's is ignored, not a crash. */
	assert_int_equal(pm_slowroot_add(&r, "c 99 10 5\ns 1 5 4 99 3\n", 3, err, sizeof(err)), 0);
	pm_slowroot_free(&r);
	pm_slownode_free(&n);
}

static uint64_t rng = 88172645463325252ull;

static double uniform(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (double)(rng >> 11) / (double)(1ull << 53);
}

/* A tree of 5 nodes (0 root; 1, 2 its children; 3, 4 under 1), 2 ranks
 * each, STEPS steps per interval. Every rank arrives at each step at
 * t + noise; node `slow` (or none, -1) later by lag_ms. With compute,
 * each rank also reports its compute time (node `slow`'s times factor
 * times longer). Returns the interval at which `slow` was flagged (-1:
 * never); *wrong counts other nodes flagged. */
#define NODES 5
#define STEPS 20
static int run_tree(int slow, double lag_ms, double factor, bool compute, int intervals,
		    int *wrong, struct pm_slow_verdict *flag)
{
	static const int parent[NODES] = { -1, 0, 0, 1, 1 };
	struct pm_slownode n[NODES];
	struct pm_slowroot r;
	struct pm_slow_cfg cfg;
	bool active[NODES];
	char err[160];
	uint64_t t = 1700000000000ull, step = 0;
	int flagged_at = -1;

	*wrong = 0;
	pm_slow_cfg_default(&cfg);
	assert_int_equal(pm_slowroot_init(&r, &cfg, NODES, err, sizeof(err)), 0);
	for (int i = 0; i < NODES; i++) {
		assert_int_equal(pm_slownode_init(&n[i], (uint32_t)i, 2), 0);
		active[i] = true;
	}
	for (int iv = 0; iv < intervals; iv++) {
		struct pm_slow_verdict v[NODES];
		size_t nv;
		for (int k = 0; k < STEPS; k++, step++, t += 100) {
			for (int i = 0; i < NODES; i++) {
				for (unsigned lr = 0; lr < 2; lr++) {
					double at = (double)t + 30 * uniform();
					double c = -1;
					if (i == slow)
						at += lag_ms;
					if (compute)
						c = 50 * (1 + 0.3 * (2 * uniform() - 1)) *
						    (i == slow ? factor : 1);
					pm_slownode_beat(&n[i], lr, step, (uint64_t)at, c);
				}
			}
		}
		/* Leaves first, each flush merged into its parent; the
		 * root's own flush into the root. */
		for (int i = NODES - 1; i >= 0; i--) {
			struct sink s = { .n = 0 };
			pm_slownode_flush(&n[i], 4097, emit, &s);
			for (int k = 0; k < s.n; k++) {
				if (parent[i] >= 0)
					assert_int_equal(pm_slownode_merge(&n[parent[i]], s.text[k],
									   err, sizeof(err)), 0);
				else
					assert_int_equal(pm_slowroot_add(&r, s.text[k], NODES, err,
									 sizeof(err)), 0);
			}
		}
		nv = pm_slowroot_tick(&r, active, v, NODES);
		for (size_t k = 0; k < nv; k++) {
			if (v[k].change != PM_SLOW_FLAGGED)
				continue;
			if ((int)v[k].node == slow && flagged_at < 0) {
				flagged_at = iv;
				*flag = v[k];
			} else if ((int)v[k].node != slow) {
				(*wrong)++;
			}
		}
	}
	for (int i = 0; i < NODES; i++)
		pm_slownode_free(&n[i]);
	pm_slowroot_free(&r);
	return flagged_at;
}

/* The node that arrives last at every step by 50 ms (over 30 ms of
 * noise) is flagged on the phase, named, at the fifth interval. */
static void test_tree_phase(void **state)
{
	struct pm_slow_verdict v;
	int wrong;
	(void)state;

	assert_int_equal(run_tree(3, 50, 1, false, 10, &wrong, &v), 4);
	assert_int_equal(wrong, 0);
	assert_int_equal(v.kind, PM_SLOW_PHASE);
	assert_true(v.ratio >= 0.75);
}

/* Compute times reported: the stronger evidence is used. */
static void test_tree_compute(void **state)
{
	struct pm_slow_verdict v;
	int wrong;
	(void)state;

	assert_int_equal(run_tree(4, 0, 1.5, true, 10, &wrong, &v), 4);
	assert_int_equal(wrong, 0);
	assert_int_equal(v.kind, PM_SLOW_COMPUTE);
	assert_true(v.ratio > 1.3 && v.ratio < 1.7);
}

/* Nobody slow, arrivals and compute times equally noisy: never flagged. */
static void test_tree_no_culprit(void **state)
{
	struct pm_slow_verdict v;
	int wrong;
	(void)state;

	assert_int_equal(run_tree(-1, 0, 1, false, 200, &wrong, &v), -1);
	assert_int_equal(wrong, 0);
	assert_int_equal(run_tree(-1, 0, 1, true, 200, &wrong, &v), -1);
	assert_int_equal(wrong, 0);
}

/* A step completes only with every active node: one missing its
 * arrival counts no step, so nobody is judged on it. */
static void test_root_incomplete(void **state)
{
	struct pm_slowroot r;
	struct pm_slow_cfg cfg;
	struct pm_slow_verdict v[3];
	bool active[3] = { true, true, true };
	char err[160];
	(void)state;

	pm_slow_cfg_default(&cfg);
	assert_int_equal(pm_slowroot_init(&r, &cfg, 3, err, sizeof(err)), 0);
	assert_int_equal(pm_slowroot_add(&r, "s 1 500 100 2 2\n", 3, err, sizeof(err)), 0);
	assert_int_equal(r.steps, 0);
	assert_int_equal(pm_slowroot_add(&r, "s 1 200 0 0 1\n", 3, err, sizeof(err)), 0);
	assert_int_equal(r.steps, 1);
	assert_int_equal(r.n[2].last, 1);
	pm_slowroot_tick(&r, active, v, 3);
	assert_int_equal(r.n[2].last, 0);
	assert_int_equal(r.steps, 0);
	/* A new generation forgets the steps in flight. */
	assert_int_equal(pm_slowroot_add(&r, "s 1 500 100 2 2\n", 3, err, sizeof(err)), 0);
	pm_slowroot_reset(&r);
	assert_int_equal(pm_slowroot_add(&r, "s 1 200 0 0 1\n", 3, err, sizeof(err)), 0);
	assert_int_equal(r.steps, 0);
	pm_slowroot_free(&r);
}

/* The eviction waits for the root's ranks' next step (a step boundary),
 * or two ticks without one; one at a time. */
static void test_evict_boundary(void **state)
{
	struct pm_slowevict e = { 0 };
	(void)state;

	assert_int_equal(pm_slowevict_step(&e, 5), -1);
	assert_int_equal(pm_slowevict_tick(&e), -1);
	/* Flagged while the root's rank is in step 10 (its last + 1 = 11). */
	assert_int_equal(pm_slowevict_arm(&e, 3, 11), 0);
	assert_int_equal(pm_slowevict_arm(&e, 4, 11), -1); /* the first goes first */
	assert_int_equal(pm_slowevict_step(&e, 11), -1);   /* the same step again */
	assert_int_equal(pm_slowevict_step(&e, 12), 3);    /* between steps 10 and 11 */
	assert_int_equal(pm_slowevict_step(&e, 13), -1);   /* once */
	assert_int_equal(pm_slowevict_tick(&e), -1);
	/* No step boundary seen: the second tick evicts. */
	assert_int_equal(pm_slowevict_arm(&e, 4, 13), 0);
	assert_int_equal(pm_slowevict_tick(&e), -1);
	assert_int_equal(pm_slowevict_tick(&e), 4);
	assert_int_equal(pm_slowevict_tick(&e), -1);
	/* No step seen before the verdict: the first one is the boundary. */
	assert_int_equal(pm_slowevict_arm(&e, 2, 0), 0);
	assert_int_equal(pm_slowevict_step(&e, 1), 2);
	/* A new generation: nothing pending. */
	assert_int_equal(pm_slowevict_arm(&e, 2, 7), 0);
	pm_slowevict_cancel(&e);
	assert_int_equal(pm_slowevict_step(&e, 100), -1);
	assert_int_equal(pm_slowevict_tick(&e), -1);
	assert_int_equal(pm_slowevict_tick(&e), -1);
}

/* Every node's intervals on one wall-clock grid, the root's judgement half
 * an interval after: nodes started at different times agree on when an
 * interval ends. */
static void test_phase_delay(void **state)
{
	(void)state;
	assert_int_equal(pm_slow_phase_delay(10000, 5000, 0), 5000); /* on the line: the next */
	assert_int_equal(pm_slow_phase_delay(10001, 5000, 0), 4999);
	assert_int_equal(pm_slow_phase_delay(14999, 5000, 0), 1);
	assert_int_equal(pm_slow_phase_delay(10000, 5000, 2500), 2500);
	assert_int_equal(pm_slow_phase_delay(12600, 5000, 2500), 4900);
	assert_int_equal(pm_slow_phase_delay(12499, 5000, 2500), 1);
	/* Two nodes started 3.7 s apart tick at the same instants. */
	assert_int_equal(1796338000123ull + pm_slow_phase_delay(1796338000123ull, 5000, 0),
			 1796338003823ull + pm_slow_phase_delay(1796338003823ull, 5000, 0));
	assert_int_equal(pm_slow_phase_delay(7, 0, 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_beat_parse),
		cmocka_unit_test(test_node_arrival),
		cmocka_unit_test(test_node_compute),
		cmocka_unit_test(test_flush_chunks),
		cmocka_unit_test(test_bad_text),
		cmocka_unit_test(test_tree_phase),
		cmocka_unit_test(test_tree_compute),
		cmocka_unit_test(test_tree_no_culprit),
		cmocka_unit_test(test_root_incomplete),
		cmocka_unit_test(test_evict_boundary),
		cmocka_unit_test(test_phase_delay),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
