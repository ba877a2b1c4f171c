/* procmgrd's health checks (procmgrd/guard.c) with real check scripts:
 * before launch (here, synchronously), between generations and
 * periodically (in a child process, its result read from a pipe on the
 * event loop), the report file the plugin drains on, and a run still
 * going when procmgrd ends. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "io/loop.h"
#include "procmgrd/guard.h"
#include "pump.h"

static char dir[64];
static struct pm_loop loop;

/* What the guard said through its callbacks. */
static struct said {
	int checked, failed;
	char why[1024];
	bool passed;
} said;

static void on_checked(void *arg, const char *why)
{
	struct said *s = arg;

	s->checked++;
	s->passed = why == NULL;
	snprintf(s->why, sizeof(s->why), "%s", why ? why : "");
}

static void on_fail(void *arg, const char *why)
{
	struct said *s = arg;

	s->failed++;
	snprintf(s->why, sizeof(s->why), "%s", why);
}

static bool got_checked(void *arg)
{
	(void)arg;
	return said.checked > 0;
}

static bool failed_twice(void *arg)
{
	(void)arg;
	return said.failed >= 2;
}

static int setup(void **state)
{
	(void)state;
	memset(&said, 0, sizeof(said));
	snprintf(dir, sizeof(dir), "/tmp/pm-test-guard-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	return pm_loop_init(&loop);
}

static int teardown(void **state)
{
	char cmd[128];
	(void)state;

	close(loop.epfd);
	snprintf(cmd, sizeof(cmd), "/bin/rm -rf %s", dir);
	return system(cmd);
}

/* dir/NAME, a script with body; its path in path. */
static void script(const char *name, const char *body, char *path, size_t len)
{
	FILE *f;

	snprintf(path, len, "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\n%s\n", body);
	fclose(f);
	assert_int_equal(chmod(path, 0755), 0);
}

static char *slurp(const char *path)
{
	static char buf[2048];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void guard_with(struct pm_guard *g, const char *list, const char *report,
		       unsigned timeout_ms)
{
	char err[512];

	if (pm_guard_init(g, list, "node1", report, timeout_ms, err, sizeof(err)))
		fail_msg("pm_guard_init: %s", err);
	g->on_checked = on_checked;
	g->on_fail = on_fail;
	g->arg = &said;
}

/* No checks: nothing runs, nothing is started. */
static void test_none(void **state)
{
	struct pm_guard g;
	char why[256] = "";
	(void)state;

	guard_with(&g, "", NULL, 0);
	assert_int_equal(g.n, 0);
	assert_int_equal(pm_guard_run(&g, why, sizeof(why)), 0);
	assert_int_equal(pm_guard_start(&g, &loop, why, sizeof(why)), 1);
	assert_int_equal(pm_guard_periodic(&g, &loop, 10), 0);
	assert_int_equal(g.timer_w.fd, -1);
	pm_guard_free(&g, &loop);
}

/* A list that is none: said with the grammar's words. */
static void test_bad_list(void **state)
{
	struct pm_guard g;
	char err[512];
	(void)state;

	assert_int_equal(pm_guard_init(&g, "disk", "node1", NULL, 0, err, sizeof(err)), -1);
	if (!strstr(err, "health checks 'disk': "))
		fail_msg("%s", err);
	pm_guard_free(&g, &loop);
}

/* Before launch: every check passes, then the first that fails is said
 * ("check: reason") and written for the plugin; a script that cannot run
 * is said to be one that could not check. */
static void test_run_here(void **state)
{
	struct pm_guard g;
	char ok[256], bad[256], list[1024], report[128], why[1024];
	(void)state;

	script("ok.sh", "echo fine; exit 0", ok, sizeof(ok));
	script("bad.sh", "echo 'fan 3 stopped'; exit 1", bad, sizeof(bad));
	snprintf(report, sizeof(report), "%s/report", dir);
	snprintf(list, sizeof(list), "script:%s,disk:/:1K", ok);
	guard_with(&g, list, report, 5000);
	assert_int_equal(g.n, 2);
	assert_int_equal(pm_guard_run(&g, why, sizeof(why)), 0);
	assert_int_equal(access(report, F_OK), -1); /* nothing to report */
	pm_guard_free(&g, &loop);

	snprintf(list, sizeof(list), "script:%s,script:%s", ok, bad);
	guard_with(&g, list, report, 5000);
	assert_int_equal(pm_guard_run(&g, why, sizeof(why)), -1);
	snprintf(list, sizeof(list), "script:%s: fan 3 stopped", bad);
	assert_string_equal(why, list);
	strcat(list, "\n");
	assert_string_equal(slurp(report), list);
	pm_guard_free(&g, &loop);

	snprintf(list, sizeof(list), "script:%s/missing.sh", dir);
	guard_with(&g, list, NULL, 5000); /* no report file: said only */
	assert_int_equal(pm_guard_run(&g, why, sizeof(why)), -1);
	if (!strstr(why, "missing.sh: could not check: cannot run "))
		fail_msg("%s", why);
	pm_guard_free(&g, &loop);
}

/* Between generations, in a child: passed (why NULL), then failed with
 * the same words as here and the report written; a second start while one
 * runs is that one. */
static void test_between(void **state)
{
	struct pm_guard g;
	char ok[256], bad[256], list[600], report[128], why[256], want[600];
	pid_t child;
	(void)state;

	script("ok.sh", "exit 0", ok, sizeof(ok));
	script("bad.sh", "echo 'GPU 2 fell off the bus'; exit 1", bad, sizeof(bad));
	snprintf(report, sizeof(report), "%s/report", dir);
	snprintf(list, sizeof(list), "script:%s", ok);
	guard_with(&g, list, report, 5000);
	assert_int_equal(pm_guard_start(&g, &loop, why, sizeof(why)), 0);
	child = g.between.child;
	assert_true(child > 0);
	assert_int_equal(pm_guard_start(&g, &loop, why, sizeof(why)), 0);
	assert_int_equal(g.between.child, child); /* the same run */
	assert_true(pm_pump(&loop, got_checked, NULL, 10000));
	assert_int_equal(said.checked, 1);
	assert_true(said.passed);
	assert_int_equal(g.between.child, 0);
	assert_int_equal(access(report, F_OK), -1);
	pm_guard_free(&g, &loop);

	memset(&said, 0, sizeof(said));
	snprintf(list, sizeof(list), "script:%s", bad);
	guard_with(&g, list, report, 5000);
	assert_int_equal(pm_guard_start(&g, &loop, why, sizeof(why)), 0);
	assert_true(pm_pump(&loop, got_checked, NULL, 10000));
	assert_false(said.passed);
	snprintf(want, sizeof(want), "script:%s: GPU 2 fell off the bus", bad);
	assert_string_equal(said.why, want);
	strcat(want, "\n");
	assert_string_equal(slurp(report), want);
	assert_int_equal(said.failed, 0); /* not the periodic run's */
	pm_guard_free(&g, &loop);
}

/* Periodically: each failed run is said to on_fail, not to on_checked. */
static void test_periodic(void **state)
{
	struct pm_guard g;
	char bad[256], list[600], want[600];
	(void)state;

	script("bad.sh", "echo 'fan 3 stopped'; exit 1", bad, sizeof(bad));
	snprintf(list, sizeof(list), "script:%s", bad);
	guard_with(&g, list, NULL, 5000);
	assert_int_equal(pm_guard_periodic(&g, &loop, 0), 0); /* 0: none */
	assert_int_equal(g.timer_w.fd, -1);
	assert_int_equal(pm_guard_periodic(&g, &loop, 5), 0);
	assert_true(pm_pump(&loop, failed_twice, NULL, 20000));
	snprintf(want, sizeof(want), "script:%s: fan 3 stopped", bad);
	assert_string_equal(said.why, want);
	assert_int_equal(said.checked, 0);
	pm_guard_free(&g, &loop);
}

/* A script over its time fails as timed out (with its last words when
 * they came in time: not asserted, a loaded machine may not run it). */
static void test_timeout(void **state)
{
	struct pm_guard g;
	char slow[256], list[600], want[600], why[256];
	(void)state;

	script("slow.sh", "echo 'still looking'; exec sleep 100", slow, sizeof(slow));
	snprintf(list, sizeof(list), "script:%s", slow);
	guard_with(&g, list, NULL, 300);
	assert_int_equal(pm_guard_start(&g, &loop, why, sizeof(why)), 0);
	assert_true(pm_pump(&loop, got_checked, NULL, 10000));
	snprintf(want, sizeof(want), "script:%s: timed out after 0.3 s", slow);
	if (strncmp(said.why, want, strlen(want)))
		fail_msg("'%s' does not start with '%s'", said.why, want);
	assert_false(said.passed);
	pm_guard_free(&g, &loop);
}

static char pidfile[128];

static bool script_runs(void *arg)
{
	(void)arg;
	return access(pidfile, F_OK) == 0;
}

/* procmgrd ends while a run is going: its child is killed and reaped,
 * not left behind. */
static void test_free_while_running(void **state)
{
	struct pm_guard g;
	char hang[256], list[600], why[256], body[512];
	pid_t child;
	FILE *f;
	int spid = 0;
	(void)state;

	snprintf(pidfile, sizeof(pidfile), "%s/pid", dir);
	snprintf(body, sizeof(body), "echo $$ > %s.new; mv %s.new %s; exec sleep 100", pidfile,
		 pidfile, pidfile);
	script("hang.sh", body, hang, sizeof(hang));
	snprintf(list, sizeof(list), "script:%s", hang);
	guard_with(&g, list, NULL, 600000);
	assert_int_equal(pm_guard_start(&g, &loop, why, sizeof(why)), 0);
	child = g.between.child;
	assert_true(child > 0);
	assert_true(pm_pump(&loop, script_runs, NULL, 10000));
	pm_guard_free(&g, &loop);
	assert_int_equal(kill(child, 0), -1); /* reaped: no such process */
	assert_int_equal(errno, ESRCH);
	assert_int_equal(said.checked, 0);
	/* The script itself, in a group of its own, is not the guard's to
	 * reach once its child is gone (see the report): ended here. */
	f = fopen(pidfile, "r");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%d", &spid), 1);
	fclose(f);
	kill(-spid, SIGKILL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_none, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_list, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_here, setup, teardown),
		cmocka_unit_test_setup_teardown(test_between, setup, teardown),
		cmocka_unit_test_setup_teardown(test_periodic, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_free_while_running, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
