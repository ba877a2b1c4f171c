/* Unit tests of runtime/common/statestore.c: versions, the atomic replace,
 * the limits, who may read, replicas, the buddy, what a spare gets. The
 * handles are plain integers; every one the store lets go is counted, so a
 * leak or a double close shows. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "common/statestore.h"

#define MiB (1024ull * 1024)
#define GiB (1024 * MiB)

static int released[64];

static void release(int h, void *arg)
{
	(void)arg;
	assert_true(h >= 0 && h < 64);
	released[h]++;
}

static void store(struct pm_state_store *s, uint32_t node)
{
	struct pm_state_cfg cfg = { .max_rank = 4 * GiB, .max_node = 10 * GiB, .max_names = 4 };
	memset(released, 0, sizeof(released));
	pm_state_init(s, &cfg, node);
}

static uint64_t save(struct pm_state_store *s, int32_t grank, const char *name, uint64_t size,
		     int handle, int *old)
{
	char err[256];
	uint64_t t = pm_state_begin(s, grank, name, size, err, sizeof(err));
	assert_true(t > 0);
	assert_int_equal(pm_state_commit(s, t, handle, 1000, 7, old), 0);
	return t;
}

static void test_versions_replace(void **state)
{
	struct pm_state_store s;
	const struct pm_state_blob *b;
	int old;
	(void)state;

	store(&s, 0);
	assert_null(pm_state_find(&s, 3, "model"));
	save(&s, 3, "model", 100 * MiB, 10, &old);
	assert_int_equal(old, -1);
	b = pm_state_find(&s, 3, "model");
	assert_non_null(b);
	assert_int_equal(b->version, 1);
	assert_int_equal(b->handle, 10);
	assert_int_equal(b->step, 7);
	assert_false(b->safe);
	save(&s, 3, "model", 120 * MiB, 11, &old);
	assert_int_equal(old, 10); /* the caller closes the replaced one */
	b = pm_state_find(&s, 3, "model");
	assert_int_equal(b->version, 2);
	assert_int_equal(b->handle, 11);
	assert_int_equal(s.held, 120 * MiB);
	assert_null(pm_state_find(&s, 4, "model")); /* another rank's name */
	pm_state_clear(&s, release, NULL);
	assert_int_equal(released[11], 1);
	assert_int_equal(released[10], 0);
	assert_int_equal(s.held, 0);
	assert_int_equal(s.cfg.max_rank, 4 * GiB); /* the limits stay */
}

/* A save cut off (the rank died after begin) never replaces the last good
 * version, and its bytes are no longer counted. */
static void test_abort_keeps_last_good(void **state)
{
	struct pm_state_store s;
	char err[256];
	int old;
	uint64_t t;
	(void)state;

	store(&s, 0);
	save(&s, 1, "opt", 1 * GiB, 5, &old);
	t = pm_state_begin(&s, 1, "opt", 2 * GiB, err, sizeof(err));
	assert_true(t > 0);
	assert_int_equal(s.pending, 2 * GiB);
	assert_int_equal(pm_state_find(&s, 1, "opt")->handle, 5); /* a load still gets v1 */
	pm_state_abort_rank(&s, 1);
	assert_int_equal(s.pending, 0);
	assert_int_equal(pm_state_commit(&s, t, 6, 0, 0, &old), -1); /* too late */
	assert_int_equal(old, -1);
	assert_int_equal(pm_state_find(&s, 1, "opt")->version, 1);
	t = pm_state_begin(&s, 1, "opt", 1 * GiB, err, sizeof(err));
	pm_state_abort(&s, t);
	pm_state_abort(&s, t); /* twice: nothing */
	assert_int_equal(s.pending, 0);
	pm_state_clear(&s, release, NULL);
	assert_int_equal(released[5], 1);
}

