/* Unit tests of runtime/procmgrd/gate_rule.c: who gets room at the tree
 * port, and how fast credentials are decoded. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include "cmocka_compat.h"

#include "procmgrd/gate_rule.h"

/* Strangers fill their room; then the oldest of it is told busy and the
 * newcomer taken. A step node still gets in, whatever the strangers hold. */
static void test_strangers_never_crowd_out_nodes(void **state)
{
	(void)state;
	assert_int_equal(pm_gate_decide(false, 0, false, 0, 0, 16), PM_GATE_TAKE);
	assert_int_equal(pm_gate_decide(false, 15, false, 0, 15, 16), PM_GATE_TAKE);
	assert_int_equal(pm_gate_decide(false, 16, false, 0, 16, 16), PM_GATE_OLDEST_BUSY);
	assert_int_equal(pm_gate_decide(false, 3, false, 0, 1000, 16), PM_GATE_OLDEST_BUSY);
	assert_int_equal(pm_gate_decide(true, 0, false, 1000, 1000, 16), PM_GATE_TAKE);
	assert_int_equal(pm_gate_decide(true, PM_GATE_NODE_ROOM - 1, false, 16, 16, 16),
			 PM_GATE_TAKE);
}

/* Issue 32 item 6: another user's flood of silent connections fills the
 * silent room; a connection whose request is there at accept (the procmgr
 * command's) has a room of its own, whatever the silent ones hold. Before,
 * one shared room: the owner was told busy 3 times out of 3. */
static void test_silent_flood_never_crowds_out_a_request(void **state)
{
	(void)state;
	for (int silent = 0; silent <= 100000; silent = silent * 10 + 16) {
		assert_int_equal(pm_gate_decide(false, silent, true, 0, silent, 16), PM_GATE_TAKE);
		assert_int_equal(pm_gate_decide(false, silent, true, 15, silent, 16),
				 PM_GATE_TAKE);
	}
	/* Those who spoke are bounded too (a flood of first bytes only). */
	assert_int_equal(pm_gate_decide(false, 0, true, 16, 0, 16), PM_GATE_OLDEST_BUSY);
}

/* A node's own room full (another user on that node floods from its
 * address): the newest is taken, the oldest makes way. */
static void test_node_room_full_makes_way(void **state)
{
	(void)state;
	assert_int_equal(pm_gate_decide(true, PM_GATE_NODE_ROOM, false, 0, 0, 16),
			 PM_GATE_MAKE_WAY);
	assert_int_equal(pm_gate_decide(true, PM_GATE_NODE_ROOM + 5, false, 16, 16, 16),
			 PM_GATE_MAKE_WAY);
}

/* The bucket: a burst at once, then the rate, never more. */
static void test_bucket_rate(void **state)
{
	struct pm_bucket b = { 0 };
	uint64_t t = 1000000;
	int i, n = 0;
	(void)state;

	for (i = 0; i < 100; i++)
		n += pm_bucket_take(&b, t, 20, 20);
	assert_int_equal(n, 20);
	/* 1 s of a flood: 20 more, not 1000. */
	n = 0;
	for (i = 1; i <= 1000; i++)
		n += pm_bucket_take(&b, t + (uint64_t)i, 20, 20);
	assert_int_in_range(n, 19, 21);
	/* Quiet for a minute: a burst again, not 1200. */
	n = 0;
	for (i = 0; i < 100; i++)
		n += pm_bucket_take(&b, t + 61000, 20, 20);
	assert_int_equal(n, 20);
}

/* A clock that does not move (or steps back) gives nothing extra. */
static void test_bucket_clock_back(void **state)
{
	struct pm_bucket b = { 0 };
	int i, n = 0;
	(void)state;

	for (i = 0; i < 20; i++)
		assert_true(pm_bucket_take(&b, 5000, 20, 20));
	for (i = 0; i < 10; i++)
		n += pm_bucket_take(&b, 4000, 20, 20);
	assert_int_equal(n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_strangers_never_crowd_out_nodes),
		cmocka_unit_test(test_silent_flood_never_crowds_out_a_request),
		cmocka_unit_test(test_node_room_full_makes_way),
		cmocka_unit_test(test_bucket_rate),
		cmocka_unit_test(test_bucket_clock_back),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
