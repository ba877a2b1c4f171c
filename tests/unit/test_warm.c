/* Unit tests of the warm generations' codec (runtime/common/warm.c): each
 * line of the protocol, every refusal, the line reader, the mode's
 * parsing, which commands the fork-server mode takes and its command
 * line. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "common/warm.h"

static int parse(const char *text, struct pm_warm_line *l, char *err, size_t errlen)
{
	static char buf[PM_WARM_LINE_MAX + 16];

	snprintf(buf, sizeof(buf), "%s", text);
	return pm_warm_parse(buf, strlen(buf), l, err, errlen);
}

static void refused(const char *text, const char *why)
{
	struct pm_warm_line l;
	char err[256] = "";

	assert_int_equal(parse(text, &l, err, sizeof(err)), -1);
	if (!strstr(err, why))
		fail_msg("'%s': error '%s' lacks '%s'", text, err, why);
}

static void test_lines(void **state)
{
	struct pm_warm_line l;
	char err[256];
	(void)state;

	assert_int_equal(parse("ready", &l, err, sizeof(err)), 0);
	assert_int_equal(l.kind, PM_WARM_READY);
	assert_int_equal(parse("env RANK=3", &l, err, sizeof(err)), 0);
	assert_int_equal(l.kind, PM_WARM_ENV);
	assert_string_equal(l.name, "RANK");
	assert_string_equal(l.value, "3");
	/* Values are anything but a newline: '=' and spaces included. */
	assert_int_equal(parse("env X_1=a=b c", &l, err, sizeof(err)), 0);
	assert_string_equal(l.name, "X_1");
	assert_string_equal(l.value, "a=b c");
	assert_int_equal(parse("env EMPTY=", &l, err, sizeof(err)), 0);
	assert_string_equal(l.value, "");
	assert_int_equal(parse("start 0", &l, err, sizeof(err)), 0);
	assert_int_equal(l.kind, PM_WARM_START);
	assert_int_equal(l.gen, 0);
	assert_int_equal(parse("start 4294967295", &l, err, sizeof(err)), 0);
	assert_int_equal(l.gen, 4294967295u);
}

static void test_refusals(void **state)
{
	char big[PM_WARM_LINE_MAX + 8];
	struct pm_warm_line l;
	char err[256], nul[] = "rea\0dy";
	(void)state;

	refused("", "an empty line");
	refused("READY", "unknown line 'READY'");
	refused("ready now", "unknown line");
	refused(" ready", "unknown line");
	refused("hello", "allowed: ready, env NAME=VALUE, start GEN");
	refused("env", "unknown line");
	refused("env RANK", "env needs NAME=VALUE");
	refused("env =3", "env needs NAME=VALUE");
	refused("env 1X=3", "not starting with a digit");
	refused("env A-B=3", "env needs NAME=VALUE");
	refused("env A B=3", "env needs NAME=VALUE");
	refused("start", "unknown line");
	refused("start ", "start needs the generation");
	refused("start -1", "start needs the generation");
	refused("start 1x", "start needs the generation");
	refused("start 4294967296", "start needs the generation");
	assert_int_equal(pm_warm_parse(nul, 6, &l, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "NUL"));
	memset(big, 'a', sizeof(big));
	assert_int_equal(pm_warm_parse(big, PM_WARM_LINE_MAX, &l, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "at most 4095"));
	/* The longest name there is, and one more. */
	memset(big, 'N', sizeof(big));
	memcpy(big, "env ", 4);
	strcpy(big + 4 + PM_WARM_NAME_MAX - 1, "=v");
	assert_int_equal(pm_warm_parse(big, strlen(big), &l, err, sizeof(err)), 0);
	memset(big, 'N', sizeof(big));
	memcpy(big, "env ", 4);
	strcpy(big + 4 + PM_WARM_NAME_MAX, "=v");
	assert_int_equal(pm_warm_parse(big, strlen(big), &l, err, sizeof(err)), -1);
}

