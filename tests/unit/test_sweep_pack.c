/* Unit tests of runtime/sweep/sweep_pack.c: best fit on one node, the
 * fewest nodes for a larger trial, rank order, release, exhaustion and lost
 * nodes; and a random run of 1/2/6-rank trials on 4x4 checked against a
 * brute-force statement of the rules in sweep_pack.h. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sweep/sweep_pack.h"

#define CHECK(cond, ...) do { if (!(cond)) fail_msg(__VA_ARGS__); } while (0)

static char err[256];

static void init(struct pm_pack *p, int nodes, int slots)
{
	assert_int_equal(pm_pack_init(p, nodes, slots, err, sizeof(err)), 0);
}

/* Takes ranks and says on which node rank 0 landed. */
static int take(struct pm_pack *p, int ranks, int *s)
{
	assert_int_equal(pm_pack_take(p, ranks, s), PM_PACK_OK);
	return pm_pack_node_of(p, s[0]);
}

static void test_init_refused(void **state)
{
	struct pm_pack p;

	(void)state;
	assert_int_equal(pm_pack_init(&p, 0, 4, err, sizeof(err)), -1);
	CHECK(strstr(err, "not 0 x 4"), "[%s]", err);
	assert_int_equal(pm_pack_init(&p, 4, 0, err, sizeof(err)), -1);
	assert_int_equal(pm_pack_init(&p, 4, 5000, err, sizeof(err)), -1);
}

/* One-rank trials fill the node already in use; whole nodes stay whole. */
static void test_best_fit_keeps_nodes_whole(void **state)
{
	struct pm_pack p;
	int s[16], i;

	(void)state;
	init(&p, 4, 4);
	for (i = 0; i < 4; i++)
		assert_int_equal(take(&p, 1, s), 0);
	for (i = 0; i < 3; i++) {
		int n = take(&p, 4, s);

		CHECK(n >= 1 && n <= 3, "4-rank trial on node %d", n);
		assert_int_equal(pm_pack_node_of(&p, s[3]), n);
	}
	assert_int_equal(pm_pack_take(&p, 1, s), PM_PACK_WAIT);
	pm_pack_free(&p);
}

/* Nodes with 1, 2, 3 and 4 free slots: each trial goes to the node with
 * the fewest that still holds it. */
static void test_best_fit_choice(void **state)
{
	struct pm_pack p;
	int s[4];

	(void)state;
	init(&p, 4, 4);
	/* Fill nodes 0..2, then give back 1 slot of node 0, 2 of node 1, 3 of
	 * node 2. */
	assert_int_equal(take(&p, 4, s), 0);
	assert_int_equal(take(&p, 4, s), 1);
	assert_int_equal(take(&p, 4, s), 2);
	pm_pack_release(&p, 1, (int[]){ 3 });
	pm_pack_release(&p, 2, (int[]){ 4, 5 });
	pm_pack_release(&p, 3, (int[]){ 9, 10, 11 });
	/* free: node0 1, node1 2, node2 3, node3 4 */
	assert_int_equal(take(&p, 2, s), 1);
	assert_int_equal(s[0], 4);
	assert_int_equal(s[1], 5);
	assert_int_equal(take(&p, 3, s), 2);
	assert_int_equal(take(&p, 1, s), 0);
	assert_int_equal(s[0], 3);
	assert_int_equal(take(&p, 4, s), 3);
	assert_int_equal(p.free_total, 0);
	pm_pack_free(&p);
}

/* 6 ranks on 4x4: one whole node, then 2 on the next; ranks in order. */
static void test_multi_node_order(void **state)
{
	struct pm_pack p;
	int s[6], r;

	(void)state;
	init(&p, 4, 4);
	assert_int_equal(take(&p, 6, s), 0);
	for (r = 0; r < 6; r++)
		assert_int_equal(s[r], r);
	pm_pack_free(&p);
}

/* Free 3, 3, 2, 4: the whole node first, the remainder of 2 on the node
 * with exactly 2 free: two nodes, none broken into needlessly. */
