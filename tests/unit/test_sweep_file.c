/* Unit tests of runtime/sweep/sweep_file.c: the trials file's grammar (see
 * sweep_file.h) and every refusal, which must name the line and say what
 * is allowed. */
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

#include "sweep/sweep_file.h"

#define CHECK(cond, ...) do { if (!(cond)) fail_msg(__VA_ARGS__); } while (0)

static char err[1024];

/* Parses s as f.txt, 1 rank by default, 8 in the step. */
static int parse(const char *s, struct pm_sweep *sw)
{
	err[0] = '\0';
	return pm_sweep_parse(s, strlen(s), "f.txt", 1, 8, sw, err, sizeof(err));
}

/* s is refused with an error containing each of the NULL-ended words. */
static void refused(const char *s, ...)
{
	struct pm_sweep sw;
	const char *w;
	va_list ap;

	CHECK(parse(s, &sw) == -1, "accepted: [%s]", s);
	CHECK(sw.n == 0 && !sw.trials && !sw.text, "refusal left trials behind for [%s]", s);
	va_start(ap, s);
	while ((w = va_arg(ap, const char *)))
		CHECK(strstr(err, w), "error for [%s] is [%s], lacks [%s]", s, err, w);
	va_end(ap);
}

static void test_plain_lines(void **state)
{
	struct pm_sweep sw;

	(void)state;
	assert_int_equal(parse("# a sweep\n\npython a.py\n  \t\n   echo 'x y' \t\n"
			       "\t# indented comment\r\nlast; true", &sw), 0);
	assert_int_equal(sw.n, 3);
	assert_string_equal(sw.trials[0].name, "3");
	assert_string_equal(sw.trials[0].cmd, "python a.py");
	assert_int_equal(sw.trials[0].line, 3);
	assert_int_equal(sw.trials[0].ranks, 1);
	/* Trailing blanks are the shell's business; leading ones are not kept. */
	assert_string_equal(sw.trials[1].name, "5");
	assert_string_equal(sw.trials[1].cmd, "echo 'x y' \t");
	assert_string_equal(sw.trials[2].name, "7");
	assert_string_equal(sw.trials[2].cmd, "last; true");
	pm_sweep_free(&sw);
}

static void test_crlf(void **state)
{
	struct pm_sweep sw;

	(void)state;
	assert_int_equal(parse("[a ranks=2] run a\r\n[b] run b\r\n", &sw), 0);
	assert_int_equal(sw.n, 2);
	assert_string_equal(sw.trials[0].cmd, "run a");
	assert_string_equal(sw.trials[1].cmd, "run b");
	pm_sweep_free(&sw);
}

static void test_prefix(void **state)
{
	struct pm_sweep sw;

	(void)state;
	assert_int_equal(parse("[lr0.1 ranks=2] python train.py --lr 0.1\n"
			       "[ranks=8]\tpython big.py\n"
			       "[seed_3]python s.py\n"
			       "[ranks=3   x-y  ]  run [not a prefix]\n", &sw), 0);
	assert_int_equal(sw.n, 4);
	assert_string_equal(sw.trials[0].name, "lr0.1");
	assert_int_equal(sw.trials[0].ranks, 2);
	assert_string_equal(sw.trials[0].cmd, "python train.py --lr 0.1");
	assert_string_equal(sw.trials[1].name, "2");
	assert_int_equal(sw.trials[1].ranks, 8);
	assert_string_equal(sw.trials[1].cmd, "python big.py");
	assert_string_equal(sw.trials[2].name, "seed_3");
	assert_string_equal(sw.trials[2].cmd, "python s.py");
	assert_string_equal(sw.trials[3].name, "x-y");
	assert_int_equal(sw.trials[3].ranks, 3);
	assert_string_equal(sw.trials[3].cmd, "run [not a prefix]");
	pm_sweep_free(&sw);
}

/* "[ " is sh's test command: the whole line is the command. */
static void test_shell_test_is_not_a_prefix(void **state)
{
	struct pm_sweep sw;

	(void)state;
	assert_int_equal(parse("[ -f data ] && python a.py\n[\ttrue ]\n", &sw), 0);
	assert_int_equal(sw.n, 2);
	assert_string_equal(sw.trials[0].name, "1");
	assert_string_equal(sw.trials[0].cmd, "[ -f data ] && python a.py");
	assert_string_equal(sw.trials[1].cmd, "[\ttrue ]");
	pm_sweep_free(&sw);
}

static void test_default_ranks(void **state)
{
	struct pm_sweep sw;

	(void)state;
	assert_int_equal(pm_sweep_parse("a\n[x ranks=1] b\n", 16, "f", 4, 8, &sw, err,
					sizeof(err)), 0);
	assert_int_equal(sw.trials[0].ranks, 4);
	assert_int_equal(sw.trials[1].ranks, 1);
	pm_sweep_free(&sw);
	assert_int_equal(pm_sweep_parse("a\n", 2, "f", 9, 8, &sw, err, sizeof(err)), -1);
	CHECK(strstr(err, "default ranks per trial (9)") && strstr(err, "8"), "[%s]", err);
	assert_int_equal(pm_sweep_parse("a\n", 2, "f", 0, 8, &sw, err, sizeof(err)), -1);
}

