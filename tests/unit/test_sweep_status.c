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
	assert_int_equal(pm_trials_st_add(&a, "trial lr0.1 running pq1:0,1/pq2:0 1 2500 - - -"), 1);
	assert_int_equal(pm_trials_st_add(&a, "trial bad failed - 2 80 7 loss=nan? loss is NaN: at step 3"), 1);
	assert_int_equal(pm_trials_st_add(&a, "trial q queued - 0 0 - - -"), 1);
	assert_int_equal(pm_trials_st_add(&a, "trial d done - 0 1000 0 loss=0.25 -"), 1);
	/* Malformed: too few words. */
	assert_int_equal(pm_trials_st_add(&a, "trial x running"), -1);
	assert_int_equal(pm_trials_st_add(&a, "trial x done - 0 1000 0"), -1);
	assert_int_equal(a.n, 4);
	assert_string_equal(a.t[0].name, "lr0.1");
	assert_string_equal(a.t[0].slots, "pq1:0,1/pq2:0");
	assert_int_equal(a.t[0].restarts, 1);
	assert_int_equal((int)a.t[0].runtime_ms, 2500);
	assert_string_equal(a.t[1].exit, "7");
	assert_string_equal(a.t[1].result, "loss=nan?");
	assert_string_equal(a.t[1].error, "loss is NaN: at step 3");
	assert_string_equal(a.t[3].result, "loss=0.25");
	pm_trials_st_free(&a);
}

static void test_summary_and_table(void **state)
{
	struct pm_trials_st a = { 0 };
	char sum[160], *out;
	(void)state;

	pm_trials_st_add(&a, "trial r running pq1:0 0 2500 - - -");
	pm_trials_st_add(&a, "trial s restarting pq1:1 1 300 - - -");
	pm_trials_st_add(&a, "trial bad failed - 2 80 7 - boom");
	pm_trials_st_add(&a, "trial q queued - 0 0 - - -");
	pm_trials_st_add(&a, "trial d done - 0 1000 0 loss=0.25 -");
	pm_trials_st_summary(&a, sum, sizeof(sum));
	assert_string_equal(sum, "5 trials: 1 done, 2 running, 1 queued, 1 failed");
	out = printed(pm_trials_st_print, &a);
	assert_non_null(strstr(out, "sweep: 5 trials: 1 done, 2 running, 1 queued, 1 failed\n"));
	assert_non_null(strstr(out, "TRIAL"));
	/* A queued trial has no runtime; "-" errors print blank. */
	assert_non_null(strstr(out, "\nq                    queued     -                        0        -        -     -                \n"));
	assert_non_null(strstr(out, "RESULT"));
	assert_non_null(strstr(out, "\nd                    done       -                        0        1.00s    0     loss=0.25        \n"));
	assert_non_null(strstr(out, "boom\n"));
	free(out);
	out = printed(pm_trials_st_json, &a);
	assert_non_null(strstr(out, ",\"sweep\":{\"trials\":5,\"done\":1,\"running\":2,\"queued\":1,"
				"\"failed\":1},\"trials\":[{\"trial\":\"r\",\"state\":\"running\","
				"\"slots\":\"pq1:0\",\"restarts\":0,\"runtime_ms\":2500,\"exit\":null,"
				"\"metric\":null,\"value\":null,\"error\":null}"));
	assert_non_null(strstr(out, "{\"trial\":\"bad\",\"state\":\"failed\",\"slots\":\"\","
				"\"restarts\":2,\"runtime_ms\":80,\"exit\":7,\"metric\":null,"
				"\"value\":null,\"error\":\"boom\"}"));
	assert_non_null(strstr(out, "\"exit\":0,\"metric\":\"loss\",\"value\":0.25,"
				"\"error\":null}"));
	free(out);
	pm_trials_st_free(&a);
}

static void names(const struct pm_trials_st *a, char *buf, size_t len)
{
	size_t off = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < a->n && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? " " : "", a->t[i].name);
}

/* --sort result / -result: by value, those without one last, ties (and
 * the rest) in the file's order; another key is refused with the keys. */
static void test_sort(void **state)
{
	struct pm_trials_st a = { 0 };
	char got[256], why[200];
	(void)state;

	pm_trials_st_add(&a, "trial n1 running pq1:0 0 2500 - - -");
	pm_trials_st_add(&a, "trial a done - 0 1000 0 loss=0.5 -");
	pm_trials_st_add(&a, "trial b done - 0 1000 0 loss=10 -");
	pm_trials_st_add(&a, "trial c failed - 0 1000 3 loss=1e-3 x");
	pm_trials_st_add(&a, "trial n2 queued - 0 0 - - -");
	pm_trials_st_add(&a, "trial d done - 0 1000 0 loss=0.50 -");
	pm_trials_st_add(&a, "trial e done - 0 1000 0 loss=9 -");
	assert_int_equal(pm_trials_st_sort(&a, "result"), 0);
	names(&a, got, sizeof(got));
	assert_string_equal(got, "c a d e b n1 n2");
	assert_int_equal(pm_trials_st_sort(&a, "-result"), 0);
	names(&a, got, sizeof(got));
	/* Ties in the order they came in (a before d), not the file's. */
	assert_string_equal(got, "b e a d c n1 n2");
	assert_int_equal(pm_trials_st_sort_check("result", why, sizeof(why)), 0);
	assert_int_equal(pm_trials_st_sort_check("-result", why, sizeof(why)), 0);
	assert_int_equal(pm_trials_st_sort_check("loss", why, sizeof(why)), -1);
	assert_non_null(strstr(why, "unknown sort key 'loss': result (the lowest value first) or "
				"-result (the highest first)"));
	assert_int_equal(pm_trials_st_sort(&a, "runtime"), -1);
	pm_trials_st_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sort),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_summary_and_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
