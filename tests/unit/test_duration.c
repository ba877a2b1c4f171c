/* pm_duration_parse: every form it takes, and what it refuses. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "common/duration.h"

struct ok { const char *s; unsigned ms; };

static void test_forms(void **state)
{
	static const struct ok ok[] = {
		/* Plain seconds, as before: not Slurm's minutes. */
		{ "0", 0 }, { "10", 10000 }, { "0.5", 500 }, { "1.25", 1250 },
		{ "0.001", 1 }, { "059", 59000 }, { "0000000000000000000001", 1000 },
		{ "604800", 604800000u }, { "604799.999", 604799999u },
		/* Units. */
		{ "90s", 90000 }, { "0.5s", 500 }, { "5m", 300000 }, { "1.5m", 90000 },
		{ "2h", 7200000 }, { "0.25h", 900000 }, { "1d", 86400000 },
		{ "7d", 604800000u }, { "0m", 0 }, { "0.001m", 60 },
		/* Slurm's forms. */
		{ "1:30", 90000 }, { "0:05", 5000 }, { "90:00", 5400000 },
		{ "1:02:03", 3723000 }, { "0:00:01", 1000 }, { "48:00:00", 172800000u },
		{ "1-0", 86400000 }, { "1-2", 93600000 }, { "0-0:30", 1800000 },
		{ "1-2:03", 93780000 }, { "1-02:03:04", 93784000 }, { "6-23:59:59", 604799000u },
		{ "7-0", 604800000u },
	};
	size_t i;
	(void)state;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		unsigned ms = 4242;
		if (pm_duration_parse(ok[i].s, &ms) || ms != ok[i].ms)
			fail_msg("'%s': got %u ms, expected %u", ok[i].s, ms, ok[i].ms);
	}
}

static void test_refused(void **state)
{
	static const char *const bad[] = {
		"", "-1", "+1", "-0", "1.", ".5", "1..5", "1.2.3", "0.0001", "1.2345",
		"1e3", "10 ", " 10", "0x10", "abc", "1,5", "s", "m", "1sm", "1S", "1M",
		"1w", "1ms", "5 m", "1.m", "99999999999999999999999", "4294967296",
		/* Past a week, in every form. */
		"604801", "604800.001", "10081m", "169h", "8d", "7.001d", "168:00:01",
		"7-0:00:01", "10080:01",
		/* Slurm's forms: fields in range, nothing left out or added. */
		"1:60", "1:60:00", "1:00:60", "1-24", "1-0:60", "1-0:0:60", ":30", "1:",
		"1::2", "1:2:3:4", "1-", "-1:00", "1-2-3", "1-2:3:4:5", "1:30s",
		"1-2h", "1.5:00", "1:30.5", "1-0.5",
	};
	size_t i;
	(void)state;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		unsigned ms = 4242;
		if (!pm_duration_parse(bad[i], &ms))
			fail_msg("'%s' accepted as %u ms", bad[i], ms);
		/* A refused value leaves the output alone. */
		assert_int_equal(ms, 4242);
	}
	{
		unsigned ms = 0;
		assert_int_equal(pm_duration_parse(NULL, &ms), -1);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forms),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