static void test_limits(void **state)
{
	struct pm_state_store s;
	char err[256];
	int old;
	uint64_t t;
	(void)state;

	store(&s, 0);
	save(&s, 0, "model", 3 * GiB, 1, &old);
	/* Replacing 3 GiB with 3.5 GiB: the rank keeps 3.5 GiB, allowed. */
	t = pm_state_begin(&s, 0, "model", 3 * GiB + 512 * MiB, err, sizeof(err));
	assert_true(t > 0);
	pm_state_abort(&s, t);
	/* Adding 1.5 GiB under another name: 4.5 GiB kept, refused. */
	assert_int_equal(pm_state_begin(&s, 0, "opt", 1536 * MiB, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "save of 'opt' (1.5 GiB) refused: rank 0 would keep 4.5 GiB"));
	assert_non_null(strstr(err, "per-rank limit of 4.0 GiB (state_max_rank)"));
	/* Two saves of one name at once. */
	t = pm_state_begin(&s, 0, "model", 1 * GiB, err, sizeof(err));
	assert_int_equal(pm_state_begin(&s, 0, "model", 1 * GiB, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "in progress"));
	pm_state_abort(&s, t);
	/* The node: 3 ranks of 3 GiB fill 9 of 10 GiB; a fourth is refused. */
	save(&s, 1, "model", 3 * GiB, 2, &old);
	save(&s, 2, "model", 3 * GiB, 3, &old);
	assert_int_equal(pm_state_begin(&s, 3, "model", 2 * GiB, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "this node would hold 11.0 GiB, over the per-node limit of 10.0 GiB"));
	/* The node counts both versions while a save is in flight. */
	assert_int_equal(pm_state_begin(&s, 2, "model", 2 * GiB, err, sizeof(err)), 0);
	/* Names per rank. */
	save(&s, 5, "a", 1, 4, &old);
	save(&s, 5, "b", 1, 5, &old);
	save(&s, 5, "c", 1, 6, &old);
	t = pm_state_begin(&s, 5, "d", 1, err, sizeof(err));
	assert_true(t > 0);
	assert_int_equal(pm_state_begin(&s, 5, "e", 1, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "has 4 names, the limit (state_max_names)"));
	pm_state_abort(&s, t);
	save(&s, 5, "a", 2, 7, &old); /* a new version of a held name is not a new name */
	assert_int_equal(old, 4);
	pm_state_clear(&s, release, NULL);
}

static void test_names(void **state)
{
	char err[256];
	char longname[70];
	(void)state;

	assert_int_equal(pm_state_name_check("model.v2_final-1", err, sizeof(err)), 0);
	assert_int_equal(pm_state_name_check("", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "must be 1 to 64 characters"));
	assert_int_equal(pm_state_name_check(".hidden", err, sizeof(err)), -1);
	assert_int_equal(pm_state_name_check("a/b", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "character 2 is not allowed"));
	memset(longname, 'x', 65);
	longname[65] = 0;
	assert_int_equal(pm_state_name_check(longname, err, sizeof(err)), -1);
}

static void test_may_access(void **state)
{
	(void)state;
	assert_true(pm_state_may_access(1000, 1000, 3, 3));
	assert_false(pm_state_may_access(1000, 1001, 3, 3)); /* another user */
	assert_false(pm_state_may_access(1000, 0, 3, 3));    /* root needs none of it */
	assert_false(pm_state_may_access(1000, 1000, 2, 3)); /* another rank */
	assert_false(pm_state_may_access(1000, 1000, -1, -1));
}

/* Safe only when the buddy holds the latest version: a late
 * acknowledgement of an older one changes nothing. */
static void test_mark_safe(void **state)
{
	struct pm_state_store s;
	int old;
	(void)state;

	store(&s, 0);
	save(&s, 2, "model", 10, 1, &old);
	save(&s, 2, "model", 10, 2, &old);
	pm_state_mark_safe(&s, 2, "model", 1);
	assert_false(pm_state_find(&s, 2, "model")->safe);
	pm_state_mark_safe(&s, 2, "model", 2);
	assert_true(pm_state_find(&s, 2, "model")->safe);
	save(&s, 2, "model", 10, 3, &old);
	assert_false(pm_state_find(&s, 2, "model")->safe); /* a new version is not safe yet */
	pm_state_mark_safe(&s, 9, "model", 1);               /* unknown: ignored */
	pm_state_clear(&s, release, NULL);
}