static void test_no_trials(void **state)
{
	(void)state;
	refused("", "f.txt: no trials", "one command per line", NULL);
	refused("# only\n\n   \n\t# comments\n", "no trials", NULL);
}

static void test_ranks_refused(void **state)
{
	(void)state;
	refused("a\n[x ranks=9] b\n", "f.txt:2:", "asks for 9 ranks", "the step has 8",
		"1 to 8", NULL);
	refused("[ranks=0] b\n", "f.txt:1:", "at least 1 rank", NULL);
	refused("[ranks=abc] b\n", "ranks='abc' is not a number", "1 to 8", NULL);
	refused("[ranks=] b\n", "is not a number", NULL);
	refused("[ranks=-1] b\n", "is not a number", NULL);
	refused("[ranks=+2] b\n", "is not a number", NULL);
	refused("[ranks=1234567890] b\n", "is not a number", NULL);
	refused("[ranks=2 ranks=2] b\n", "given twice", NULL);
}

static void test_names_refused(void **state)
{
	char line[200];

	(void)state;
	refused("[a/b] x\n", "f.txt:1:", "has '/'", "letters, digits", NULL);
	refused("[..] x\n", "starts with '.'", NULL);
	refused("[.hidden] x\n", "starts with '.'", NULL);
	refused("[-rf] x\n", "starts with '-'", NULL);
	refused("[a$b] x\n", "has '$'", NULL);
	refused("[a b] x\n", "two names", "at most one", NULL);
	refused("[]x\n", "empty prefix", NULL);
	/* 64 characters are a name, 65 are not. */
	memset(line, 'n', 64);
	strcpy(line + 64, "] x\n");
	memmove(line + 1, line, strlen(line) + 1);
	line[0] = '[';
	{
		struct pm_sweep sw;

		assert_int_equal(parse(line, &sw), 0);
		assert_int_equal(strlen(sw.trials[0].name), 64);
		pm_sweep_free(&sw);
	}
	memmove(line + 2, line + 1, strlen(line));
	line[1] = 'n';
	refused(line, "1 to 64 characters", "not 65", NULL);
}

static void test_duplicates(void **state)
{
	(void)state;
	refused("[a] x\n[b] y\n[a] z\n", "f.txt:3:", "duplicate trial name 'a'",
		"line 1 has it too", NULL);
	/* A given name equal to another line's number. */
	refused("x\n[1] y\n", "f.txt:2:", "duplicate trial name '1'", "line 1",
		"named by its number", NULL);
}

static void test_other_refusals(void **state)
{
	char *big;
	struct pm_sweep sw;

	(void)state;
	refused("ok\n[a ranks=2 x\n", "f.txt:2:", "no ']'", "'[ ' with a blank", NULL);
	refused("[a gpus=2] x\n", "unknown key 'gpus'", "ranks=N", NULL);
	refused("[a]   \n", "trial 'a' has no command", NULL);
	refused("[a]\n", "no command", NULL);
	/* Found by fuzz_sweep: sh -c "# x" runs nothing and succeeds. */
	refused("[a] # x\n", "trial 'a' has no command", "'#' starts a comment", NULL);
	big = malloc(PM_SWEEP_CMD_MAX + 8);
	memset(big, 'x', PM_SWEEP_CMD_MAX + 1);
	big[PM_SWEEP_CMD_MAX + 1] = '\0';
	refused(big, "has 4097 bytes", "at most 4096", NULL);
	big[PM_SWEEP_CMD_MAX] = '\0';
	assert_int_equal(parse(big, &sw), 0);
	pm_sweep_free(&sw);
	free(big);
	/* A NUL byte: the length says where the buffer ends, not the NUL. */
	assert_int_equal(pm_sweep_parse("a\nb\0c\n", 6, "f.txt", 1, 8, &sw, err, sizeof(err)),
			 -1);
	CHECK(strstr(err, "f.txt:2: a NUL byte"), "[%s]", err);
}

/* Not NUL-terminated: the parser reads len bytes, no more. */
static void test_length_bounds(void **state)
{
	struct pm_sweep sw;
	const char buf[] = { 'a', '\n', 'b', 'c' };

	(void)state;
	assert_int_equal(pm_sweep_parse(buf, 3, "f", 1, 1, &sw, err, sizeof(err)), 0);
	assert_int_equal(sw.n, 2);
	assert_string_equal(sw.trials[1].cmd, "b");
	pm_sweep_free(&sw);
}

