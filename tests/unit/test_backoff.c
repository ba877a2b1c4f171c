/* Unit tests of runtime/common/backoff.c: the waits between a child's
 * tries to reach its parent. Bounds worked out from the rule in backoff.h. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/backoff.h"

/* Each wait lies in [e/2, e] for the doubling ceiling e, capped. */
static void test_doubles_within_bounds(void **state)
{
	struct pm_backoff b;
	uint64_t e = 10;
	(void)state;

	pm_backoff_init(&b, 10, 1000, 1000000, 42);
	for (int i = 0; i < 20; i++) {
		long d = pm_backoff_next(&b, 0);
		assert_true(d >= (long)(e / 2) && d <= (long)e);
		e = e * 2 > 1000 ? 1000 : e * 2;
	}
}

/* Children that start together with different seeds do not retry
 * together: their waits differ. */
static void test_jitter_spreads(void **state)
{
	long first[64];
	int distinct = 0;
	(void)state;

	for (int s = 0; s < 64; s++) {
		struct pm_backoff b;
		pm_backoff_init(&b, 10, 1000, 1000000, (uint64_t)s);
		for (int i = 0; i < 7; i++) /* at the cap */
			first[s] = pm_backoff_next(&b, 0);
	}
	for (int s = 0; s < 64; s++) {
		int seen = 0;
		for (int t = 0; t < s; t++)
			seen |= first[t] == first[s];
		distinct += !seen;
	}
	assert_true(distinct > 32);
}

/* The same seed gives the same waits (a test can predict them). */
static void test_deterministic(void **state)
{
	struct pm_backoff a, b;
	(void)state;

	pm_backoff_init(&a, 10, 500, 100000, 7);
	pm_backoff_init(&b, 10, 500, 100000, 7);
	for (int i = 0; i < 10; i++)
		assert_int_equal(pm_backoff_next(&a, 0), pm_backoff_next(&b, 0));
}

/* No wait ends past the deadline; at the deadline, give up. */
static void test_deadline(void **state)
{
	struct pm_backoff b;
	uint64_t now = 0;
	long d;
	int tries = 0;
	(void)state;

	pm_backoff_init(&b, 10, 500, 3000, 1);
	while ((d = pm_backoff_next(&b, now)) >= 0) {
		assert_true(d >= 1);
		now += (uint64_t)d;
		assert_true(now <= 3000);
		tries++;
	}
	assert_int_equal(now, 3000);
	/* 10, 20, ... 320 then 500s: about a dozen tries, not hundreds. */
	assert_true(tries > 5 && tries < 30);
	assert_int_equal(pm_backoff_next(&b, 5000), -1);
}

/* Degenerate settings still give waits of at least 1 ms. */
static void test_degenerate(void **state)
{
	struct pm_backoff b;
	(void)state;

	pm_backoff_init(&b, 0, 0, 100, 3);
	for (int i = 0; i < 5; i++)
		assert_int_equal(pm_backoff_next(&b, 0), 1);
	/* Many attempts at the cap: no overflow, still within it. */
	pm_backoff_init(&b, 1, UINT32_MAX, UINT64_MAX, 3);
	for (int i = 0; i < 200; i++)
		assert_true(pm_backoff_next(&b, 0) <= (long)UINT32_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_doubles_within_bounds),
		cmocka_unit_test(test_jitter_spreads),
		cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_deadline),
		cmocka_unit_test(test_degenerate),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
