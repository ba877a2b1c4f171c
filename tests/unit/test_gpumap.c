#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "affinity/gpumap.h"

static void test_renumbered(void **state)
{
	(void)state;
	/* ConstrainDevices=yes: the task sees its 2 GPUs as 0,1. */
	assert_true(pm_gpus_renumbered("4,5", "0,1"));
	assert_true(pm_gpus_renumbered("1,3,5,7", "0,1,2,3"));
	/* Not constrained: Slurm's value is the node's numbering. */
	assert_false(pm_gpus_renumbered("4,5", "4,5"));
	assert_false(pm_gpus_renumbered("0,1", "0,1"));
	/* Anything else is not recognised as a renumbering. */
	assert_false(pm_gpus_renumbered("4,5", "0"));
	assert_false(pm_gpus_renumbered("4,5", "1,0"));
	assert_false(pm_gpus_renumbered("4,5", "GPU-uuid,x"));
	assert_false(pm_gpus_renumbered(NULL, "0,1"));
	assert_false(pm_gpus_renumbered("4,5", NULL));
	assert_false(pm_gpus_renumbered("", ""));
	assert_false(pm_gpus_renumbered("4,,5", "0,1"));
}

static void test_to_task(void **state)
{
	char out[64];
	(void)state;
	assert_int_equal(pm_gpus_to_task("4,5,6,7", "6", out, sizeof(out)), 0);
	assert_string_equal(out, "2");
	assert_int_equal(pm_gpus_to_task("4,5,6,7", "4,6", out, sizeof(out)), 0);
	assert_string_equal(out, "0,2");
	assert_int_equal(pm_gpus_to_task("7,3", "3", out, sizeof(out)), 0);
	assert_string_equal(out, "1");
	/* Not a GPU of the step. */
	assert_int_equal(pm_gpus_to_task("4,5", "6", out, sizeof(out)), -1);
	assert_int_equal(pm_gpus_to_task("4,5", "", out, sizeof(out)), -1);
	assert_int_equal(pm_gpus_to_task("4,5", "4,x", out, sizeof(out)), -1);
	/* Does not fit. */
	assert_int_equal(pm_gpus_to_task("4,5,6,7,8,9,10,11,12,13,14", "14,13", out, 3), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_renumbered),
		cmocka_unit_test(test_to_task),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
