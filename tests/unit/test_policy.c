/* Unit tests of runtime/common/policy.c: the restart decision at the end of a
 * generation, the exponential backoff, and how a rank's wait status is
 * turned into the step's exit code and into words.
 *
 * Expected values are worked out from policy.h (never / on-failure:N /
 * always:N, doubling delay capped at max_delay_ms, exit code or 128 +
 * signal as a shell reports it), not copied from a run of the code. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/options.h"
#include "common/policy.h"

#define CHECK(cond, ...) do { if (!(cond)) fail_msg(__VA_ARGS__); } while (0)

#define UNTOUCHED 0xdecafbadu

static const char *mode_name(enum pm_restart_mode m)
{
	switch (m) {
	case PM_RESTART_NEVER: return "never";
	case PM_RESTART_ON_FAILURE: return "on-failure";
	case PM_RESTART_ALWAYS: return "always";
	}
	return "?";
}

static const char *decision_name(enum pm_decision d)
{
	switch (d) {
	case PM_DECIDE_RESTART: return "restart";
	case PM_DECIDE_FINISH: return "finish";
	case PM_DECIDE_ABORT: return "abort";
	}
	return "?";
}

static void policy(struct pm_policy *p, enum pm_restart_mode mode, int max,
		   unsigned delay, unsigned cap)
{
	p->mode = mode;
	p->max_restarts = max;
	p->delay_ms = delay;
	p->max_delay_ms = cap;
}

/* min(delay * 2^restarts, cap), worked out without shifts that overflow. */
static unsigned want_delay(unsigned delay, unsigned cap, int restarts)
{
	unsigned long long d = delay;
	int i;

	if (d >= cap)
		return cap;
	for (i = 0; i < restarts; i++) {
		d *= 2;
		if (d >= cap)
			return cap;
	}
	return (unsigned)d;
}

/* ---- decisions ------------------------------------------------------ */

static void test_decide_table(void **state)
{
	static const enum pm_restart_mode modes[] = {
		PM_RESTART_NEVER, PM_RESTART_ON_FAILURE, PM_RESTART_ALWAYS,
	};
	static const int budgets[] = { 0, 1, 2, 3, 10 };
	size_t mi, bi;

	(void)state;
	for (mi = 0; mi < 3; mi++) {
		for (bi = 0; bi < sizeof(budgets) / sizeof(budgets[0]); bi++) {
			int budget = budgets[bi], restarts, f;

			for (restarts = 0; restarts <= budget + 2; restarts++) {
				for (f = 0; f <= 1; f++) {
					enum pm_restart_mode mode = modes[mi];
					struct pm_policy p;
					enum pm_decision want, got;
					unsigned delay = UNTOUCHED;

					/* The budget of never is 0 from
					 * pm_policy_from_opts, but the
					 * decision must not depend on it. */
					policy(&p, mode, budget, 100, 60000);
					if (mode == PM_RESTART_NEVER)
						want = f ? PM_DECIDE_ABORT : PM_DECIDE_FINISH;
					else if (mode == PM_RESTART_ON_FAILURE)
						want = !f ? PM_DECIDE_FINISH :
						       restarts < budget ? PM_DECIDE_RESTART :
						       PM_DECIDE_ABORT;
					else
						want = restarts < budget ? PM_DECIDE_RESTART :
						       f ? PM_DECIDE_ABORT : PM_DECIDE_FINISH;
					got = pm_policy_decide(&p, restarts, f, &delay);
					CHECK(got == want,
					      "%s:%d after %d restarts, %s: %s, want %s",
					      mode_name(mode), budget, restarts,
					      f ? "failed" : "succeeded",
					      decision_name(got), decision_name(want));
					if (got == PM_DECIDE_RESTART)
						CHECK(delay == want_delay(100, 60000, restarts),
						      "%s:%d restart %d: delay %u",
						      mode_name(mode), budget, restarts, delay);
					else
						CHECK(delay == UNTOUCHED,
						      "%s:%d: %s set the delay to %u",
						      mode_name(mode), budget,
						      decision_name(got), delay);
				}
			}
		}
	}
}

static void test_decide_unknown_mode(void **state)
{
	struct pm_policy p;
	unsigned delay = UNTOUCHED;

	(void)state;
	policy(&p, (enum pm_restart_mode)42, 5, 100, 1000);
	assert_int_equal(pm_policy_decide(&p, 0, true, &delay), PM_DECIDE_ABORT);
	assert_int_equal(pm_policy_decide(&p, 0, false, &delay), PM_DECIDE_ABORT);
	assert_int_equal(delay, UNTOUCHED);
}

/* ---- backoff -------------------------------------------------------- */

