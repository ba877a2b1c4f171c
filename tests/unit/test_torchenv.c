/* torchrun's defaults: set when missing, never over the user's. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "common/torchenv.h"

struct env { char names[16][64], values[16][64]; int n; int fail_on; };

static int isset(void *ctx, const char *name)
{
	struct env *e = ctx;
	for (int i = 0; i < e->n; i++)
		if (!strcmp(e->names[i], name))
			return 1;
	return 0;
}

static int set(void *ctx, const char *name, const char *value)
{
	struct env *e = ctx;
	if (e->n == 16 || e->n == e->fail_on)
		return -1;
	snprintf(e->names[e->n], 64, "%s", name);
	snprintf(e->values[e->n++], 64, "%s", value);
	return 0;
}

static const char *get(const struct env *e, const char *name)
{
	for (int i = 0; i < e->n; i++)
		if (!strcmp(e->names[i], name))
			return e->values[i];
	return NULL;
}

static void test_defaults(void **state)
{
	struct env e = { .n = 0, .fail_on = -1 };
	(void)state;

	assert_int_equal(pm_torchenv_defaults(4, isset, set, &e), 0);
	assert_string_equal(get(&e, "ROLE_NAME"), "default");
	assert_string_equal(get(&e, "TORCH_NCCL_ASYNC_ERROR_HANDLING"), "1");
	assert_string_equal(get(&e, "NCCL_ASYNC_ERROR_HANDLING"), "1");
	assert_string_equal(get(&e, "OMP_NUM_THREADS"), "1");
	assert_int_equal(e.n, 4);
}

static void test_one_rank_keeps_threads(void **state)
{
	struct env e = { .n = 0, .fail_on = -1 };
	(void)state;

	/* torchrun too leaves OpenMP alone with one process per node. */
	assert_int_equal(pm_torchenv_defaults(1, isset, set, &e), 0);
	assert_null(get(&e, "OMP_NUM_THREADS"));
	assert_string_equal(get(&e, "ROLE_NAME"), "default");
}

static void test_user_wins(void **state)
{
	struct env e = { .n = 0, .fail_on = -1 };
	(void)state;

	set(&e, "ROLE_NAME", "trainer");
	set(&e, "NCCL_ASYNC_ERROR_HANDLING", "0");
	set(&e, "TORCH_NCCL_ASYNC_ERROR_HANDLING", "3");
	set(&e, "OMP_NUM_THREADS", "16"); /* the user's, or the binding's */
	assert_int_equal(pm_torchenv_defaults(8, isset, set, &e), 0);
	assert_int_equal(e.n, 4);
	assert_string_equal(get(&e, "ROLE_NAME"), "trainer");
	assert_string_equal(get(&e, "NCCL_ASYNC_ERROR_HANDLING"), "0");
	assert_string_equal(get(&e, "TORCH_NCCL_ASYNC_ERROR_HANDLING"), "3");
	assert_string_equal(get(&e, "OMP_NUM_THREADS"), "16");
}

static void test_set_fails(void **state)
{
	struct env e = { .n = 0, .fail_on = 1 };
	(void)state;

	assert_int_equal(pm_torchenv_defaults(2, isset, set, &e), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_one_rank_keeps_threads),
		cmocka_unit_test(test_user_wins),
		cmocka_unit_test(test_set_fails),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
