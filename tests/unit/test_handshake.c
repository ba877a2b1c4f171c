/* The tree handshake's payloads (runtime/common/handshake.c): exact round
 * trips, and nothing else accepted. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "common/handshake.h"

static const char NONCE[] = "0123456789abcdef0123456789abcdef";

static struct pm_hs sample(enum pm_hs_kind k)
{
	struct pm_hs h = { .kind = k, .job = 4294967295u, .step = 7, .from = 12, .to = 2 };
	strcpy(h.nonce, NONCE);
	return h;
}

static void test_round_trip(void **state)
{
	struct pm_hs a = sample(PM_HS_HELLO), b;
	char buf[PM_HS_MAX];
	(void)state;

	assert_int_equal(pm_hs_format(&a, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "procmgr-tree v2 hello job=4294967295 step=7 from=12 to=2 "
			    "nonce=0123456789abcdef0123456789abcdef");
	assert_int_equal(pm_hs_parse(buf, &b), 0);
	assert_int_equal(b.kind, PM_HS_HELLO);
	assert_int_equal(b.job, a.job);
	assert_int_equal(b.step, 7);
	assert_int_equal(b.from, 12);
	assert_int_equal(b.to, 2);
	assert_string_equal(b.nonce, NONCE);
	a = sample(PM_HS_WELCOME);
	assert_int_equal(pm_hs_format(&a, buf, sizeof(buf)), 0);
	assert_int_equal(pm_hs_parse(buf, &b), 0);
	assert_int_equal(b.kind, PM_HS_WELCOME);
	/* The buddy link's kinds (state replication) are their own words. */
	a = sample(PM_HS_BUDDY);
	assert_int_equal(pm_hs_format(&a, buf, sizeof(buf)), 0);
	assert_non_null(strstr(buf, " buddy job="));
	assert_int_equal(pm_hs_parse(buf, &b), 0);
	assert_int_equal(b.kind, PM_HS_BUDDY);
	a = sample(PM_HS_BUDDY_WELCOME);
	assert_int_equal(pm_hs_format(&a, buf, sizeof(buf)), 0);
	assert_int_equal(pm_hs_parse(buf, &b), 0);
	assert_int_equal(b.kind, PM_HS_BUDDY_WELCOME);
	a.kind = PM_HS_KINDS;
	assert_int_equal(pm_hs_format(&a, buf, sizeof(buf)), -1);
	a.kind = PM_HS_BUDDY_WELCOME;
	/* Too small a buffer is an error, never a cut payload. */
	assert_int_equal(pm_hs_format(&a, buf, 40), -1);
}

static void test_refused(void **state)
{
	static const char *const bad[] = {
		"",
		"procmgr-tree v1 job=1 step=0", /* the old form */
		"procmgr-tree v2 hello job=1 step=0 from=1 to=0",
		"procmgr-tree v2 hi job=1 step=0 from=1 to=0 nonce=0123456789abcdef0123456789abcdef",
		"procmgr-tree v2 hello job=1 step=0 from=1 to=0 nonce=0123456789abcdef0123456789abcde",
		"procmgr-tree v2 hello job=1 step=0 from=1 to=0 nonce=0123456789ABCDEF0123456789abcdef",
		"procmgr-tree v2 hello job=1 step=0 from=1 to=0 nonce=0123456789abcdef0123456789abcdef ",
		"procmgr-tree v2 hello job=1 step=0 from=1 to=0 nonce=0123456789abcdef0123456789abcdefX",
		"procmgr-tree v2 hello job=+1 step=0 from=1 to=0 nonce=0123456789abcdef0123456789abcdef",
		"procmgr-tree v2 hello job=01 step=0 from=1 to=0 nonce=0123456789abcdef0123456789abcdef",
		"procmgr-tree v2 hello job=1 step=0 from=-1 to=0 nonce=0123456789abcdef0123456789abcdef",
		"procmgr-tree v2 hello  job=1 step=0 from=1 to=0 nonce=0123456789abcdef0123456789abcdef",
		" procmgr-tree v2 hello job=1 step=0 from=1 to=0 nonce=0123456789abcdef0123456789abcdef",
	};
	struct pm_hs h;
	size_t i;
	(void)state;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (pm_hs_parse(bad[i], &h) != -1)
			fail_msg("accepted: '%s'", bad[i]);
	}
	h = sample(PM_HS_HELLO);
	h.nonce[3] = 'g';
	assert_int_equal(pm_hs_format(&h, (char[PM_HS_MAX]){ 0 }, PM_HS_MAX), -1);
}

static void test_nonce_hex(void **state)
{
	unsigned char b[16];
	char out[PM_HS_NONCE_HEX + 1];
	int i;
	(void)state;

	for (i = 0; i < 16; i++)
		b[i] = (unsigned char)(i * 17);
	pm_hs_nonce_hex(b, out);
	assert_string_equal(out, "00112233445566778899aabbccddeeff");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_nonce_hex),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