static void test_multi_node_fewest(void **state)
{
	struct pm_pack p;
	int s[16], r;

	(void)state;
	init(&p, 4, 4);
	{
		int a[4], b[4], c[4];

		assert_int_equal(take(&p, 4, a), 0);
		assert_int_equal(take(&p, 4, b), 1);
		assert_int_equal(take(&p, 4, c), 2);
		pm_pack_release(&p, 3, a + 1); /* node 0: 3 free */
		pm_pack_release(&p, 3, b + 1); /* node 1: 3 free */
		pm_pack_release(&p, 2, c + 2); /* node 2: 2 free */
	}
	assert_int_equal(take(&p, 6, s), 3);
	for (r = 0; r < 4; r++)
		assert_int_equal(pm_pack_node_of(&p, s[r]), 3);
	assert_int_equal(pm_pack_node_of(&p, s[4]), 2);
	assert_int_equal(pm_pack_node_of(&p, s[5]), 2);
	/* No whole node left: 6 more take two nodes of 3. */
	{
		int n0 = take(&p, 6, s), n1 = pm_pack_node_of(&p, s[3]);

		CHECK(n0 != n1 && n0 <= 1 && n1 <= 1, "nodes %d %d", n0, n1);
		assert_int_equal(pm_pack_node_of(&p, s[5]), n1);
	}
	assert_int_equal(p.free_total, 0);
	pm_pack_free(&p);
}

/* Four slots free on four nodes: enough in total, yet a 4-rank trial
 * waits (one node each), while a 5-rank one could take them. */
static void test_wait_and_never(void **state)
{
	struct pm_pack p;
	int s[17], big[16], n;

	(void)state;
	init(&p, 4, 4);
	assert_int_equal(pm_pack_take(&p, 17, s), PM_PACK_NEVER);
	assert_int_equal(pm_pack_take(&p, 0, s), PM_PACK_NEVER);
	for (n = 0; n < 4; n++)
		assert_int_equal(take(&p, 3, s), n);
	assert_int_equal(pm_pack_take(&p, 4, s), PM_PACK_WAIT);
	assert_int_equal(pm_pack_fits(&p, 4), PM_PACK_WAIT);
	assert_int_equal(p.free_total, 4);
	assert_int_equal(pm_pack_fits(&p, 5), PM_PACK_WAIT);
	assert_int_equal(pm_pack_fits(&p, 6), PM_PACK_WAIT);
	/* across nodes, 4 free: nothing larger than 4 fits */
	pm_pack_free(&p);
	/* Exhaustion and release: 16 one-rank trials, the 17th waits. */
	init(&p, 4, 4);
	for (n = 0; n < 16; n++)
		(void)take(&p, 1, big + n);
	assert_int_equal(pm_pack_take(&p, 1, s), PM_PACK_WAIT);
	pm_pack_release(&p, 1, big + 9);
	assert_int_equal(take(&p, 1, s), 2);
	assert_int_equal(s[0], big[9]);
	/* Releasing twice does not free twice. */
	pm_pack_release(&p, 1, s);
	pm_pack_release(&p, 1, s);
	assert_int_equal(p.free_total, 1);
	pm_pack_free(&p);
}

static void test_lost_node(void **state)
{
	struct pm_pack p;
	int a[2], s[16], i;

	(void)state;
	init(&p, 4, 4);
	assert_int_equal(take(&p, 2, a), 0);
	pm_pack_node_lost(&p, 0);
	assert_int_equal(p.free_total, 12);
	assert_int_equal(p.usable_nodes, 3);
	assert_int_equal(pm_pack_fits(&p, 13), PM_PACK_NEVER);
	for (i = 0; i < 12; i++)
		CHECK(take(&p, 1, s) != 0, "slot on the lost node");
	/* The lost node's slots do not come back when its trial ends. */
	pm_pack_release(&p, 2, a);
	assert_int_equal(p.free_total, 0);
	assert_int_equal(pm_pack_take(&p, 1, s), PM_PACK_WAIT);
	pm_pack_node_lost(&p, 0); /* twice: no change */
	assert_int_equal(p.usable_nodes, 3);
	pm_pack_node_lost(&p, 1);
	pm_pack_node_lost(&p, 2);
	pm_pack_node_lost(&p, 3);
	assert_int_equal(pm_pack_fits(&p, 1), PM_PACK_NEVER);
	pm_pack_free(&p);
}

