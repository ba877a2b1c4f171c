/* The step commands' shared command line (runtime/cli/cliargs.c): flags
 * from the table, a value with its check, one JOBID[.STEP], help, and a
 * bad argument refused with exit 2. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "cli/cliargs.h"

static int json, follow;
static const char *list;

static int check_digits(const char *v, char *why, size_t len)
{
	if (strspn(v, "0123456789") == strlen(v))
		return 0;
	snprintf(why, len, "not digits");
	return -1;
}

static const struct pm_cli_opt opts[] = {
	{ "--json", NULL, &json, NULL, NULL },
	{ "--follow", "-f", &follow, NULL, NULL },
	{ "--rank", NULL, NULL, &list, check_digits },
	{ NULL, NULL, NULL, NULL, NULL },
};

static int parse(const char **id, bool needed, int argc, ...)
{
	char *argv[16];
	va_list ap;
	int i;

	json = follow = 0;
	list = "-";
	argv[0] = "cmd";
	va_start(ap, argc);
	for (i = 1; i <= argc; i++)
		argv[i] = va_arg(ap, char *);
	va_end(ap);
	return pm_cli_args("test", argc + 1, argv, opts, id, needed, "usage: test\n");
}

static void test_flags_value_and_id(void **state)
{
	const char *id;
	(void)state;

	assert_int_equal(parse(&id, true, 5, "--json", "12.3", "-f", "--rank", "7"), 0);
	assert_string_equal(id, "12.3");
	assert_int_equal(json, 1);
	assert_int_equal(follow, 1);
	assert_string_equal(list, "7");
	assert_int_equal(parse(&id, false, 0), 0);
	assert_null(id);
	assert_int_equal(json, 0);
}

static void test_help(void **state)
{
	const char *id;
	(void)state;

	assert_int_equal(parse(&id, true, 2, "--json", "-h"), 1);
	assert_int_equal(parse(&id, true, 1, "--help"), 1);
}

static void test_refused(void **state)
{
	const char *id;
	(void)state;

	assert_int_equal(parse(&id, false, 1, "--bogus"), 2);
	assert_int_equal(parse(&id, false, 2, "1", "2"), 2);   /* one step only */
	assert_int_equal(parse(&id, true, 1, "--json"), 2);    /* which step? */
	assert_int_equal(parse(&id, true, 2, "1", "--rank"), 2); /* no value */
	assert_int_equal(parse(&id, true, 3, "--rank", "x", "1"), 2); /* its check */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flags_value_and_id),
		cmocka_unit_test(test_help),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
