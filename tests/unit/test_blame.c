/* A hang's blame: the oldest heartbeat only when it leads by more than
 * the heartbeats resolve, else the one rank whose stack differs, else
 * nobody. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "common/blame.h"
#include "common/stacks.h"

#define WAIT "python:\n  File \"train.py\", line 40, in step\n  File \"dist.py\", line 9, in all_reduce\n"
#define SPIN "python:\n  File \"train.py\", line 40, in step\n  File \"train.py\", line 12, in spin\n"
#define SLEEP "python:\n  File \"train.py\", line 40, in step\n  File \"train.py\", line 20, in nap\n"

static int outlier(const char *const *stacks, const int *ranks, int n)
{
	int group[16];
	int ng = pm_stack_group(stacks, ranks, n, group);

	return pm_blame_outlier(group, ranks, n, ng);
}

static void test_outlier(void **state)
{
	const char *common[] = { WAIT, WAIT, SPIN, WAIT };
	const char *two[] = { WAIT, SPIN, SPIN, WAIT };
	const char *three[] = { WAIT, SPIN, SLEEP, WAIT };
	const char *same[] = { WAIT, WAIT, WAIT };
	const char *pair[] = { WAIT, SPIN };
	int ranks[] = { 4, 5, 6, 7 };
	(void)state;

	assert_int_equal(outlier(common, ranks, 4), 6);
	assert_int_equal(outlier(two, ranks, 4), -1);   /* two and two: no one stands out */
	assert_int_equal(outlier(three, ranks, 4), -1); /* two ranks elsewhere */
	assert_int_equal(outlier(same, ranks, 3), -1);
	assert_int_equal(outlier(pair, ranks, 2), -1);  /* which of two is odd? */
}

static void test_hang(void **state)
{
	struct pm_blame b;
	(void)state;

	/* The coin toss: 1 ms ahead of the next, all waiting alike. */
	b = pm_blame_hang(3, 7, 1, PM_BLAME_RESOLUTION_MS, -1);
	assert_int_equal(b.by, PM_BLAME_NONE);
	assert_int_equal(b.rank, -1);
	assert_string_equal(pm_blame_name(b.by), "none");
	/* The same tie, rank 5's stack elsewhere. */
	b = pm_blame_hang(3, 7, 1, PM_BLAME_RESOLUTION_MS, 5);
	assert_int_equal(b.by, PM_BLAME_STACK);
	assert_int_equal(b.rank, 5);
	/* A lead the heartbeats resolve is evidence, the stacks aside. */
	b = pm_blame_hang(3, 7, PM_BLAME_RESOLUTION_MS, PM_BLAME_RESOLUTION_MS, 5);
	assert_int_equal(b.by, PM_BLAME_HEARTBEAT);
	assert_int_equal(b.rank, 3);
	/* Judged hung alone: the others beat on until the stop. */
	b = pm_blame_hang(2, 0, 0, PM_BLAME_RESOLUTION_MS, -1);
	assert_int_equal(b.by, PM_BLAME_HEARTBEAT);
	assert_int_equal(b.rank, 2);
	assert_string_equal(pm_blame_name(PM_BLAME_STACK), "stack");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_outlier),
		cmocka_unit_test(test_hang),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