/* The buddy keeps the newest replica of each of another node's blobs; a
 * lost node's replicas go once handed on. What a spare gets is the
 * buddy's latest, with its version and step. */
static void test_replicas_and_spare(void **state)
{
	struct pm_state_store buddy, spare;
	struct pm_state_blob m = { .owner_node = 1, .grank = 2, .version = 3, .size = 2 * GiB,
				   .step = 41 };
	const struct pm_state_blob *b;
	char err[256];
	int old;
	(void)state;

	store(&buddy, 3);
	snprintf(m.name, sizeof(m.name), "model");
	assert_int_equal(pm_state_put_replica(&buddy, &m, 20, &old, err, sizeof(err)), 0);
	assert_int_equal(old, -1);
	m.version = 2; /* an older one arriving late: refused, its handle back */
	assert_int_equal(pm_state_put_replica(&buddy, &m, 21, &old, err, sizeof(err)), -1);
	assert_int_equal(old, 21);
	assert_non_null(strstr(err, "version 3 is held already"));
	m.version = 4;
	m.step = 42;
	assert_int_equal(pm_state_put_replica(&buddy, &m, 22, &old, err, sizeof(err)), 0);
	assert_int_equal(old, 20);
	assert_int_equal(buddy.held, 2 * GiB);
	m.owner_node = 3; /* from itself */
	assert_int_equal(pm_state_put_replica(&buddy, &m, 23, &old, err, sizeof(err)), -1);
	m.owner_node = 1;
	m.grank = 3; /* over the node's limit: 2 + 9 > 10 GiB */
	m.size = 9 * GiB;
	assert_int_equal(pm_state_put_replica(&buddy, &m, 24, &old, err, sizeof(err)), -1);
	assert_int_equal(old, 24);
	assert_non_null(strstr(err, "over the per-node limit of 10.0 GiB"));

	/* Node 1 is lost; a spare takes rank 2: it is told the buddy of
	 * node 1 and gets version 4 at step 42 from there. */
	assert_int_equal(pm_state_buddy(1, 4, NULL), 3);
	b = pm_state_find(&buddy, 2, "model");
	assert_non_null(b);
	assert_true(b->replica && b->safe);
	assert_int_equal(b->version, 4);
	assert_int_equal(b->step, 42);
	store(&spare, 4);
	assert_int_equal(pm_state_put_replica(&spare, b, 30, &old, err, sizeof(err)), 0);
	assert_int_equal(pm_state_find(&spare, 2, "model")->handle, 30);
	pm_state_drop_replicas(&buddy, 1, release, NULL);
	assert_int_equal(released[22], 1);
	assert_null(pm_state_find(&buddy, 2, "model"));
	assert_int_equal(buddy.held, 0);
	pm_state_clear(&buddy, release, NULL);
	pm_state_clear(&spare, release, NULL);
	assert_int_equal(released[30], 1);
}

/* A rank's state dropped (a sweep's trial run ended on its slot): every
 * blob of that rank here goes, own and a replica handed on for it, its
 * save in flight too (its commit finds no ticket); the other ranks' and
 * the other nodes' replicas stay. At the buddy, only the owner's replicas
 * of that rank go. Each handle once, the bytes with them. */
