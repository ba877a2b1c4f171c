/* Unit tests of runtime/common/tree.c: the k-ary control tree arithmetic.
 *
 * Expected values come from a brute-force tree built here the slow way
 * (nodes handed out to parents in breadth-first order, k at a time;
 * subtree sizes by summing up the built tree; depths by walking up), not
 * from the closed forms tree.c uses. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/tree.h"

#define CHECK(cond, ...) do { if (!(cond)) fail_msg(__VA_ARGS__); } while (0)

#define NMAX 2000

struct brute {
	int parent[NMAX];
	int first[NMAX]; /* first child, -1 for none */
	int nchild[NMAX];
	int size[NMAX];
	int depth[NMAX];
	int marks[NMAX]; /* how many nodes claim this one as a child */
};

/* The tree of n nodes with fan-out k, built node by node: the nodes are
 * numbered breadth first, so each node in turn takes the next k unused
 * numbers as its children. */
static void build(struct brute *b, int k, int n)
{
	int next = 1, v, c;

	for (v = 0; v < n; v++) {
		b->parent[v] = -1;
		b->first[v] = -1;
		b->nchild[v] = 0;
	}
	for (v = 0; v < n; v++) {
		for (c = 0; c < k && next < n; c++, next++) {
			if (c == 0)
				b->first[v] = next;
			b->nchild[v]++;
			b->parent[next] = v;
		}
	}
	/* Children have bigger numbers than their parent: sum bottom up. */
	for (v = 0; v < n; v++)
		b->size[v] = 1;
	for (v = n - 1; v > 0; v--)
		b->size[b->parent[v]] += b->size[v];
	for (v = 0; v < n; v++) {
		int u = v, d = 0;
		while (b->parent[u] >= 0) {
			u = b->parent[u];
			d++;
		}
		b->depth[v] = d;
	}
}

/* Smallest d with 1 + k + ... + k^d >= n: the depth of the deepest node
 * of a complete k-ary tree of n nodes. */
static int levels_needed(int k, int n)
{
	long long full = 1, level = 1;
	int d = 0;

	while (full < n) {
		level *= k;
		full += level;
		d++;
	}
	return d;
}

/* Smallest d with k^d >= n: ceil(log_k n). */
static int ceil_log(int k, int n)
{
	long long p = 1;
	int d = 0;

	while (p < n) {
		p *= k;
		d++;
	}
	return d;
}

static void check_tree(struct brute *b, int k, int n)
{
	int v, maxdepth = 0;

	build(b, k, n);
	memset(b->marks, 0, sizeof(int) * (size_t)n);
	for (v = 0; v < n; v++) {
		int first = -12345, cnt, c, sum = 1;

		/* parent */
		CHECK(pm_tree_parent(v, k) == b->parent[v],
		      "k=%d n=%d: parent(%d) = %d, want %d", k, n, v,
		      pm_tree_parent(v, k), b->parent[v]);

		/* children */
		cnt = pm_tree_children(v, k, n, &first);
		CHECK(cnt == b->nchild[v], "k=%d n=%d: node %d has %d children, want %d",
		      k, n, v, cnt, b->nchild[v]);
		CHECK(cnt >= 0 && cnt <= k, "k=%d n=%d node %d: %d children", k, n, v, cnt);
		if (cnt > 0)
			CHECK(first == b->first[v], "k=%d n=%d: first child of %d = %d, want %d",
			      k, n, v, first, b->first[v]);
		for (c = first; c < first + cnt; c++) {
			CHECK(c > 0 && c < n, "k=%d n=%d: child %d of %d out of range",
			      k, n, c, v);
			b->marks[c]++;
			CHECK(pm_tree_parent(c, k) == v,
			      "k=%d n=%d: child %d of %d has parent %d", k, n, c, v,
			      pm_tree_parent(c, k));
			sum += pm_tree_subtree_size(c, k, n);
		}

		/* subtree */
		CHECK(pm_tree_subtree_size(v, k, n) == b->size[v],
		      "k=%d n=%d: subtree_size(%d) = %d, want %d", k, n, v,
		      pm_tree_subtree_size(v, k, n), b->size[v]);
		CHECK(pm_tree_subtree_size(v, k, n) == sum,
		      "k=%d n=%d: subtree_size(%d) = %d, children's + 1 = %d", k, n,
		      v, pm_tree_subtree_size(v, k, n), sum);

		/* depth */
		CHECK(pm_tree_depth(v, k) == b->depth[v],
		      "k=%d n=%d: depth(%d) = %d, want %d", k, n, v,
		      pm_tree_depth(v, k), b->depth[v]);
		if (b->depth[v] > maxdepth)
			maxdepth = b->depth[v];
	}
	/* Every node but the root is the child of exactly one node. */
	CHECK(b->marks[0] == 0, "k=%d n=%d: the root is someone's child", k, n);
	for (v = 1; v < n; v++)
		CHECK(b->marks[v] == 1, "k=%d n=%d: node %d is the child of %d nodes",
		      k, n, v, b->marks[v]);
	assert_int_equal(pm_tree_subtree_size(0, k, n), n);
	CHECK(maxdepth == levels_needed(k, n), "k=%d n=%d: depth %d, want %d",
	      k, n, maxdepth, levels_needed(k, n));
	CHECK(k == 1 || maxdepth <= ceil_log(k, n), "k=%d n=%d: depth %d > ceil(log_k n) %d",
	      k, n, maxdepth, ceil_log(k, n));
}

