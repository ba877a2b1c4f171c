/* procmgr bind --explain in-process (runtime/cli/cmd_bind.c), on the
 * fixture topologies: the plan per rank in text and JSON, the step's GPUs,
 * cpus and binding taken into account, and each bad argument refused with
 * the usage (exit 2) or the file's error (exit 1). */
#include <getopt.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "cli/cmd.h"

static char out[1 << 16], err[1 << 14];

/* stdout and stderr of one call, into out and err. */
static int run(int argc, const char **argv)
{
	FILE *o = tmpfile(), *e = tmpfile();
	int so = dup(1), se = dup(2), rc;
	size_t n;

	assert_non_null(o);
	assert_non_null(e);
	fflush(stdout);
	fflush(stderr);
	dup2(fileno(o), 1);
	dup2(fileno(e), 2);
	optind = 0;
	rc = pm_cmd_bind(argc, (char **)argv);
	fflush(stdout);
	fflush(stderr);
	dup2(so, 1);
	dup2(se, 2);
	close(so);
	close(se);
	rewind(o);
	rewind(e);
	n = fread(out, 1, sizeof(out) - 1, o);
	out[n] = '\0';
	n = fread(err, 1, sizeof(err) - 1, e);
	err[n] = '\0';
	fclose(o);
	fclose(e);
	return rc;
}

static const char *fixture(const char *name)
{
	static char path[4][4096]; /* a few alive at once */
	static int next;
	const char *top = getenv("top_srcdir");
	char *p = path[next++ % 4];

	snprintf(p, sizeof(path[0]), "%s/tests/data/%s", top ? top : ".", name);
	return p;
}

static void has(const char *text, const char *what)
{
	if (!strstr(text, what))
		fail_msg("'%s' not in:\n%s", what, text);
}

static void test_explain_text(void **state)
{
	const char *argv[] = { "bind", "--explain", "--topology", fixture("dgx-h100.xml"),
			       "--tasks", "2" };
	(void)state;

	assert_int_equal(run(6, argv), 0);
	has(out, "2 packages, 2 NUMA nodes, 8 GPUs");
	has(out, "step: 2 local tasks, cpus all, GPUs all, binding closest");
	has(out, "rank 0: GPUs 0 (0000:03:00.0), 1 (0000:07:00.0)");
	has(out, "rank 1: GPUs 4 (0000:83:00.0)");
	has(out, "env: CUDA_VISIBLE_DEVICES=4,5,6,7");
	has(out, "why: ");
	assert_string_equal(err, "");
}

static void test_explain_json(void **state)
{
	const char *argv[] = { "bind", "--explain", "--topology", fixture("dgx-h100.xml"),
			       "--json", "--gpus", "0,1", "--bind", "gpu,cpu" };
	(void)state;

	assert_int_equal(run(9, argv), 0);
	assert_int_equal(out[0], '[');
	has(out, "{\"rank\": 0, \"gpus\": [0]");
	has(out, "{\"rank\": 1, \"gpus\": [1]");
	has(out, "\"CUDA_VISIBLE_DEVICES\":\"0\"");
	assert_null(strstr(out, "\"rank\": 2"));
}

static void test_cpus_and_no_gpus(void **state)
{
	const char *argv[] = { "bind", "--explain", "--topology", fixture("nogpu.xml"),
			       "--cpus", "0-3" };
	const char *none[] = { "bind", "--explain", "--topology", fixture("dgx-h100.xml"),
			       "--bind", "none" };
	(void)state;

	assert_int_equal(run(6, argv), 0);
	has(out, "0 GPUs");
	has(out, "step: 1 local task, cpus 0-3");
	has(out, "rank 0: NIC eth0; cpus 0-3 (4 cores)");
	assert_int_equal(run(6, none), 0);
	has(out, "binding none");
}

static void test_refused(void **state)
{
	const char *nothing[] = { "bind" };
	const char *tasks[] = { "bind", "--explain", "--tasks", "x" };
	const char *bind[] = { "bind", "--explain", "--bind", "gpu,wheels" };
	const char *extra[] = { "bind", "--explain", "more" };
	const char *unknown[] = { "bind", "--explain", "--frobnicate" };
	const char *file[] = { "bind", "--explain", "--topology", "/nonexistent.xml" };
	const char *cpus[] = { "bind", "--explain", "--topology", fixture("nogpu.xml"),
			       "--cpus", "999999" };
	(void)state;

	assert_int_equal(run(1, nothing), 2);
	has(err, "nothing to do: bind only explains (--explain)");
	has(err, "usage: procmgr bind --explain");
	assert_int_equal(run(4, tasks), 2);
	has(err, "invalid value 'x' for --tasks: expected a whole number from 1 to 4096");
	assert_int_equal(run(4, bind), 2);
	has(err, "wheels");
	assert_int_equal(run(3, extra), 2);
	assert_int_equal(run(3, unknown), 2);
	assert_int_equal(run(4, file), 1);
	has(err, "cannot read topology file /nonexistent.xml");
	assert_int_not_equal(run(6, cpus), 0);
	assert_string_equal(out, "");
}

static void test_help(void **state)
{
	const char *argv[] = { "bind", "--help" };
	(void)state;

	assert_int_equal(run(2, argv), 0);
	has(out, "usage: procmgr bind --explain");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_explain_text),
		cmocka_unit_test(test_explain_json),
		cmocka_unit_test(test_cpus_and_no_gpus),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_help),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
