/* The failing rank's error: torch's error.json, stderr's tail, the report
 * text and its summary line. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "common/errinfo.h"

static int parse(const char *json, char *msg, size_t ml, char *tr, size_t tl)
{
	return pm_errfile_parse(json, strlen(json), msg, ml, tr, tl);
}

/* What torch 1.13's ErrorHandler.record_exception writes (json.dump). */
static void test_torch_format(void **state)
{
	char msg[256], tr[1024];
	(void)state;

	assert_int_equal(parse("{\"message\": {\"message\": \"ValueError: loss is nan\", "
			       "\"extraInfo\": {\"py_callstack\": \"Traceback (most recent call "
			       "last):\\n  File \\\"t.py\\\", line 3\\nValueError: loss is nan\\n\", "
			       "\"timestamp\": \"1700000000\"}}}", msg, sizeof(msg), tr, sizeof(tr)), 0);
	assert_string_equal(msg, "ValueError: loss is nan");
	assert_string_equal(tr, "Traceback (most recent call last):\n  File \"t.py\", line 3\n"
			    "ValueError: loss is nan\n");
	/* The newer string form, and keys in any order, other members skipped. */
	assert_int_equal(parse(" {\"other\": [1, -2.5e3, true, false, null, {\"message\": \"x\"}],"
			       " \"message\": \"boom\"} ", msg, sizeof(msg), tr, sizeof(tr)), 0);
	assert_string_equal(msg, "boom");
	assert_string_equal(tr, "");
	/* errorCode added by a parent's dump_error_file. */
	assert_int_equal(parse("{\"message\":{\"extraInfo\":{},\"errorCode\":-11,\"message\":\"m\"}}",
			       msg, sizeof(msg), tr, sizeof(tr)), 0);
	assert_string_equal(msg, "m");
}

static void test_escapes(void **state)
{
	char msg[64], tr[8];
	(void)state;

	assert_int_equal(parse("{\"message\":\"a\\u00e9\\u20ac\\ud83d\\ude00\\t\\/\\\\\"}", msg,
			       sizeof(msg), tr, sizeof(tr)), 0);
	assert_string_equal(msg, "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\t/\\");
	/* A NUL would end the text early: it becomes a space. */
	assert_int_equal(parse("{\"message\":\"a\\u0000b\"}", msg, sizeof(msg), tr, sizeof(tr)), 0);
	assert_string_equal(msg, "a b");
	/* Cut to fit, never inside a UTF-8 sequence. */
	assert_int_equal(parse("{\"message\":\"abcdef\\u00e9\"}", msg, 8, tr, sizeof(tr)), 0);
	assert_string_equal(msg, "abcdef");
	assert_int_equal(parse("{\"message\":\"abcde\xc3\xa9z\"}", msg, 7, tr, sizeof(tr)), 0);
	assert_string_equal(msg, "abcde");
}

static void test_refused(void **state)
{
	static const char *const bad[] = {
		"", "{", "{}", "[]", "\"message\"", "{\"message\": 3}", "{\"message\": {}}",
		"{\"message\": \"x\"} trailing", "{\"message\": \"x\",}", "{\"message\" \"x\"}",
		"{\"message\": \"unterminated}", "{\"message\": \"\\q\"}", "{\"message\": \"\\u12\"}",
		"{\"message\": \"\\udc00\"}", "{\"message\": \"\\ud800x\"}", "{\"message\": \"a\nb\"}",
		"{\"a\": tru, \"message\": \"x\"}", "{\"a\": -, \"message\": \"x\"}",
		"{\"message\": {\"message\": [\"x\"]}}",
	};
	char msg[64] = "?", tr[64] = "?", deep[200];
	size_t i;
	(void)state;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (parse(bad[i], msg, sizeof(msg), tr, sizeof(tr)) != -1 || msg[0] || tr[0])
			fail_msg("'%s' was taken", bad[i]);
	/* Nesting is bounded. */
	memset(deep, '[', 100);
	memset(deep + 100, ']', 99);
	deep[199] = '\0';
	assert_int_equal(pm_errfile_parse(deep, strlen(deep), msg, sizeof(msg), NULL, 0), -1);
}