static void sweep(int k, int nmax)
{
	struct brute *b = malloc(sizeof(*b));
	int n;

	assert_non_null(b);
	for (n = 1; n <= nmax; n++)
		check_tree(b, k, n);
	free(b);
}

static void test_k2(void **state) { (void)state; sweep(2, NMAX); }
static void test_k3(void **state) { (void)state; sweep(3, NMAX); }
static void test_k32(void **state) { (void)state; sweep(32, NMAX); }
/* A chain (subtree_size walks it, so fewer nodes) and k = 4 and 7. */
static void test_k1(void **state) { (void)state; sweep(1, 300); }
static void test_k4(void **state) { (void)state; sweep(4, 600); }
static void test_k7(void **state) { (void)state; sweep(7, 600); }

/* Hand-worked values, to pin down the conventions. */
static void test_examples(void **state)
{
	int first;

	(void)state;
	assert_int_equal(pm_tree_parent(0, 2), -1);
	assert_int_equal(pm_tree_parent(1, 2), 0);
	assert_int_equal(pm_tree_parent(2, 2), 0);
	assert_int_equal(pm_tree_parent(3, 2), 1);
	assert_int_equal(pm_tree_parent(32, 32), 0);
	assert_int_equal(pm_tree_parent(33, 32), 1);

	/* n = 5, k = 2: 0 -> 1, 2; 1 -> 3, 4; 2 -> none. */
	assert_int_equal(pm_tree_children(0, 2, 5, &first), 2);
	assert_int_equal(first, 1);
	assert_int_equal(pm_tree_children(1, 2, 5, &first), 2);
	assert_int_equal(first, 3);
	assert_int_equal(pm_tree_children(2, 2, 5, &first), 0);
	assert_int_equal(pm_tree_subtree_size(0, 2, 5), 5);
	assert_int_equal(pm_tree_subtree_size(1, 2, 5), 3);
	assert_int_equal(pm_tree_subtree_size(2, 2, 5), 1);
	assert_int_equal(pm_tree_depth(4, 2), 2);

	/* A single node. */
	assert_int_equal(pm_tree_children(0, 32, 1, &first), 0);
	assert_int_equal(pm_tree_subtree_size(0, 32, 1), 1);
	assert_int_equal(pm_tree_depth(0, 32), 0);

	/* n = 40, k = 32: root has 32 children, node 1 has 7 (33..39). */
	assert_int_equal(pm_tree_children(0, 32, 40, &first), 32);
	assert_int_equal(pm_tree_children(1, 32, 40, &first), 7);
	assert_int_equal(first, 33);
	assert_int_equal(pm_tree_subtree_size(1, 32, 40), 8);
	assert_int_equal(pm_tree_subtree_size(2, 32, 40), 1);
}

/* Big trees: no overflow in the level-by-level sums. */
static void test_large(void **state)
{
	static const int ks[] = { 2, 3, 32, 1000 };
	static const int ns[] = { 100000, 1 << 20, INT_MAX / 2, INT_MAX };
	size_t i, j;

	(void)state;
	for (i = 0; i < sizeof(ks) / sizeof(ks[0]); i++) {
		for (j = 0; j < sizeof(ns) / sizeof(ns[0]); j++) {
			int k = ks[i], n = ns[j], first, cnt, c;
			long long sum = 1;

			assert_int_equal(pm_tree_subtree_size(0, k, n), n);
			cnt = pm_tree_children(0, k, n, &first);
			assert_int_equal(cnt, k);
			assert_int_equal(first, 1);
			for (c = first; c < first + cnt; c++)
				sum += pm_tree_subtree_size(c, k, n);
			CHECK(sum == n, "k=%d n=%d: children's subtrees + 1 = %lld",
			      k, n, sum);
			/* The last node is a leaf at the deepest level. */
			assert_int_equal(pm_tree_subtree_size(n - 1, k, n), 1);
			assert_int_equal(pm_tree_children(n - 1, k, n, &first), 0);
			assert_int_equal(pm_tree_depth(n - 1, k), levels_needed(k, n));
			assert_int_equal(pm_tree_parent(n - 1, k), (n - 2) / k);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_examples),
		cmocka_unit_test(test_k2),
		cmocka_unit_test(test_k3),
		cmocka_unit_test(test_k32),
		cmocka_unit_test(test_k1),
		cmocka_unit_test(test_k4),
		cmocka_unit_test(test_k7),
		cmocka_unit_test(test_large),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