static void test_many(void **state)
{
	size_t cap = 100000 * 24, off = 0;
	char *buf = malloc(cap);
	struct pm_sweep sw;
	int i;

	(void)state;
	for (i = 0; i < 100000; i++)
		off += snprintf(buf + off, cap - off, "[t%d] sleep 0\n", i);
	assert_int_equal(pm_sweep_parse(buf, off, "f", 1, 1, &sw, err, sizeof(err)), 0);
	assert_int_equal(sw.n, 100000);
	assert_string_equal(sw.trials[99999].name, "t99999");
	pm_sweep_free(&sw);
	/* The last one's name doubled: found among 100,000. */
	off += snprintf(buf + off, cap - off, "[t4711] x\n");
	assert_int_equal(pm_sweep_parse(buf, off, "f", 1, 1, &sw, err, sizeof(err)), -1);
	CHECK(strstr(err, "f:100001: duplicate trial name 't4711' (line 4712"), "[%s]", err);
	free(buf);
}

static void test_read(void **state)
{
	char dir[] = "/tmp/pm-sweep-test.XXXXXX", path[128];
	struct pm_sweep sw;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/trials.txt", dir);
	f = fopen(path, "w");
	fputs("[a ranks=2] echo a\necho b\n", f);
	fclose(f);
	assert_int_equal(pm_sweep_read(path, 1, 4, &sw, err, sizeof(err)), 0);
	assert_int_equal(sw.n, 2);
	assert_string_equal(sw.trials[1].name, "2");
	pm_sweep_free(&sw);
	/* Refusals name the file. */
	assert_int_equal(pm_sweep_read(path, 1, 1, &sw, err, sizeof(err)), -1);
	CHECK(strstr(err, path) && strstr(err, ":1: the trial asks for 2 ranks"), "[%s]", err);
	unlink(path);
	assert_int_equal(pm_sweep_read(path, 1, 4, &sw, err, sizeof(err)), -1);
	CHECK(strstr(err, "cannot open the trials file") && strstr(err, "No such file"), "[%s]",
	      err);
	assert_int_equal(pm_sweep_read(dir, 1, 4, &sw, err, sizeof(err)), -1);
	CHECK(strstr(err, "not a regular file"), "[%s]", err);
	/* A FIFO is refused at once: opening it must not wait for a writer. */
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(pm_sweep_read(path, 1, 4, &sw, err, sizeof(err)), -1);
	CHECK(strstr(err, "not a regular file"), "[%s]", err);
	unlink(path);
	rmdir(dir);
}

/* Which lines run without sh: plain words only. */
static void test_simple_argv(void **state)
{
	static const char *const shell[] = {
		"echo $HOME", "a; b", "a && b", "a | b", "a > f", "a 'b c'", "a \"b\"", "ls *.txt",
		"ls ~", "a # c", "LR=0.1 python t.py", "(a)", "a\\ b", "a `b`", "", "   ", "a\nb",
	};
	char buf[64], *av[4];
	size_t i;

	(void)state;
	assert_int_equal(pm_sweep_simple_argv("python3 train.py --lr=0.1 -o out/x.txt", buf,
					      sizeof(buf), av, 4), 0); /* 5 words, room for 3 */
	{
		char *av8[8];
		assert_int_equal(pm_sweep_simple_argv("  python3\ttrain.py --lr=0.1  -o out/x.txt ",
						      buf, sizeof(buf), av8, 8), 5);
		assert_string_equal(av8[0], "python3");
		assert_string_equal(av8[1], "train.py");
		assert_string_equal(av8[2], "--lr=0.1");
		assert_string_equal(av8[4], "out/x.txt");
		assert_null(av8[5]);
	}
	assert_int_equal(pm_sweep_simple_argv("true", buf, sizeof(buf), av, 4), 1);
	assert_string_equal(av[0], "true");
	assert_null(av[1]);
	assert_int_equal(pm_sweep_simple_argv("a b c", buf, sizeof(buf), av, 4), 3);
	assert_int_equal(pm_sweep_simple_argv("a b c d", buf, sizeof(buf), av, 4), 0);
	assert_int_equal(pm_sweep_simple_argv("/usr/bin/env x=1 y", buf, sizeof(buf), av, 4), 3);
	for (i = 0; i < sizeof(shell) / sizeof(shell[0]); i++)
		CHECK(pm_sweep_simple_argv(shell[i], buf, sizeof(buf), av, 4) == 0, "[%s]",
		      shell[i]);
	/* No room for the copy: the shell's. */
	assert_int_equal(pm_sweep_simple_argv("true", buf, 4, av, 4), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_lines),
		cmocka_unit_test(test_crlf),
		cmocka_unit_test(test_prefix),
		cmocka_unit_test(test_shell_test_is_not_a_prefix),
		cmocka_unit_test(test_default_ranks),
		cmocka_unit_test(test_no_trials),
		cmocka_unit_test(test_ranks_refused),
		cmocka_unit_test(test_names_refused),
		cmocka_unit_test(test_duplicates),
		cmocka_unit_test(test_other_refusals),
		cmocka_unit_test(test_length_bounds),
		cmocka_unit_test(test_many),
		cmocka_unit_test(test_read),
		cmocka_unit_test(test_simple_argv),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
