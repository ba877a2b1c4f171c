/* Unit tests of runtime/sweep/sweep_metric.c: a trial's result, NAME=VALUE,
 * as its file holds it and as TRIAL_EXIT carries it (its codec), and the
 * order it sorts in. The rules are sweep_metric.h's. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sweep/sweep_metric.h"

#define CHECK(cond, ...) do { if (!(cond)) fail_msg(__VA_ARGS__); } while (0)

static int parse(const char *s, struct pm_metric *m, char *err, size_t len)
{
	return pm_metric_parse(s, strlen(s), m, err, len);
}

/* What is a result: every kind of name and number the header allows. */
static void test_parse_good(void **state)
{
	static const struct { const char *line, *name, *value; double v; } ok[] = {
		{ "loss=0.25", "loss", "0.25", 0.25 },
		{ "  loss=0.25 \r", "loss", "0.25", 0.25 },
		{ "acc.top-1=-3", "acc.top-1", "-3", -3 },
		{ "A_9=1e-4", "A_9", "1e-4", 1e-4 },
		{ "x=.5", "x", ".5", 0.5 },
		{ "x=+7.", "x", "+7.", 7 },
		{ "x=1E+300", "x", "1E+300", 1e300 },
		{ "n2345678901234567890123456789012=12345678901234567890123456789012", /* 32, 32 */
		  "n2345678901234567890123456789012", "12345678901234567890123456789012",
		  12345678901234567890123456789012.0 },
	};
	struct pm_metric m;
	char err[200], text[PM_METRIC_TEXT_MAX];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		CHECK(parse(ok[i].line, &m, err, sizeof(err)) == 0, "%s: %s", ok[i].line, err);
		assert_string_equal(m.name, ok[i].name);
		assert_string_equal(m.value, ok[i].value);
		CHECK(m.v == ok[i].v, "%s: %g", ok[i].line, m.v);
		pm_metric_format(&m, text, sizeof(text));
		CHECK(strlen(text) == strlen(ok[i].name) + 1 + strlen(ok[i].value), "%s", text);
	}
}

/* What is not, each with an error that says what is allowed. */
static void test_parse_bad(void **state)
{
	static const struct { const char *line, *says; } bad[] = {
		{ "0.25", "is not NAME=VALUE" },
		{ "", "is not NAME=VALUE" },
		{ "=1", "has 0 characters; it has 1 to 32" },
		{ "n23456789012345678901234567890123=1", "has 33 characters; it has 1 to 32" },
		{ "lo ss=1", "has ' '; a name has letters, digits" },
		{ "l/s=1", "has '/'" },
		{ "loss=", "has 0 characters; a value is a number of 1 to 32" },
		{ "loss=123456789012345678901234567890123", "has 33 characters" },
		{ "loss=nan", "'nan', is not a finite decimal number" },
		{ "loss=inf", "'inf', is not a finite decimal number" },
		{ "loss=-Infinity", "is not a finite decimal number" },
		{ "loss=0x10", "'0x10', is not a finite decimal number" },
		{ "loss=1e999", "'1e999', is not a finite" },
		{ "loss=0.5 0.6", "'0.5 0.6', is not a finite" },
		{ "loss=0.5=1", "is not a finite" },
		{ "loss=abc", "is not a finite" },
	};
	struct pm_metric m;
	char err[200];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		CHECK(parse(bad[i].line, &m, err, sizeof(err)) == -1, "accepted '%s'", bad[i].line);
		CHECK(strstr(err, bad[i].says), "'%s': [%s]", bad[i].line, err);
		assert_string_equal(m.name, "");
	}
}

/* A file's last line that is not blank counts; none is 0; a bad one -1. */
static void test_from_text(void **state)
{
	struct pm_metric m;
	char err[200];
	const char *t;

	(void)state;
	t = "loss=3\nloss=2\nloss=1\n\n  \n";
	assert_int_equal(pm_metric_from_text(t, strlen(t), &m, err, sizeof(err)), 1);
	assert_string_equal(m.value, "1");
	t = "loss=3\nloss=2"; /* no line end */
	assert_int_equal(pm_metric_from_text(t, strlen(t), &m, err, sizeof(err)), 1);
	assert_string_equal(m.value, "2");
	assert_int_equal(pm_metric_from_text("", 0, &m, err, sizeof(err)), 0);
	assert_int_equal(pm_metric_from_text("\n \n", 3, &m, err, sizeof(err)), 0);
	t = "loss=1\nepoch 3 done\n";
	assert_int_equal(pm_metric_from_text(t, strlen(t), &m, err, sizeof(err)), -1);
	CHECK(strstr(err, "'epoch 3 done' is not NAME=VALUE"), "[%s]", err);
	assert_int_equal(pm_metric_from_text("loss=1\0x\n", 9, &m, err, sizeof(err)), -1);
	CHECK(strstr(err, "NUL"), "[%s]", err);
	/* Not NUL-terminated: only n bytes are read. */
	assert_int_equal(pm_metric_from_text("loss=1\nloss=2", 6, &m, err, sizeof(err)), 1);
	assert_string_equal(m.value, "1");
}