static void test_tail(void **state)
{
	struct pm_tail t;
	char out[PM_TAIL_BYTES + 1], big[PM_TAIL_BYTES * 2];
	(void)state;

	pm_tail_reset(&t);
	pm_tail_lines(&t, 5, out, sizeof(out));
	assert_string_equal(out, "");
	pm_tail_feed(&t, "one\ntwo\n", 8);
	pm_tail_feed(&t, "three\nfour", 10);
	pm_tail_lines(&t, 2, out, sizeof(out));
	assert_string_equal(out, "three\nfour");
	pm_tail_lines(&t, 10, out, sizeof(out));
	assert_string_equal(out, "one\ntwo\nthree\nfour");
	pm_tail_lines(&t, 3, out, 6);
	assert_string_equal(out, "two\nt");
	/* Past the ring's size: the cut first line is dropped. */
	memset(big, 'x', sizeof(big));
	big[100] = '\n';
	big[sizeof(big) - 20] = '\n';
	pm_tail_feed(&t, big, sizeof(big));
	pm_tail_feed(&t, "\nlast\n\n", 7);
	pm_tail_lines(&t, 3, out, sizeof(out));
	assert_string_equal(out, "xxxxxxxxxxxxxxxxxxx\nlast");
	/* Byte by byte is the same as at once. */
	pm_tail_reset(&t);
	for (const char *p = "a\nbb\nccc\n"; *p; p++)
		pm_tail_feed(&t, p, 1);
	pm_tail_lines(&t, 2, out, sizeof(out));
	assert_string_equal(out, "bb\nccc");
}

/* A segfault under faulthandler: its last line names extension modules;
 * the summary is the fatal error and the crashing thread's top frame. */
static void test_fatal_python(void **state)
{
	char out[2048], sum[PM_ERR_SUMMARY_MAX + 4];
	const char *tail =
		"step 3\n"
		"Fatal Python error: Segmentation fault\n"
		"\n"
		"Thread 0x00007f7131a3b6c0 (most recent call first):\n"
		"  File \"/usr/lib/python3.11/threading.py\", line 982 in run\n"
		"\n"
		"Current thread 0x00007f71327ccb80 (most recent call first):\n"
		"  File \"/tmp/train.py\", line 4 in crash\n"
		"  File \"/tmp/train.py\", line 6 in <module>\n"
		"\n"
		"Extension modules: numpy.core._multiarray_umath, torch._C (total: 2)\n";
	(void)state;

	pm_err_from_tail(tail, out, sizeof(out));
	pm_err_summary(out, sum, sizeof(sum));
	assert_string_equal(sum, "Fatal Python error: Segmentation fault, in crash "
				 "(/tmp/train.py, line 4)");
	assert_string_equal(pm_err_detail(out), tail);
	/* Without frames (faulthandler off in that thread): the line alone. */
	pm_err_from_tail("Fatal Python error: Aborted\n\nExtension modules: x (total: 1)\n", out,
			 sizeof(out));
	pm_err_summary(out, sum, sizeof(sum));
	assert_string_equal(sum, "Fatal Python error: Aborted");
	/* Python 3.14: the thread's name in its header, and the C stack (tens
	 * of lines) after the Python frames, the fatal line well above the
	 * last PM_TAIL_LINES lines; the detail is those lines. */
	{
		static char big[12288], all[PM_TAIL_BYTES];
		struct pm_tail tl;
		char *p = big;
		int i;
		p += sprintf(p, "Fatal Python error: Segmentation fault\n\n"
			     "Current thread 0x00007f3b [python3] (most recent call first):\n"
			     "  File \"/usr/lib/python3.14/ctypes/__init__.py\", line 577 in "
			     "string_at\n  File \"<string>\", line 1 in <module>\n\n"
			     "Current thread's C stack trace (most recent call first):\n");
		for (i = 0; i < 80; i++)
			p += sprintf(p, "  Binary file \"/usr/bin/python3.14\", at _Py_f%d+0x1f "
				     "[0x55d1c0a%04d]\n", i, i);
		sprintf(p, "\nExtension modules: _ctypes (total: 1)\n");
		/* As procmgr-rank keeps it (rank_exec.c): every line its ring holds. */
		pm_tail_reset(&tl);
		pm_tail_feed(&tl, big, strlen(big));
		pm_tail_lines(&tl, PM_TAIL_BYTES, all, sizeof(all));
		pm_err_from_tail(all, out, sizeof(out));
		pm_err_summary(out, sum, sizeof(sum));
		assert_string_equal(sum, "Fatal Python error: Segmentation fault, in string_at "
					 "(/usr/lib/python3.14/ctypes/__init__.py, line 577)");
		assert_null(strstr(pm_err_detail(out), "Current thread 0x"));
		assert_non_null(strstr(pm_err_detail(out), "_Py_f79+0x1f"));
	}
	/* Quoted inside a line, it is not faulthandler's. */
	pm_err_from_tail("log: Fatal Python error: x\nValueError: y\n", out, sizeof(out));
	pm_err_summary(out, sum, sizeof(sum));
	assert_string_equal(sum, "ValueError: y");
}

