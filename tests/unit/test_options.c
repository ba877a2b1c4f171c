#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "options.h"
#include "checkspec.h"

static char err[PM_ERRLEN];

static void test_placeholder(void **state)
{
	struct pm_opts o;
	(void)state;
	pm_opts_init(&o);
	assert_int_equal(pm_opt_parse(&o, "restart", "on-failure:2", err, sizeof(err)), 0);
	assert_int_equal(o.restart_max, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_placeholder),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
