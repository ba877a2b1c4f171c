/* Unit tests of runtime/common/stateproto.c: every request of the state
 * socket parsed and formatted back, and every refusal with its text. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "common/stateproto.h"

static void roundtrip(const char *line, bool fd, enum pm_sp_kind kind)
{
	struct pm_sp_req r;
	char err[256], back[PM_SP_LINE_MAX];

	if (pm_sp_parse(line, strlen(line), fd, &r, err, sizeof(err)))
		fail_msg("'%s' refused: %s", line, err);
	assert_int_equal(r.kind, kind);
	{
		int n = pm_sp_format(&r, back, sizeof(back));
		assert_int_equal(n, (int)strlen(back));
	}
	if (line[strlen(line) - 1] == '\n')
		assert_memory_equal(back, line, strlen(line) - 1);
	else
		assert_string_equal(back, line);
}

static void test_requests(void **state)
{
	struct pm_sp_req r;
	char err[256];
	(void)state;

	roundtrip("begin model 67108864", false, PM_SP_BEGIN);
	roundtrip("begin opt.state_v-2 1\n", false, PM_SP_BEGIN);
	roundtrip("commit 7 24", true, PM_SP_COMMIT);
	roundtrip("commit 18446744073709551615 0", true, PM_SP_COMMIT);
	roundtrip("swap 7 24", true, PM_SP_SWAP);
	roundtrip("abort 3", false, PM_SP_ABORT);
	roundtrip("load model", false, PM_SP_LOAD);
	roundtrip("list", false, PM_SP_LIST);
	assert_int_equal(pm_sp_parse("begin model 1125899906842624", 28, false, &r, err,
				     sizeof(err)), 0);
	assert_true(r.size == PM_SP_SIZE_MAX);
	assert_int_equal(pm_sp_parse("commit 5 99", 11, true, &r, err, sizeof(err)), 0);
	assert_true(r.ticket == 5 && r.step == 99);
	assert_int_equal(pm_sp_parse("swap 6 100", 10, true, &r, err, sizeof(err)), 0);
	assert_true(r.kind == PM_SP_SWAP && r.ticket == 6 && r.step == 100);
}

static void refused(const char *line, size_t len, bool fd, const char *want)
{
	struct pm_sp_req r;
	char err[256] = "";

	if (!pm_sp_parse(line, len, fd, &r, err, sizeof(err)))
		fail_msg("'%s' accepted", line);
	if (!strstr(err, want))
		fail_msg("'%s': '%s' does not say '%s'", line, err, want);
}

static void test_refusals(void **state)
{
	char longline[400];
	(void)state;

	refused("", 0, false, "empty request");
	refused("\n", 1, false, "empty request");
	refused("   ", 3, false, "empty request");
	memset(longline, 'a', sizeof(longline));
	refused(longline, sizeof(longline), false, "at most 255 bytes");
	refused("load a\nload b", 13, false, "byte 7 is 0x0a");
	refused("load \x01", 6, false, "printable ASCII");
	refused("load m\0x", 8, false, "byte 7 is 0x00");
	refused("save model 10", 13, false, "unknown request 'save': begin, commit, swap, abort, load or list");
	refused("begin model", 11, false, "'begin' takes 2 arguments: begin NAME SIZE");
	refused("begin model 1 2", 15, false, "'begin' takes 2 arguments");
	refused("begin a b c d e f", 17, false, "'begin' takes 2 arguments");
	refused("list all", 8, false, "'list' takes 0 arguments");
	refused("load model", 10, true, "'load' takes no descriptor");
	refused("commit 1 0", 10, false, "needs its descriptor attached (SCM_RIGHTS)");
	refused("begin .hidden 10", 16, false, "not starting with '.'");
	refused("begin a/b 10", 12, false, "character 2 is not allowed");
	refused("begin model 0", 13, false, "bad size '0': bytes, 1 to 1125899906842624");
	refused("begin model 1125899906842625", 28, false, "bad size");
	refused("begin model -1", 14, false, "bad size");
	refused("begin model 010", 15, false, "bad size");
	refused("begin model 99999999999999999999999", 35, false, "bad size");
	refused("commit 0 0", 10, true, "bad ticket '0'");
	refused("commit x 0", 10, true, "bad ticket");
	refused("commit 1 1e3", 12, true, "bad step '1e3': a whole number, 0 for none");
	refused("swap 1 0", 8, false, "needs its descriptor attached (SCM_RIGHTS)");
	refused("swap 0 0", 8, true, "bad ticket '0'");
	refused("swap 1 x", 8, true, "bad step 'x'");
	refused("swap 1", 6, true, "'swap' takes 2 arguments: swap TICKET STEP");
	refused("abort 18446744073709551616", 26, false, "bad ticket");
	refused("load ", 5, false, "'load' takes 1 argument: load NAME");
}

static void test_replies(void **state)
{
	struct pm_state_blob b = { .grank = 3, .name = "model", .version = 12, .size = 4096,
				   .saved_ms = 1000, .step = 24, .safe = false };
	char buf[128];
	(void)state;

	assert_int_equal(pm_sp_format_load(&b, 1250, buf, sizeof(buf)), 17);
	assert_string_equal(buf, "ok 12 4096 24 250");
	assert_true(pm_sp_format_entry(&b, 900, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "model 12 4096 24 0 0"); /* a clock behind: age 0 */
	b.safe = true;
	assert_true(pm_sp_format_entry(&b, 1000, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "model 12 4096 24 0 1");
	assert_int_equal(pm_sp_format_load(&b, 1250, buf, 10), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_requests),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_replies),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
