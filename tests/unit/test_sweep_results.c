/* Unit tests of runtime/sweep/sweep_results.c: the results file's TSV and
 * JSON lines, and the summary srun prints. Expected texts are written from
 * the format in sweep_results.h. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sweep/sweep_results.h"

#define CHECK(cond, ...) do { if (!(cond)) fail_msg(__VA_ARGS__); } while (0)

static const struct pm_sr_trial done = { "lr0.1", PM_TS_DONE, 0, 1, 0, 61234, NULL, NULL };
static const struct pm_sr_trial failed = { "7", PM_TS_FAILED, 3, 2, 1, 500,
					   "RuntimeError:\tCUDA \"oom\"\nat x", NULL };
static const struct pm_sr_trial queued = { "q", PM_TS_QUEUED, -1, 0, 0, 0, NULL, NULL };

static void test_tsv(void **state)
{
	char buf[256];

	(void)state;
	assert_string_equal(pm_sr_tsv_header(),
			    "trial\tstate\texit\trestarts\truntime_s\terror\tmetric\tvalue\n");
	assert_int_equal(pm_sr_tsv_line(&done, buf, sizeof(buf)), 28);
	assert_string_equal(buf, "lr0.1\tdone\t0\t1\t61.234\t-\t-\t-\n");
	pm_sr_tsv_line(&failed, buf, sizeof(buf));
	/* The error's tab and line end become blanks: one row of 8 fields. */
	assert_string_equal(buf, "7\tfailed\t3\t2\t0.500\tRuntimeError: CUDA \"oom\" at x\t-\t-\n");
	pm_sr_tsv_line(&queued, buf, sizeof(buf));
	assert_string_equal(buf, "q\tqueued\t-\t0\t0.000\t-\t-\t-\n");
	/* Too small: -1 and nothing half written. */
	assert_int_equal(pm_sr_tsv_line(&done, buf, 10), -1);
	assert_string_equal(buf, "");
	assert_int_equal(pm_sr_tsv_line(&done, buf, 28), -1);
	assert_int_equal(pm_sr_tsv_line(&done, buf, 29), 28);
}

static void test_json(void **state)
{
	char buf[512];

	(void)state;
	pm_sr_json_line(&done, buf, sizeof(buf));
	assert_string_equal(buf, "{\"trial\":\"lr0.1\",\"state\":\"done\",\"exit\":0,\"restarts\":1,"
				 "\"requeues\":0,\"runtime_s\":61.234,\"error\":null,"
				 "\"metric\":null,\"value\":null}\n");
	pm_sr_json_line(&failed, buf, sizeof(buf));
	assert_string_equal(buf, "{\"trial\":\"7\",\"state\":\"failed\",\"exit\":3,\"restarts\":2,"
				 "\"requeues\":1,\"runtime_s\":0.500,"
				 "\"error\":\"RuntimeError:\\tCUDA \\\"oom\\\"\\nat x\","
				 "\"metric\":null,\"value\":null}\n");
	pm_sr_json_line(&queued, buf, sizeof(buf));
	CHECK(strstr(buf, "\"exit\":null"), "[%s]", buf);
	{
		struct pm_sr_trial ctl = queued;

		ctl.error = "a\x01" "b\\";
		pm_sr_json_line(&ctl, buf, sizeof(buf));
		CHECK(strstr(buf, "\"error\":\"a\\u0001b\\\\\","), "[%s]", buf);
	}
	assert_int_equal(pm_sr_json_line(&failed, buf, 40), -1);
}

static void test_summary(void **state)
{
	struct pm_sr_trial t[3] = { done, failed, done };
	char buf[1024];

	(void)state;
	t[2].name = "b";
	pm_sr_summary(t, 3, "/home/u/sweep-12.tsv", buf, sizeof(buf));
	assert_string_equal(buf, "procmgr: sweep of 3 trials: 2 done, 1 failed; results in "
				 "/home/u/sweep-12.tsv\n"
				 "procmgr: trial 7 failed after 2 restarts: RuntimeError: CUDA "
				 "\"oom\" at x\n");
	assert_int_equal(pm_sr_exit_code(t, 3), 1);
	assert_int_equal(pm_sr_exit_code(t, 1), 0);
	pm_sr_summary(t, 1, NULL, buf, sizeof(buf));
	assert_string_equal(buf, "procmgr: sweep of 1 trial: 1 done, 0 failed\n");
	/* Cut by scancel: what never ended is said. */
	{
		struct pm_sr_trial u[3] = { done, queued, done };

		u[2].state = PM_TS_RUNNING;
		pm_sr_summary(u, 3, NULL, buf, sizeof(buf));
		assert_string_equal(buf, "procmgr: sweep of 3 trials: 1 done, 0 failed, 1 running, "
					 "1 never started\n");
		assert_int_equal(pm_sr_exit_code(u, 3), 1);
	}
}

/* 25 failed: 20 listed, then how many more. A small buffer cuts at a line. */
static void test_summary_long(void **state)
{
	struct pm_sr_trial t[25];
	char names[25][16], buf[4096], small[100];
	int i, lines = 0;
	size_t n;

	(void)state;
	for (i = 0; i < 25; i++) {
		t[i] = failed;
		t[i].restarts = 0;
		t[i].error = NULL;
		snprintf(names[i], sizeof(names[i]), "t%d", i);
		t[i].name = names[i];
	}
	n = pm_sr_summary(t, 25, NULL, buf, sizeof(buf));
	assert_int_equal(n, strlen(buf));
	for (i = 0; buf[i]; i++)
		lines += buf[i] == '\n';
	assert_int_equal(lines, 1 + 20 + 1);
	CHECK(strstr(buf, "procmgr: trial t19 failed: no error line\n"), "[%s]", buf);
	CHECK(!strstr(buf, "trial t20 "), "[%s]", buf);
	CHECK(strstr(buf, "procmgr: ... and 5 more failed trials\n"), "[%s]", buf);
	n = pm_sr_summary(t, 25, NULL, small, sizeof(small));
	assert_int_equal(n, strlen(small));
	CHECK(n < sizeof(small), "%zu", n);
}