static unsigned restart_delay(unsigned delay, unsigned cap, int restarts)
{
	struct pm_policy p;
	unsigned d = UNTOUCHED;

	policy(&p, PM_RESTART_ALWAYS, INT_MAX, delay, cap);
	CHECK(pm_policy_decide(&p, restarts, true, &d) == PM_DECIDE_RESTART,
	      "no restart %d", restarts);
	return d;
}

static void test_backoff_doubling(void **state)
{
	int r;

	(void)state;
	/* 100, 200, 400, ..., 51200, then the cap. */
	assert_int_equal(restart_delay(100, 60000, 0), 100);
	assert_int_equal(restart_delay(100, 60000, 1), 200);
	assert_int_equal(restart_delay(100, 60000, 2), 400);
	assert_int_equal(restart_delay(100, 60000, 9), 51200);
	assert_int_equal(restart_delay(100, 60000, 10), 60000);
	assert_int_equal(restart_delay(100, 60000, 11), 60000);
	assert_int_equal(restart_delay(100, 60000, 1000), 60000);
	assert_int_equal(restart_delay(100, 60000, INT_MAX - 1), 60000);
	for (r = 0; r < 100; r++) {
		assert_int_equal(restart_delay(1, 60000, r), want_delay(1, 60000, r));
		assert_int_equal(restart_delay(7, 1000, r), want_delay(7, 1000, r));
		/* Monotonic, never above the cap. */
		if (r)
			assert_true(restart_delay(3, 50000, r) >=
				    restart_delay(3, 50000, r - 1));
		assert_true(restart_delay(3, 50000, r) <= 50000);
	}
	/* Exactly on the cap. */
	assert_int_equal(restart_delay(15000, 60000, 2), 60000);
	assert_int_equal(restart_delay(15000, 60000, 3), 60000);
}

static void test_backoff_cap(void **state)
{
	(void)state;
	/* A first delay above the cap is capped too. */
	assert_int_equal(restart_delay(90000, 60000, 0), 60000);
	assert_int_equal(restart_delay(90000, 60000, 5), 60000);
	/* No overflow near the top of unsigned. */
	assert_int_equal(restart_delay(UINT_MAX, UINT_MAX, 0), UINT_MAX);
	assert_int_equal(restart_delay(UINT_MAX, UINT_MAX, 3), UINT_MAX);
	assert_int_equal(restart_delay(0x80000001u, UINT_MAX, 1), UINT_MAX);
	assert_int_equal(restart_delay(0x7fffffffu, UINT_MAX, 1), 0xfffffffeu);
	assert_int_equal(restart_delay(0x7fffffffu, UINT_MAX, 2), UINT_MAX);
	/* A cap of 0 means no delay at all. */
	assert_int_equal(restart_delay(100, 0, 0), 0);
	assert_int_equal(restart_delay(100, 0, 4), 0);
}

static void test_backoff_zero(void **state)
{
	int r;

	(void)state;
	for (r = 0; r < 64; r++)
		assert_int_equal(restart_delay(0, 60000, r), 0);
	assert_int_equal(restart_delay(0, 60000, 100000), 0);
	assert_int_equal(restart_delay(0, 0, 3), 0);
}

/* ---- from options --------------------------------------------------- */

static void test_from_opts(void **state)
{
	struct pm_opts o;
	struct pm_policy p;

	(void)state;
	pm_opts_init(&o);
	o.restart = PM_RESTART_ON_FAILURE;
	o.restart_max = 4;
	o.restart_delay_ms = 250;
	memset(&p, 0xff, sizeof(p));
	pm_policy_from_opts(&p, &o);
	assert_int_equal(p.mode, PM_RESTART_ON_FAILURE);
	assert_int_equal(p.max_restarts, 4);
	assert_int_equal(p.delay_ms, 250);
	assert_int_equal(p.max_delay_ms, PM_MAX_DELAY_MS);

	o.restart = PM_RESTART_ALWAYS;
	o.restart_max = 0;
	pm_policy_from_opts(&p, &o);
	assert_int_equal(p.mode, PM_RESTART_ALWAYS);
	assert_int_equal(p.max_restarts, 0);

	/* never has no budget, whatever restart_max holds. */
	o.restart = PM_RESTART_NEVER;
	o.restart_max = 7;
	o.restart_delay_ms = 0;
	pm_policy_from_opts(&p, &o);
	assert_int_equal(p.mode, PM_RESTART_NEVER);
	assert_int_equal(p.max_restarts, 0);
	assert_int_equal(p.delay_ms, 0);
	assert_int_equal(p.max_delay_ms, PM_MAX_DELAY_MS);
}

/* ---- wait statuses -------------------------------------------------- */

static void describe_is(int wstatus, bool hung, const char *want)
{
	char buf[128];

	memset(buf, 'x', sizeof(buf));
	pm_status_describe(wstatus, hung, buf, sizeof(buf));
	assert_string_equal(buf, want);
}

