/* procmgr status of a sweep (runtime/cli/sweep_status.c): the root's
 * "trial ..." lines (procmgrd/sweep_run.h) into a table and JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/sweep_status.h"

static char *printed(void (*fn)(FILE *, const struct pm_trials_st *),
		     const struct pm_trials_st *a)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	fn(f, a);
	fclose(f);
	return buf;
}

static void test_parse(void **state)
{
	struct pm_trials_st a = { 0 };
	(void)state;

	assert_int_equal(pm_trials_st_add(&a, "node 0 ..."), 0);
	assert_int_equal(pm_trials_st_add(&a, "trial lr0.1 running pq1:0,1/pq2:0 1 2500 - -"), 1);
	assert_int_equal(pm_trials_st_add(&a, "trial bad failed - 2 80 7 loss is NaN: at step 3"), 1);
	assert_int_equal(pm_trials_st_add(&a, "trial q queued - 0 0 - -"), 1);
	assert_int_equal(pm_trials_st_add(&a, "trial d done - 0 1000 0 -"), 1);
	/* Malformed: too few words. */
	assert_int_equal(pm_trials_st_add(&a, "trial x running"), -1);
	assert_int_equal(a.n, 4);
	assert_string_equal(a.t[0].name, "lr0.1");
	assert_string_equal(a.t[0].slots, "pq1:0,1/pq2:0");
	assert_int_equal(a.t[0].restarts, 1);
	assert_int_equal((int)a.t[0].runtime_ms, 2500);
	assert_string_equal(a.t[1].exit, "7");
	assert_string_equal(a.t[1].error, "loss is NaN: at step 3");
	pm_trials_st_free(&a);
}

static void test_summary_and_table(void **state)
{
	struct pm_trials_st a = { 0 };
	char sum[160], *out;
	(void)state;

	pm_trials_st_add(&a, "trial r running pq1:0 0 2500 - -");
	pm_trials_st_add(&a, "trial s restarting pq1:1 1 300 - -");
	pm_trials_st_add(&a, "trial bad failed - 2 80 7 boom");
	pm_trials_st_add(&a, "trial q queued - 0 0 - -");
	pm_trials_st_add(&a, "trial d done - 0 1000 0 -");
	pm_trials_st_summary(&a, sum, sizeof(sum));
	assert_string_equal(sum, "5 trials: 1 done, 2 running, 1 queued, 1 failed");
	out = printed(pm_trials_st_print, &a);
	assert_non_null(strstr(out, "sweep: 5 trials: 1 done, 2 running, 1 queued, 1 failed\n"));
	assert_non_null(strstr(out, "TRIAL"));
	/* A queued trial has no runtime; "-" errors print blank. */
	assert_non_null(strstr(out, "\nq                    queued     -                        0        -        -     \n"));
	assert_non_null(strstr(out, "boom\n"));
	free(out);
	out = printed(pm_trials_st_json, &a);
	assert_non_null(strstr(out, ",\"sweep\":{\"trials\":5,\"done\":1,\"running\":2,\"queued\":1,"
				"\"failed\":1},\"trials\":[{\"trial\":\"r\",\"state\":\"running\","
				"\"slots\":\"pq1:0\",\"restarts\":0,\"runtime_ms\":2500,\"exit\":null,"
				"\"error\":null}"));
	assert_non_null(strstr(out, "{\"trial\":\"bad\",\"state\":\"failed\",\"slots\":\"\","
				"\"restarts\":2,\"runtime_ms\":80,\"exit\":7,\"error\":\"boom\"}"));
	free(out);
	pm_trials_st_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_summary_and_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