/* The codec: what is encoded is what is decoded, with and without a
 * result or an error; a long error is cut, the result never. */
static void test_codec(void **state)
{
	static const char *errors[] = { NULL, "", "ValueError: bad\nTraceback...", NULL };
	struct pm_metric m, back;
	struct pm_msg msg;
	const char *error;
	char err[200], big[PM_WIRE_TEXT_MAX + 100];
	size_t i;
	int with;

	(void)state;
	assert_int_equal(parse("loss=0.125", &m, err, sizeof(err)), 0);
	memset(big, 'e', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	errors[3] = big;
	for (with = 0; with < 2; with++)
		for (i = 0; i < sizeof(errors) / sizeof(errors[0]); i++) {
			pm_msg_init(&msg, PM_MSG_TRIAL_EXIT);
			msg.count = PM_FLAG_STOPPED;
			pm_metric_encode(&msg, with ? &m : NULL, errors[i]);
			/* Other flags are kept. */
			assert_true(msg.count & PM_FLAG_STOPPED);
			assert_int_equal(!!(msg.count & PM_FLAG_RESULT), with);
			assert_int_equal(pm_metric_decode(&msg, &back, &error), with);
			if (with) {
				assert_string_equal(back.name, "loss");
				assert_string_equal(back.value, "0.125");
			}
			if (i == 3)
				CHECK(strlen(error) > 4000 && strspn(error, "e") == strlen(error),
				      "%zu", strlen(error));
			else
				assert_string_equal(error, errors[i] ? errors[i] : "");
		}
	/* Through a frame and back. */
	{
		uint8_t frame[PM_WIRE_FRAME_MAX];
		struct pm_msg out;
		const char *why;
		int n;

		pm_msg_init(&msg, PM_MSG_TRIAL_EXIT);
		pm_metric_encode(&msg, &m, "boom");
		n = pm_msg_encode(&msg, frame, sizeof(frame));
		assert_true(n > 0);
		assert_int_equal(pm_msg_decode(frame, (size_t)n, &out, &why), n);
		assert_int_equal(pm_metric_decode(&out, &back, &error), 1);
		assert_string_equal(back.value, "0.125");
		assert_string_equal(error, "boom");
	}
	/* Without the flag a text that looks like a result is an error. */
	pm_msg_init(&msg, PM_MSG_TRIAL_EXIT);
	pm_msg_set_text(&msg, "loss=1\nx");
	assert_int_equal(pm_metric_decode(&msg, &back, &error), 0);
	assert_string_equal(error, "loss=1\nx");
	/* The flag with no result in front: refused, the rest still the error. */
	msg.count = PM_FLAG_RESULT;
	pm_msg_set_text(&msg, "garbage here\nthe error");
	assert_int_equal(pm_metric_decode(&msg, &back, &error), -1);
	assert_string_equal(back.name, "");
	assert_string_equal(error, "the error");
	pm_msg_set_text(&msg, "loss=nan");
	assert_int_equal(pm_metric_decode(&msg, &back, &error), -1);
	assert_string_equal(error, "");
}

/* Lowest first (or highest), those without a result last either way, by
 * name first when names differ. */
static void test_cmp(void **state)
{
	(void)state;
	assert_int_equal(pm_metric_cmp("l=1", "l=2", false), -1);
	assert_int_equal(pm_metric_cmp("l=2", "l=1", false), 1);
	assert_int_equal(pm_metric_cmp("l=1", "l=2", true), 1);
	assert_int_equal(pm_metric_cmp("l=10", "l=9", false), 1); /* numbers, not text */
	assert_int_equal(pm_metric_cmp("l=1e-3", "l=0.01", false), -1);
	assert_int_equal(pm_metric_cmp("l=1", "l=1.0", false), 0);
	assert_int_equal(pm_metric_cmp(NULL, "l=1", false), 1);
	assert_int_equal(pm_metric_cmp(NULL, "l=1", true), 1);
	assert_int_equal(pm_metric_cmp("l=1", NULL, true), -1);
	assert_int_equal(pm_metric_cmp("l=1", "junk", false), -1);
	assert_int_equal(pm_metric_cmp(NULL, "", false), 0);
	assert_int_equal(pm_metric_cmp("acc=9", "loss=1", false), -1);
	assert_int_equal(pm_metric_cmp("acc=9", "loss=1", true), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_good),
		cmocka_unit_test(test_parse_bad),
		cmocka_unit_test(test_from_text),
		cmocka_unit_test(test_codec),
		cmocka_unit_test(test_cmp),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
