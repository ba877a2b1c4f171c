/* Unit tests of runtime/procmgrd/admit.c: the bounds on the connections a
 * rank (or any process of the job's user) may hold to procmgrd's sockets,
 * and the descriptors kept for the tree, the command and the supervisors
 * (issue 32 item 4). */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "procmgrd/admit.h"

static const struct pm_admit_cfg state_cfg = { .per_peer = PM_ADMIT_STATE_PER_RANK,
					       .per_socket = PM_ADMIT_STATE_MAX,
					       .reserve = 100 };

/* One rank opening connection after connection: the first per_peer are
 * taken, every one after is refused, whatever room the socket and the
 * descriptors have; another rank still gets in. */
static void test_per_rank(void **state)
{
	struct pm_admit_now n = { .fd = 10, .fd_limit = 65536 };
	unsigned i, taken = 0;
	(void)state;

	for (i = 0; i < 12000; i++) {
		n.peer = taken;
		n.socket = taken;
		if (pm_admit_decide(&state_cfg, &n) == PM_ADMIT_TAKE)
			taken++;
		else
			assert_int_equal(pm_admit_decide(&state_cfg, &n), PM_ADMIT_PEER_FULL);
	}
	assert_int_equal(taken, PM_ADMIT_STATE_PER_RANK);
	n.peer = 0;
	assert_int_equal(pm_admit_decide(&state_cfg, &n), PM_ADMIT_TAKE);
}

/* Many ranks, each within its share: the socket's own bound. */
static void test_per_socket(void **state)
{
	struct pm_admit_now n = { .peer = 1, .socket = PM_ADMIT_STATE_MAX - 1, .fd = 10,
				  .fd_limit = 65536 };
	(void)state;
	assert_int_equal(pm_admit_decide(&state_cfg, &n), PM_ADMIT_TAKE);
	n.socket = PM_ADMIT_STATE_MAX;
	assert_int_equal(pm_admit_decide(&state_cfg, &n), PM_ADMIT_SOCKET_FULL);
}

/* The class of descriptor limits: for each, the last descriptor taken
 * leaves exactly the reserve, and the reserve wins over any share. */
static void test_reserve(void **state)
{
	static const unsigned limits[] = { 256, 1024, 4096, 65536, 1048576 };
	struct pm_admit_cfg cfg = { .reserve = 100 };
	(void)state;

	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		struct pm_admit_now n = { .fd_limit = limits[i] };
		n.fd = limits[i] - 101;
		assert_int_equal(pm_admit_decide(&cfg, &n), PM_ADMIT_TAKE);
		n.fd++;
		assert_int_equal(pm_admit_decide(&cfg, &n), PM_ADMIT_RESERVE);
		n.fd = limits[i] - 1;
		assert_int_equal(pm_admit_decide(&cfg, &n), PM_ADMIT_RESERVE);
		n.peer = n.socket = 0;
		assert_int_equal(pm_admit_decide(&state_cfg, &n), PM_ADMIT_RESERVE);
	}
	/* A reserve over the whole limit: nothing is taken. */
	cfg.reserve = 5000;
	assert_int_equal(pm_admit_decide(&cfg, &(struct pm_admit_now){ .fd = 3, .fd_limit = 4096 }),
			 PM_ADMIT_RESERVE);
	/* The reserve grows with what the node must keep. */
	assert_true(pm_admit_reserve(32, 8) > pm_admit_reserve(0, 1));
	assert_true(pm_admit_reserve(0, 0) >= PM_ADMIT_RESERVE_BASE);
}

/* What the peer is told says what was over which bound. */
static void test_why(void **state)
{
	char buf[300];
	struct pm_admit_now n = { .peer = 32, .socket = 40, .fd = 900, .fd_limit = 1024 };
	(void)state;

	pm_admit_why(PM_ADMIT_PEER_FULL, &state_cfg, &n, "the state socket", "rank 3", buf,
		     sizeof(buf));
	assert_string_equal(buf, "refused: rank 3 holds 32 connections to the state socket, at "
				 "most 32 are allowed (close one first)");
	pm_admit_why(PM_ADMIT_SOCKET_FULL, &state_cfg, &n, "the state socket", "rank 3", buf,
		     sizeof(buf));
	assert_non_null(strstr(buf, "the state socket holds 40 connections, at most 1024"));
	pm_admit_why(PM_ADMIT_RESERVE, &state_cfg, &n, "the state socket", "rank 3", buf,
		     sizeof(buf));
	assert_non_null(strstr(buf, "901 of its 1024 descriptors in use; the last 100 are kept"));
}

/* Out of descriptors: the listener rests, longer each time, never more
 * than a second; which errors are that. */
static void test_backoff(void **state)
{
	(void)state;
	assert_int_equal(pm_admit_backoff_ms(1), 50);
	assert_int_equal(pm_admit_backoff_ms(2), 100);
	assert_int_equal(pm_admit_backoff_ms(5), 800);
	assert_int_equal(pm_admit_backoff_ms(6), 1000);
	assert_int_equal(pm_admit_backoff_ms(1000), 1000);
	assert_true(pm_admit_starved(EMFILE));
	assert_true(pm_admit_starved(ENFILE));
	assert_true(pm_admit_starved(ENOBUFS));
	assert_false(pm_admit_starved(EAGAIN));
	assert_false(pm_admit_starved(ECONNABORTED));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_per_rank),
		cmocka_unit_test(test_per_socket),
		cmocka_unit_test(test_reserve),
		cmocka_unit_test(test_why),
		cmocka_unit_test(test_backoff),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