static void test_exit_code_macros(void **state)
{
	int code;

	(void)state;
	for (code = 0; code <= 255; code++)
		assert_int_equal(pm_status_exit_code(W_EXITCODE(code, 0)), code);
	assert_int_equal(pm_status_exit_code(W_EXITCODE(0, SIGKILL)), 137);
	assert_int_equal(pm_status_exit_code(W_EXITCODE(0, SIGTERM)), 143);
	assert_int_equal(pm_status_exit_code(W_EXITCODE(0, SIGINT)), 130);
	assert_int_equal(pm_status_exit_code(W_EXITCODE(0, SIGHUP)), 129);
	/* The core dump bit does not change the code. */
	assert_int_equal(pm_status_exit_code(W_EXITCODE(0, SIGSEGV) | WCOREFLAG), 139);
	assert_int_equal(pm_status_exit_code(W_EXITCODE(0, SIGABRT) | WCOREFLAG), 134);
	/* Neither exited nor killed (stopped, continued): a plain failure. */
	assert_int_equal(pm_status_exit_code(W_STOPCODE(SIGSTOP)), 1);
	assert_int_equal(pm_status_exit_code(W_STOPCODE(SIGTSTP)), 1);
	assert_int_equal(pm_status_exit_code(0xffff), 1);
}

static void test_describe_macros(void **state)
{
	char want[128];

	(void)state;
	describe_is(W_EXITCODE(0, 0), false, "exited with code 0");
	describe_is(W_EXITCODE(3, 0), false, "exited with code 3");
	describe_is(W_EXITCODE(255, 0), false, "exited with code 255");
	snprintf(want, sizeof(want), "was killed by signal 9 (%s)", strsignal(9));
	describe_is(W_EXITCODE(0, SIGKILL), false, want);
	snprintf(want, sizeof(want), "was killed by signal %d (%s)", SIGSEGV,
		 strsignal(SIGSEGV));
	describe_is(W_EXITCODE(0, SIGSEGV) | WCOREFLAG, false, want);
	describe_is(W_STOPCODE(SIGSTOP), false, "ended with status 0x137f");
	/* hung wins over whatever the status says. */
	describe_is(W_EXITCODE(0, SIGKILL), true, "hung (no heartbeat)");
	describe_is(0, true, "hung (no heartbeat)");
}

/* The words are cut to the buffer and always terminated; a zero-length
 * buffer is not written. */
static void test_describe_short_buffer(void **state)
{
	unsigned len;
	const char *full = "exited with code 42";

	(void)state;
	for (len = 1; len <= strlen(full) + 1; len++) {
		char *b = malloc(len); /* exact, for ASan */
		assert_non_null(b);
		pm_status_describe(W_EXITCODE(42, 0), false, b, len);
		assert_int_equal(strlen(b), len - 1);
		assert_memory_equal(b, full, len - 1);
		free(b);
	}
	{
		char b[4] = "abc";
		pm_status_describe(W_EXITCODE(42, 0), false, b, 0);
		assert_string_equal(b, "abc");
	}
}

/* Real statuses from real children. */
static int child_status(int how)
{
	pid_t pid;
	int st;

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit no_core = { 0, 0 };

		setrlimit(RLIMIT_CORE, &no_core);
		if (how >= 0)
			_exit(how);
		signal(-how, SIG_DFL);
		raise(-how);
		_exit(99); /* not reached */
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return st;
}

static void test_real_children(void **state)
{
	static const int codes[] = { 0, 1, 2, 42, 126, 127, 255 };
	static const int sigs[] = { SIGTERM, SIGKILL, SIGINT, SIGUSR1, SIGSEGV, SIGABRT };
	char want[128], got[128];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		int st = child_status(codes[i]);

		assert_int_equal(pm_status_exit_code(st), codes[i]);
		snprintf(want, sizeof(want), "exited with code %d", codes[i]);
		pm_status_describe(st, false, got, sizeof(got));
		assert_string_equal(got, want);
	}
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		int st = child_status(-sigs[i]);

		CHECK(WIFSIGNALED(st), "child did not die of signal %d (0x%x)",
		      sigs[i], (unsigned)st);
		assert_int_equal(pm_status_exit_code(st), 128 + sigs[i]);
		snprintf(want, sizeof(want), "was killed by signal %d (%s)",
			 sigs[i], strsignal(sigs[i]));
		pm_status_describe(st, false, got, sizeof(got));
		assert_string_equal(got, want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decide_table),
		cmocka_unit_test(test_decide_unknown_mode),
		cmocka_unit_test(test_backoff_doubling),
		cmocka_unit_test(test_backoff_cap),
		cmocka_unit_test(test_backoff_zero),
		cmocka_unit_test(test_from_opts),
		cmocka_unit_test(test_exit_code_macros),
		cmocka_unit_test(test_describe_macros),
		cmocka_unit_test(test_describe_short_buffer),
		cmocka_unit_test(test_real_children),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
