/* Unit tests of the environment built for execve before the child exists
 * (runtime/common/envlist.c): the base untouched, a name set in place of
 * every one it had, names that only begin alike left alone, unset, and
 * nothing held after free. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "common/envlist.h"

static size_t count(char *const *v)
{
	size_t n = 0;
	while (v[n])
		n++;
	return n;
}

static void test_copy_and_set_in_place(void **state)
{
	char *base[] = { "A=1", "RANK=3", "RANKS=x", "B=2", NULL };
	struct pm_envlist e;
	(void)state;

	assert_int_equal(pm_envlist_init(&e, base), 0);
	assert_int_equal(pm_envlist_set(&e, "RANK", "7"), 0);
	assert_int_equal(count(e.v), 4);
	assert_string_equal(e.v[1], "RANK=7"); /* where it was */
	assert_string_equal(e.v[2], "RANKS=x"); /* a longer name is another */
	assert_string_equal(base[1], "RANK=3"); /* the base is not written */
	assert_int_equal(pm_envlist_setf(&e, "NEW", "%d-%s", 5, "y"), 0);
	assert_int_equal(count(e.v), 5);
	assert_string_equal(e.v[4], "NEW=5-y");
	assert_string_equal(pm_envlist_get(&e, "NEW"), "5-y");
	assert_null(pm_envlist_get(&e, "RAN"));
	pm_envlist_free(&e);
}

static void test_duplicates_go(void **state)
{
	char *base[] = { "X=1", "Y=2", "X=3", "X=4", NULL };
	struct pm_envlist e;
	(void)state;

	assert_int_equal(pm_envlist_init(&e, base), 0);
	assert_int_equal(pm_envlist_set(&e, "X", "9"), 0);
	assert_int_equal(count(e.v), 2);
	assert_string_equal(e.v[0], "X=9");
	assert_string_equal(e.v[1], "Y=2");
	pm_envlist_unset(&e, "Y");
	assert_int_equal(count(e.v), 1);
	assert_int_equal(e.n, 1);
	pm_envlist_unset(&e, "Z"); /* absent: nothing */
	assert_int_equal(e.n, 1);
	pm_envlist_free(&e);
}

static void test_grows_from_empty(void **state)
{
	struct pm_envlist e;
	char name[16], long_value[200];
	(void)state;

	assert_int_equal(pm_envlist_init(&e, NULL), 0);
	assert_int_equal(e.n, 0);
	assert_null(e.v[0]);
	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "V%d", i);
		assert_int_equal(pm_envlist_setf(&e, name, "%d", i), 0);
		/* set again: replaced, not added */
		assert_int_equal(pm_envlist_setf(&e, name, "%d", i * 2), 0);
	}
	assert_int_equal(count(e.v), 100);
	assert_string_equal(pm_envlist_get(&e, "V99"), "198");
	memset(long_value, 'z', sizeof(long_value) - 1);
	long_value[sizeof(long_value) - 1] = '\0';
	assert_int_equal(pm_envlist_setf(&e, "L", "%s", long_value), 0); /* over setf's buffer */
	assert_string_equal(pm_envlist_get(&e, "L"), long_value);
	pm_envlist_free(&e);
	assert_null(e.v);
}

static void test_bad_names(void **state)
{
	struct pm_envlist e;
	(void)state;

	assert_int_equal(pm_envlist_init(&e, NULL), 0);
	errno = 0;
	assert_int_equal(pm_envlist_set(&e, "", "x"), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(pm_envlist_set(&e, "A=B", "x"), -1);
	assert_int_equal(e.n, 0);
	pm_envlist_free(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_copy_and_set_in_place),
		cmocka_unit_test(test_duplicates_go),
		cmocka_unit_test(test_grows_from_empty),
		cmocka_unit_test(test_bad_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