static void test_drop_rank(void **state)
{
	struct pm_state_store s, b;
	struct pm_state_blob m = { .owner_node = 2, .grank = 5, .version = 1, .size = MiB };
	uint64_t t;
	char err[256];
	int old;
	(void)state;

	store(&s, 0);
	save(&s, 5, "model", 3 * MiB, 1, &old);
	save(&s, 5, "opt", 2 * MiB, 2, &old);
	save(&s, 6, "model", 4 * MiB, 3, &old);
	snprintf(m.name, sizeof(m.name), "model");
	assert_int_equal(pm_state_put_replica(&s, &m, 4, &old, err, sizeof(err)), 0); /* node 2's rank 5 */
	m.grank = 9;
	assert_int_equal(pm_state_put_replica(&s, &m, 5, &old, err, sizeof(err)), 0); /* node 2's rank 9 */
	t = pm_state_begin(&s, 5, "model", 7 * MiB, err, sizeof(err));
	assert_true(t > 0);
	assert_int_equal(s.pending, 7 * MiB);
	assert_int_equal(pm_state_drop_rank(&s, 0, 5, release, NULL), 3);
	assert_int_equal(released[1] + released[2] + released[4], 3);
	assert_int_equal(released[3] + released[5], 0);
	assert_null(pm_state_find(&s, 5, "model"));
	assert_null(pm_state_find(&s, 5, "opt"));
	assert_non_null(pm_state_find(&s, 6, "model"));
	assert_non_null(pm_state_find(&s, 9, "model"));
	assert_int_equal(s.held, 4 * MiB + MiB);
	assert_int_equal(s.pending, 0);
	assert_int_equal(pm_state_commit(&s, t, 7, 1000, 1, &old), -1);
	/* Nothing left of it: dropped again, nothing. */
	assert_int_equal(pm_state_drop_rank(&s, 0, 5, release, NULL), 0);
	/* A new run of rank 5 begins at version 1, as a first save does. */
	save(&s, 5, "model", MiB, 8, &old);
	assert_int_equal(pm_state_find(&s, 5, "model")->version, 1);

	/* At the buddy (node 3) of node 0: "drop 0 6" takes node 0's rank
	 * 6 only, not node 1's replica of the same global rank number. */
	store(&b, 3);
	m.owner_node = 0;
	m.grank = 6;
	assert_int_equal(pm_state_put_replica(&b, &m, 10, &old, err, sizeof(err)), 0);
	m.owner_node = 1;
	assert_int_equal(pm_state_put_replica(&b, &m, 11, &old, err, sizeof(err)), 0);
	m.owner_node = 0;
	m.grank = 7;
	assert_int_equal(pm_state_put_replica(&b, &m, 12, &old, err, sizeof(err)), 0);
	assert_int_equal(pm_state_drop_rank(&b, 0, 6, release, NULL), 1);
	assert_int_equal(released[10], 1);
	assert_int_equal(released[11] + released[12], 0);
	assert_int_equal(b.held, 2 * MiB);
	pm_state_clear(&b, release, NULL);
	pm_state_clear(&s, release, NULL);
	for (int h = 0; h < 13; h++)
		assert_true(released[h] <= 1);
}

/* Own state is found before a replica of the same rank. */
static void test_own_before_replica(void **state)
{
	struct pm_state_store s;
	struct pm_state_blob m = { .owner_node = 7, .grank = 1, .version = 9, .size = 1 };
	char err[256];
	int old;
	(void)state;

	store(&s, 0);
	snprintf(m.name, sizeof(m.name), "model");
	assert_int_equal(pm_state_put_replica(&s, &m, 1, &old, err, sizeof(err)), 0);
	assert_int_equal(pm_state_find(&s, 1, "model")->handle, 1);
	save(&s, 1, "model", 1, 2, &old);
	assert_int_equal(old, -1); /* the replica is not replaced by an own save */
	assert_int_equal(pm_state_find(&s, 1, "model")->handle, 2);
	assert_non_null(pm_state_at(&s, 1));
	assert_null(pm_state_at(&s, 2));
	pm_state_clear(&s, release, NULL);
	assert_int_equal(released[1] + released[2], 2);
}

/* A spare (node 4) runs lost node 1's rank 2 now: its own save, or its
 * replica arriving at the old holder, supersedes node 1's copy of that
 * rank's name (and only that); the memory held goes down. */