static void test_format_round_trip(void **state)
{
	char buf[PM_WARM_LINE_MAX + 64], err[256], big[PM_WARM_LINE_MAX];
	struct pm_warm_line l;
	int n;
	(void)state;

	n = pm_warm_format_env(buf, sizeof(buf), "MASTER_ADDR", "node 7=x", err, sizeof(err));
	assert_int_equal(n, (int)strlen("env MASTER_ADDR=node 7=x\n"));
	assert_int_equal(buf[n - 1], '\n');
	assert_int_equal(pm_warm_parse(buf, (size_t)n - 1, &l, err, sizeof(err)), 0);
	assert_string_equal(l.name, "MASTER_ADDR");
	assert_string_equal(l.value, "node 7=x");
	n = pm_warm_format_start(buf, sizeof(buf), 12);
	assert_string_equal(buf, "start 12\n");
	assert_int_equal(pm_warm_parse(buf, (size_t)n - 1, &l, err, sizeof(err)), 0);
	assert_int_equal(l.gen, 12);
	n = pm_warm_format_ready(buf, sizeof(buf));
	assert_int_equal(pm_warm_parse(buf, (size_t)n - 1, &l, err, sizeof(err)), 0);
	assert_int_equal(l.kind, PM_WARM_READY);

	assert_int_equal(pm_warm_format_env(buf, sizeof(buf), "A=B", "v", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not an environment name"));
	assert_int_equal(pm_warm_format_env(buf, sizeof(buf), "", "v", err, sizeof(err)), -1);
	assert_int_equal(pm_warm_format_env(buf, sizeof(buf), "A", "x\ny", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "newline"));
	memset(big, 'v', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(pm_warm_format_env(buf, sizeof(buf), "A", big, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "too long"));
}

static void test_buf(void **state)
{
	struct pm_warm_buf b = { .len = 0 };
	char line[PM_WARM_LINE_MAX], err[256], big[PM_WARM_LINE_MAX + 1];
	(void)state;

	assert_int_equal(pm_warm_buf_line(&b, line, sizeof(line)), -1);
	/* Lines split anywhere across reads. */
	assert_int_equal(pm_warm_buf_add(&b, "rea", 3, err, sizeof(err)), 0);
	assert_int_equal(pm_warm_buf_line(&b, line, sizeof(line)), -1);
	assert_int_equal(pm_warm_buf_add(&b, "dy\nstart 1\nenv", 14, err, sizeof(err)), 0);
	assert_int_equal(pm_warm_buf_line(&b, line, sizeof(line)), 5);
	assert_string_equal(line, "ready");
	assert_int_equal(pm_warm_buf_line(&b, line, sizeof(line)), 7);
	assert_string_equal(line, "start 1");
	assert_int_equal(pm_warm_buf_line(&b, line, sizeof(line)), -1);
	assert_int_equal(b.len, 3);
	/* A NUL byte, and a line that never ends, are refused. */
	assert_int_equal(pm_warm_buf_add(&b, "a\0b", 3, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "NUL"));
	memset(big, 'x', sizeof(big));
	assert_int_equal(pm_warm_buf_add(&b, big, sizeof(big), err, sizeof(err)), -1);
	assert_non_null(strstr(err, "longer than 4095"));
	b.len = 0;
	assert_int_equal(pm_warm_buf_add(&b, big, PM_WARM_LINE_MAX, err, sizeof(err)), -1);
	b.len = 0;
	big[PM_WARM_LINE_MAX - 1] = '\n';
	assert_int_equal(pm_warm_buf_add(&b, big, PM_WARM_LINE_MAX, err, sizeof(err)), 0);
	assert_int_equal(pm_warm_buf_line(&b, line, sizeof(line)), PM_WARM_LINE_MAX - 1);
	assert_int_equal(b.len, 0);
}

static void test_mode(void **state)
{
	enum pm_warm_mode m = PM_WARM_PYTHON;
	char mods[PM_WARM_MODS_MAX];
	(void)state;

	assert_int_equal(pm_warm_mode_parse("off", &m, mods, sizeof(mods)), 0);
	assert_int_equal(m, PM_WARM_OFF);
	assert_int_equal(pm_warm_mode_parse("on", &m, mods, sizeof(mods)), 0);
	assert_int_equal(m, PM_WARM_CONTRACT);
	assert_string_equal(mods, "");
	assert_int_equal(pm_warm_mode_parse("python:torch", &m, mods, sizeof(mods)), 0);
	assert_int_equal(m, PM_WARM_PYTHON);
	assert_string_equal(mods, "torch");
	assert_int_equal(pm_warm_mode_parse("python:torch,numpy,torch.distributed,_x9", &m, mods,
					    sizeof(mods)), 0);
	assert_string_equal(mods, "torch,numpy,torch.distributed,_x9");
	assert_int_equal(pm_warm_mode_parse("python:", &m, mods, sizeof(mods)), -1);
	assert_int_equal(pm_warm_mode_parse("python:torch,", &m, mods, sizeof(mods)), -1);
	assert_int_equal(pm_warm_mode_parse("python:,torch", &m, mods, sizeof(mods)), -1);
	assert_int_equal(pm_warm_mode_parse("python:torch..nn", &m, mods, sizeof(mods)), -1);
	assert_int_equal(pm_warm_mode_parse("python:torch.", &m, mods, sizeof(mods)), -1);
	assert_int_equal(pm_warm_mode_parse("python:9lives", &m, mods, sizeof(mods)), -1);
	assert_int_equal(pm_warm_mode_parse("python:os;rm", &m, mods, sizeof(mods)), -1);
	assert_int_equal(pm_warm_mode_parse("python:a b", &m, mods, sizeof(mods)), -1);
	assert_int_equal(pm_warm_mode_parse("python", &m, mods, sizeof(mods)), -1);
	assert_int_equal(pm_warm_mode_parse("ON", &m, mods, sizeof(mods)), -1);
	/* Only the documented words: yes and no were once taken, undocumented. */
	assert_int_equal(pm_warm_mode_parse("yes", &m, mods, sizeof(mods)), -1);
	assert_int_equal(pm_warm_mode_parse("no", &m, mods, sizeof(mods)), -1);
	assert_int_equal(pm_warm_mode_parse("", &m, mods, sizeof(mods)), -1);
	assert_int_equal(pm_warm_mode_parse(NULL, &m, mods, sizeof(mods)), -1);
}

static void test_is_python(void **state)
{
	(void)state;
	assert_true(pm_warm_is_python("python3"));
	assert_true(pm_warm_is_python("/usr/bin/python3.11"));
	assert_true(pm_warm_is_python("python"));
	assert_false(pm_warm_is_python("/usr/bin/bash"));
	assert_false(pm_warm_is_python("python3-config"));
	assert_false(pm_warm_is_python("ipython"));
	assert_false(pm_warm_is_python("/opt/python3/bin/train"));
}

/* The fork server's command line: argv[0], then the options that decide
 * where modules are found or how output goes (each of the class, and
 * only up to the first other argument), the server's file (never -c),
 * MODS, --, and the whole command after argv[0]. */
static void test_python_argv(void **state)
{
	static const char *const server_opts[] = { "-u", "-B", "-E", "-s", "-I", "-P" };
	static const char *const other_opts[] = { "-X", "-W", "-O", "-OO", "-b", "-d", "-v",
						   "-q", "-R", "-S", "-i", "-x", "-c", "-m",
						   "-uB", "-I-", "--", "-", "u", "" };
	char *out[32];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(server_opts) / sizeof(server_opts[0]); i++) {
		char *argv[] = { "python3", (char *)server_opts[i], "s.py", "a", NULL };
		assert_true(pm_warm_py_server_opt(server_opts[i]));
		assert_int_equal(pm_warm_python_argv(argv, "json", "/p/procmgr/standby.py", out, 32),
				 8);
		assert_string_equal(out[0], "python3");
		assert_string_equal(out[1], server_opts[i]);
		assert_string_equal(out[2], "/p/procmgr/standby.py");
		assert_string_equal(out[3], "json");
		assert_string_equal(out[4], "--");
		assert_string_equal(out[5], server_opts[i]);
		assert_string_equal(out[6], "s.py");
		assert_string_equal(out[7], "a");
		assert_null(out[8]);
	}
	for (i = 0; i < sizeof(other_opts) / sizeof(other_opts[0]); i++) {
		char *argv[] = { "python3", (char *)other_opts[i], "-u", "s.py", NULL };
		assert_false(pm_warm_py_server_opt(other_opts[i]));
		assert_int_equal(pm_warm_python_argv(argv, "json", "/srv.py", out, 32), 7);
		assert_string_equal(out[1], "/srv.py");
		assert_string_equal(out[3], "--");
		assert_string_equal(out[4], other_opts[i]);
		assert_string_equal(out[5], "-u");
	}
	{
		char *argv[] = { "/usr/bin/python3", "-u", "-I", "-m", "pkg.main", "-u", NULL };
		assert_int_equal(pm_warm_python_argv(argv, "torch", "/srv.py", out, 32), 11);
		assert_string_equal(out[0], "/usr/bin/python3");
		assert_string_equal(out[1], "-u");
		assert_string_equal(out[2], "-I");
		assert_string_equal(out[3], "/srv.py");
		assert_string_equal(out[4], "torch");
		assert_string_equal(out[5], "--");
		assert_string_equal(out[8], "-m");
		assert_string_equal(out[9], "pkg.main");
		assert_string_equal(out[10], "-u"); /* the module's, not given to python */
		assert_null(out[11]);
	}
	{
		/* Too many for out: refused, not cut. */
		char *argv[] = { "python3", "-u", "-B", "s.py", "a", "b", NULL };
		char *bare[] = { "python3", NULL };
		assert_int_equal(pm_warm_python_argv(argv, "json", "/srv.py", out, 12), 11);
		assert_null(out[11]);
		assert_int_equal(pm_warm_python_argv(argv, "json", "/srv.py", out, 11), -1);
		assert_int_equal(pm_warm_python_argv(argv, "json", "/srv.py", out, 6), -1);
		assert_int_equal(pm_warm_python_argv(bare, "json", "/srv.py", out, 5), 4);
		assert_null(out[4]);
		assert_int_equal(pm_warm_python_argv(bare, "json", "/srv.py", out, 4), -1);
	}
	/* Never -c, whatever the command. */
	{
		char *argv[] = { "python3", "-c", "print(1)", NULL };
		int n = pm_warm_python_argv(argv, "json", "/srv.py", out, 32);
		assert_int_equal(n, 6);
		for (i = 1; i < 4; i++)
			assert_string_not_equal(out[i], "-c");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_format_round_trip),
		cmocka_unit_test(test_buf),
		cmocka_unit_test(test_mode),
		cmocka_unit_test(test_is_python),
		cmocka_unit_test(test_python_argv),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