/* The rules, by brute force over the nodes' free counts. */
static int nfree_of(const struct pm_pack *p, int n)
{
	int s, k = 0;

	for (s = 0; s < p->slots; s++)
		k += !p->used[n * p->slots + s];
	return k;
}

static void test_random_mixed_4x4(void **state)
{
	struct pm_pack p;
	int held[64][8], ranks[64], nheld = 0, step, sizes[] = { 1, 2, 6 };

	(void)state;
	srandom(24);
	init(&p, 4, 4);
	for (step = 0; step < 20000; step++) {
		if (nheld && (random() % 3 == 0 || nheld == 64)) {
			int k = random() % nheld;

			pm_pack_release(&p, ranks[k], held[k]);
			memcpy(held[k], held[nheld - 1], sizeof(held[k]));
			ranks[k] = ranks[--nheld];
		} else {
			int r = sizes[random() % 3], before[4], n, best = 99, total = 0;
			int s[8], i, *sorted = before, nodes_used = 0, need, k;
			enum pm_pack_result res;
			char seen[4] = { 0 };

			for (n = 0; n < 4; n++) {
				before[n] = nfree_of(&p, n);
				total += before[n];
				if (before[n] >= r && before[n] < best)
					best = before[n];
			}
			res = pm_pack_take(&p, r, s);
			if (r <= 4) {
				assert_int_equal(res, best < 99 ? PM_PACK_OK : PM_PACK_WAIT);
			} else {
				assert_int_equal(res, total >= r ? PM_PACK_OK : PM_PACK_WAIT);
			}
			if (res != PM_PACK_OK)
				continue;
			for (i = 0; i < r; i++) {
				n = pm_pack_node_of(&p, s[i]);
				if (!seen[n]++)
					nodes_used++;
				for (k = 0; k < i; k++)
					CHECK(s[k] != s[i], "slot %d given twice", s[i]);
				/* Ranks go node by node: a node left is not met again. */
				CHECK(i == 0 || pm_pack_node_of(&p, s[i - 1]) == n || seen[n] == 1,
				      "ranks not grouped by node");
			}
			if (r <= 4) {
				n = pm_pack_node_of(&p, s[0]);
				CHECK(nodes_used == 1, "%d-rank trial on %d nodes", r, nodes_used);
				CHECK(before[n] == best, "%d ranks on a node with %d free, best %d", r,
				      before[n], best);
			} else {
				/* The fewest nodes: the k largest free counts reach r. */
				int sorted4[4];

				memcpy(sorted4, sorted, sizeof(sorted4));
				for (i = 0; i < 4; i++)
					for (k = i + 1; k < 4; k++)
						if (sorted4[k] > sorted4[i]) {
							int t = sorted4[i];
							sorted4[i] = sorted4[k];
							sorted4[k] = t;
						}
				for (need = r, k = 0; need > 0; k++)
					need -= sorted4[k];
				assert_int_equal(nodes_used, k);
			}
			assert_int_equal(p.free_total, total - r);
			memcpy(held[nheld], s, r * sizeof(int));
			ranks[nheld++] = r;
		}
	}
	pm_pack_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_refused),
		cmocka_unit_test(test_best_fit_keeps_nodes_whole),
		cmocka_unit_test(test_best_fit_choice),
		cmocka_unit_test(test_multi_node_order),
		cmocka_unit_test(test_multi_node_fewest),
		cmocka_unit_test(test_wait_and_never),
		cmocka_unit_test(test_lost_node),
		cmocka_unit_test(test_random_mixed_4x4),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