static void test_report_text(void **state)
{
	char out[64], wide[256], sum[PM_ERR_SUMMARY_MAX + 4], longl[400];
	(void)state;

	pm_err_from_tail("Traceback:\n  File x\nValueError: loss is nan\n  \n", wide, sizeof(wide));
	pm_err_summary(wide, sum, sizeof(sum));
	assert_string_equal(sum, "ValueError: loss is nan");
	assert_string_equal(pm_err_detail(wide), "Traceback:\n  File x\nValueError: loss is nan\n  \n");
	pm_err_from_tail(" \n\t\n", out, sizeof(out));
	assert_string_equal(out, "");
	/* One line: nothing more than the summary. */
	pm_err_from_tail("\n  \nrank 3: loss is nan\n\n", out, sizeof(out));
	assert_string_equal(out, "rank 3: loss is nan");
	pm_err_compose("m\nignored", "d", out, sizeof(out));
	assert_string_equal(out, "m\nd");
	assert_string_equal(pm_err_detail("m"), "");
	/* The details are cut to fit; the summary comes first. */
	memset(longl, 'y', sizeof(longl));
	longl[sizeof(longl) - 1] = '\0';
	pm_err_compose("sum", longl, out, sizeof(out));
	assert_int_equal(strlen(out), sizeof(out) - 1);
	assert_memory_equal(out, "sum\nyyy", 7);
	/* A long summary is cut, control characters become spaces. */
	pm_err_summary(longl, sum, sizeof(sum));
	assert_int_equal(strlen(sum), PM_ERR_SUMMARY_MAX + 3);
	assert_string_equal(sum + PM_ERR_SUMMARY_MAX, "...");
	pm_err_summary("a\tb\x1b[0m  \r\nrest", sum, sizeof(sum));
	assert_string_equal(sum, "a b [0m");
}

/* Issue 32 (12): "exited with code 4 (exit code 4)". The code once, its
 * error in parentheses only when it says more than the code. */
static void test_exit_line(void **state)
{
	char out[300], big[600];

	(void)state;
	pm_err_exit_line(4, NULL, out, sizeof(out));
	assert_string_equal(out, "exited with code 4");
	pm_err_exit_line(4, "", out, sizeof(out));
	assert_string_equal(out, "exited with code 4");
	pm_err_exit_line(4, " \t", out, sizeof(out));
	assert_string_equal(out, "exited with code 4");
	pm_err_exit_line(4, "exit code 4", out, sizeof(out));
	assert_string_equal(out, "exited with code 4");
	pm_err_exit_line(4, "exited with code 4\n", out, sizeof(out));
	assert_string_equal(out, "exited with code 4");
	/* Another code is news; so is any other text (its first line). */
	pm_err_exit_line(4, "exit code 3", out, sizeof(out));
	assert_string_equal(out, "exited with code 4 (exit code 3)");
	pm_err_exit_line(7, "ValueError: bad lr\nTraceback", out, sizeof(out));
	assert_string_equal(out, "exited with code 7 (ValueError: bad lr)");
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	pm_err_exit_line(1, big, out, sizeof(out));
	assert_int_equal(strlen(out), strlen("exited with code 1 (") + PM_ERR_SUMMARY_MAX + 3 + 1);
	pm_err_exit_line(1, "boom", out, 10);
	assert_string_equal(out, "exited wi");
}

/* Issue 32 (12): a failure with nothing on stderr quotes stdout's last
 * line that is not blank; nothing when stdout has none either. */
static void test_from_stdout(void **state)
{
	char out[400], big[600];

	(void)state;
	pm_err_from_stdout("epoch 1\naccuracy 0.1 below 0.5\n\n  \n", out, sizeof(out));
	assert_string_equal(out, "no error output; stdout's last line: \"accuracy 0.1 below 0.5\"");
	pm_err_from_stdout("  indented\ttab", out, sizeof(out));
	assert_string_equal(out, "no error output; stdout's last line: \"indented tab\"");
	pm_err_from_stdout("", out, sizeof(out));
	assert_string_equal(out, "");
	pm_err_from_stdout("\n \n\t\n", out, sizeof(out));
	assert_string_equal(out, "");
	memset(big, 'y', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	pm_err_from_stdout(big, out, sizeof(out));
	assert_int_equal(strlen(out), strlen("no error output; stdout's last line: \"\"") +
				      PM_ERR_SUMMARY_MAX + 3);
	assert_non_null(strstr(out, "yyy...\""));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_torch_format),
		cmocka_unit_test(test_escapes),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_tail),
		cmocka_unit_test(test_report_text),
		cmocka_unit_test(test_fatal_python),
		cmocka_unit_test(test_exit_line),
		cmocka_unit_test(test_from_stdout),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
