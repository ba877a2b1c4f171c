/* Unit tests of runtime/common/liveness.c: when a link's peer is lost.
 * Timeout 5000 ms, period 1666 ms, as with --procmgr-peer-timeout=5. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/liveness.h"

#define T 5000u
#define P 1666u

/* A peer heard from every period is never lost. */
static void test_live_peer(void **state)
{
	uint64_t tick = 0, now;
	(void)state;

	for (now = 1000; now < 60000; now += P)
		assert_false(pm_live_lost(&tick, now - P, now, T));
}

/* A peer silent for good is lost within timeout + 2 periods of its last
 * word, and not before timeout + 1 period. */
static void test_silent_peer_lost_within_bound(void **state)
{
	uint64_t tick = 0, rx = 10000, now;
	(void)state;

	for (now = rx; now <= rx + T + 2 * P; now += P) {
		bool lost = pm_live_lost(&tick, rx, now, T);
		if (lost) {
			assert_true(now - rx >= T + P);
			return;
		}
	}
	fail_msg("a silent peer was not lost within %u ms", T + 2 * P);
}

/* This process was stopped for 4 s (under the timeout): its first tick
 * after it resumes comes late and judges nobody, whatever was read last. */
static void test_late_tick_judges_nobody(void **state)
{
	uint64_t tick = 0, rx;
	(void)state;

	assert_false(pm_live_lost(&tick, 10000, 10000, T));
	/* Last heard 1.6 s before the stop; the stop lasts 4 s. */
	rx = 10000 - 1600;
	assert_true(pm_live_late(10000, 10000 + 4000, T));
	assert_false(pm_live_lost(&tick, rx, 10000 + 4000, T));
	/* The next tick, on time, judges again: what was read meanwhile
	 * counts; a peer still silent is lost then. */
	assert_false(pm_live_lost(&tick, 10000 + 4001, 10000 + 4000 + P, T));
	assert_true(pm_live_lost(&tick, rx, 10000 + 4000 + 2 * P, T));
}

/* A peer stopped for just under the timeout, whatever the phase of its
 * last ping, is not lost by a tick on time. */
static void test_peer_stopped_under_timeout_not_lost(void **state)
{
	uint64_t tick, now, phase;
	(void)state;

	for (phase = 0; phase <= P; phase += 100) {
		/* Its last ping at 10000; stopped at 10000 + phase, for 4.9 s;
		 * our ticks every period meanwhile, until its next ping. */
		uint64_t resumed = 10000 + phase + 4900;
		tick = 0;
		for (now = 10000 + 7; now < resumed; now += P)
			assert_false(pm_live_lost(&tick, 10000, now, T));
	}
}

static void test_no_timeout_no_judgement(void **state)
{
	uint64_t tick = 0;
	(void)state;

	assert_false(pm_live_lost(&tick, 0, 1000000, 0));
	assert_false(pm_live_late(0, 1000000, T));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_live_peer),
		cmocka_unit_test(test_silent_peer_lost_within_bound),
		cmocka_unit_test(test_late_tick_judges_nobody),
		cmocka_unit_test(test_peer_stopped_under_timeout_not_lost),
		cmocka_unit_test(test_no_timeout_no_judgement),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