static void test_superseded(void **state)
{
	struct pm_state_store s;
	struct pm_state_blob m = { .owner_node = 1, .grank = 2, .version = 5, .size = 3 * MiB };
	char err[256];
	int old;
	(void)state;

	store(&s, 3);
	snprintf(m.name, sizeof(m.name), "model");
	assert_int_equal(pm_state_put_replica(&s, &m, 1, &old, err, sizeof(err)), 0);
	snprintf(m.name, sizeof(m.name), "opt");
	assert_int_equal(pm_state_put_replica(&s, &m, 2, &old, err, sizeof(err)), 0);
	m.grank = 7; /* another rank of node 1 */
	snprintf(m.name, sizeof(m.name), "model");
	assert_int_equal(pm_state_put_replica(&s, &m, 3, &old, err, sizeof(err)), 0);
	assert_int_equal(s.held, 9 * MiB);
	/* The same replica's owner is not superseded by itself. */
	assert_int_equal(pm_state_drop_superseded(&s, 2, "model", 1, release, NULL), 0);
	/* Node 4's replica of rank 2's model arrives here. */
	m.owner_node = 4;
	m.grank = 2;
	m.version = 1;
	m.size = 1 * MiB;
	assert_int_equal(pm_state_put_replica(&s, &m, 4, &old, err, sizeof(err)), 0);
	assert_int_equal(pm_state_drop_superseded(&s, 2, "model", 4, release, NULL), 1);
	assert_int_equal(released[1], 1);
	assert_int_equal(s.held, 7 * MiB);
	assert_int_equal(pm_state_find(&s, 2, "model")->owner_node, 4);
	assert_int_equal(pm_state_find(&s, 2, "opt")->owner_node, 1);
	assert_int_equal(pm_state_find(&s, 7, "model")->owner_node, 1);
	/* This node's own save of rank 7's model supersedes every replica of it. */
	save(&s, 7, "model", 2 * MiB, 5, &old);
	assert_int_equal(pm_state_drop_superseded(&s, 7, "model", 3, release, NULL), 1);
	assert_int_equal(released[3], 1);
	assert_int_equal(s.held, 6 * MiB);
	assert_false(pm_state_find(&s, 7, "model")->replica);
	pm_state_clear(&s, release, NULL);
	assert_int_equal(released[2] + released[4] + released[5], 3);
	assert_int_equal(released[1] + released[3], 2); /* none twice */
}

static void test_buddy(void **state)
{
	/* racks of 4 nodes: 0-3, 4-7 */
	static const uint32_t rack[8] = { 0, 0, 0, 0, 1, 1, 1, 1 };
	/* one rack of 6 and one of 2 */
	static const uint32_t uneven[8] = { 0, 0, 0, 0, 0, 0, 1, 1 };
	int seen[8] = { 0 };
	(void)state;

	assert_int_equal(pm_state_buddy(0, 1, NULL), -1);
	assert_int_equal(pm_state_buddy(2, 2, NULL), -1);
	assert_int_equal(pm_state_buddy(0, 2, NULL), 1);
	assert_int_equal(pm_state_buddy(1, 2, NULL), 0);
	for (uint32_t i = 0; i < 8; i++) {
		long b = pm_state_buddy(i, 8, rack);
		assert_true(b >= 0 && b < 8);
		assert_int_not_equal(rack[b], rack[i]); /* another rack */
		seen[b]++;
	}
	for (int i = 0; i < 8; i++)
		assert_int_equal(seen[i], 1); /* each node one node's buddy */
	for (uint32_t i = 0; i < 5; i++) /* odd sizes: never itself */
		assert_int_not_equal(pm_state_buddy(i, 5, NULL), (long)i);
	for (uint32_t i = 0; i < 8; i++) /* always another rack when there is one */
		assert_int_not_equal(uneven[pm_state_buddy(i, 8, uneven)], uneven[i]);
	{
		static const uint32_t one[3] = { 5, 5, 5 };
		for (uint32_t i = 0; i < 3; i++)
			assert_int_not_equal(pm_state_buddy(i, 3, one), (long)i);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_versions_replace),
		cmocka_unit_test(test_abort_keeps_last_good),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_may_access),
		cmocka_unit_test(test_mark_safe),
		cmocka_unit_test(test_replicas_and_spare),
		cmocka_unit_test(test_own_before_replica),
		cmocka_unit_test(test_superseded),
		cmocka_unit_test(test_drop_rank),
		cmocka_unit_test(test_buddy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