/* From a queue: the runtime runs from the first start to the end. */
static void test_from_queue(void **state)
{
	struct pm_sq q;
	struct pm_sq_cfg c = { 0 };
	struct pm_sr_trial r;
	int ranks[] = { 1, 1 }, st[2];
	char err[128];

	(void)state;
	c.nodes = 1;
	c.slots_per_node = 1;
	c.policy.mode = PM_RESTART_ON_FAILURE;
	c.policy.max_restarts = 1;
	c.policy.delay_ms = 10;
	c.policy.max_delay_ms = 10;
	c.port_first = 29500;
	c.port_count = 1;
	assert_int_equal(pm_sq_init(&q, &c, ranks, 2, err, sizeof(err)), 0);
	assert_int_equal(pm_sq_schedule(&q, 1000, st, 2), 1);
	assert_int_equal(pm_sq_started(&q, 0, 1000), 0);
	pm_sr_from_queue(&q, 0, "a", 1500, &r);
	assert_int_equal(r.runtime_ms, 500);
	assert_int_equal(r.state, PM_TS_RUNNING);
	assert_int_equal(pm_sq_ended(&q, 0, true, 1, "E", 2000, NULL), PM_TS_RESTARTING);
	assert_int_equal(pm_sq_schedule(&q, 2010, st, 2), 1);
	assert_int_equal(pm_sq_started(&q, 0, 2010), 0);
	assert_int_equal(pm_sq_ended(&q, 0, true, 2, "E2", 3000, NULL), PM_TS_FAILED);
	pm_sr_from_queue(&q, 0, "a", 9999, &r);
	assert_int_equal(r.runtime_ms, 2000);
	assert_int_equal(r.restarts, 1);
	assert_int_equal(r.exit_code, 2);
	assert_string_equal(r.error, "E2");
	pm_sr_from_queue(&q, 1, "b", 9999, &r);
	assert_int_equal(r.runtime_ms, 0);
	assert_int_equal(r.exit_code, -1);
	pm_sq_free(&q);
}

/* A trial's result: its own two columns, last, in the TSV (the columns
 * before keep their numbers); "metric" and "value" (a JSON number even
 * when written ".5") in JSON; something no result is shown as none. */
static void test_result_columns(void **state)
{
	struct pm_sr_trial t = failed;
	char buf[512];

	(void)state;
	t.result = "loss=.5";
	pm_sr_tsv_line(&t, buf, sizeof(buf));
	assert_string_equal(buf, "7\tfailed\t3\t2\t0.500\tRuntimeError: CUDA \"oom\" at x"
				 "\tloss\t.5\n");
	pm_sr_json_line(&t, buf, sizeof(buf));
	CHECK(strstr(buf, "\"metric\":\"loss\",\"value\":0.5}\n"), "[%s]", buf);
	t = done;
	t.result = "acc.top-1=-1.25e-3";
	pm_sr_tsv_line(&t, buf, sizeof(buf));
	assert_string_equal(buf, "lr0.1\tdone\t0\t1\t61.234\t-\tacc.top-1\t-1.25e-3\n");
	pm_sr_json_line(&t, buf, sizeof(buf));
	CHECK(strstr(buf, "\"metric\":\"acc.top-1\",\"value\":-0.00125}"), "[%s]", buf);
	t.result = "not a result";
	pm_sr_tsv_line(&t, buf, sizeof(buf));
	assert_string_equal(buf, "lr0.1\tdone\t0\t1\t61.234\t-\t-\t-\n");
}

/* The queue keeps a trial's result (pm_sq_set_result) and hands it on. */
static void test_result_from_queue(void **state)
{
	struct pm_sq q;
	struct pm_sq_cfg c = { 0 };
	struct pm_sr_trial r;
	int ranks[] = { 1 }, st[1];
	char err[128];

	(void)state;
	c.nodes = 1;
	c.slots_per_node = 1;
	c.port_first = 29500;
	c.port_count = 1;
	assert_int_equal(pm_sq_init(&q, &c, ranks, 1, err, sizeof(err)), 0);
	pm_sr_from_queue(&q, 0, "a", 0, &r);
	assert_null(r.result);
	assert_int_equal(pm_sq_schedule(&q, 1000, st, 1), 1);
	assert_int_equal(pm_sq_started(&q, 0, 1000), 0);
	assert_int_equal(pm_sq_set_result(&q, 0, "loss=1"), 0);
	assert_int_equal(pm_sq_set_result(&q, 0, "loss=0.25"), 0);
	assert_int_equal(pm_sq_ended(&q, 0, false, 0, NULL, 2000, NULL), PM_TS_DONE);
	pm_sr_from_queue(&q, 0, "a", 0, &r);
	assert_string_equal(r.result, "loss=0.25");
	assert_int_equal(pm_sq_set_result(&q, 1, "loss=1"), -1);
	assert_int_equal(pm_sq_set_result(&q, 0, NULL), 0);
	pm_sr_from_queue(&q, 0, "a", 0, &r);
	assert_null(r.result);
	assert_int_equal(pm_sq_set_result(&q, 0, "loss=2"), 0);
	pm_sq_free(&q); /* frees it (ASan) */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_result_columns),
		cmocka_unit_test(test_result_from_queue),
		cmocka_unit_test(test_tsv),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_summary),
		cmocka_unit_test(test_summary_long),
		cmocka_unit_test(test_from_queue),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
