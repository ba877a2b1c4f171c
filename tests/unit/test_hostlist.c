/* Unit tests of runtime/common/hostlist.c: the first host of a Slurm host list
 * (SLURM_JOB_NODELIST, SLURM_STEP_NODELIST) and the reserved port list
 * (SLURM_STEP_RESV_PORTS).
 *
 * Expected values are worked out from Slurm's host list syntax (a prefix,
 * a bracketed list of numbers and ranges that keep their zero padding, an
 * optional suffix) and from the port list syntax ("LO-HI" or a comma list
 * of ports and ranges, each port 1..65535), not copied from a run of the
 * code. Inputs are copied into blocks of their exact size so that a read
 * past the terminating NUL is an AddressSanitizer error under make
 * check-sanitize. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/hostlist.h"

#define CHECK(cond, ...) do { if (!(cond)) fail_msg(__VA_ARGS__); } while (0)

static int first_of(const char *list, char *buf, size_t len)
{
	char *copy = strdup(list);
	int r;

	assert_non_null(copy);
	r = pm_hostlist_first(copy, buf, len);
	free(copy);
	return r;
}

static void first_ok(const char *list, const char *want)
{
	char buf[256];
	size_t need = strlen(want) + 1, len;

	memset(buf, 'x', sizeof(buf));
	CHECK(first_of(list, buf, sizeof(buf)) == 0, "\"%s\" refused", list);
	CHECK(strcmp(buf, want) == 0, "\"%s\": first host \"%s\", want \"%s\"",
	      list, buf, want);

	/* Exactly enough room works; one byte less is refused. Exact-size
	 * blocks, so that a write past len shows under ASan. */
	for (len = 0; len <= need; len++) {
		char *b = malloc(len ? len : 1);
		int r;

		assert_non_null(b);
		r = first_of(list, b, len);
		if (len < need)
			CHECK(r == -1, "\"%s\" into %zu bytes: accepted (needs %zu)",
			      list, len, need);
		else
			CHECK(r == 0 && strcmp(b, want) == 0,
			      "\"%s\" into %zu bytes: %d", list, len, r);
		free(b);
	}
}

static void first_bad(const char *list)
{
	char buf[256];

	strcpy(buf, "stale");
	CHECK(first_of(list, buf, sizeof(buf)) == -1,
	      "\"%s\" accepted as \"%s\"", list, buf);
}

static void test_first(void **state)
{
	(void)state;
	first_ok("n1", "n1");
	first_ok("n[1-4]", "n1");
	first_ok("n[01-04,7]", "n01");
	first_ok("a,b", "a");
	first_ok("gpu[3-4]-ib", "gpu3-ib");
	first_ok("rack1-n[5]", "rack1-n5");
	first_ok("node[01-04,7],gpu3", "node01");
	first_ok("n[7,1-3]", "n7");
	first_ok("n[001]", "n001");
	first_ok("n[1-4],m[5-6]", "n1");
	first_ok("gpu[3-4]-ib,cpu1", "gpu3-ib");
	first_ok("host.example.org", "host.example.org");
	first_ok("n1,", "n1");
	first_ok("x", "x");
	first_ok("n[0]", "n0");
	first_ok("n[10-12]x", "n10x");
}

static void test_first_bad(void **state)
{
	char buf[16];

	(void)state;
	assert_int_equal(pm_hostlist_first(NULL, buf, sizeof(buf)), -1);
	first_bad("");
	first_bad("[1-2]");   /* no host name before the range */
	first_bad("[1]");
	first_bad("n[");
	first_bad("n[a-b]");
	first_bad("n[]");
	first_bad("n[1");
	first_bad("n[1-");
	first_bad("n[1-2");
	first_bad("n[1,2");
	first_bad("n[-2]");
	first_bad("n[,2]");
	first_bad("n[1-b]");  /* the whole range must be numbers */
	first_bad("n[1-]");
	first_bad("n[1,]");
	first_bad("n[1-2-3]");
	first_bad("n[1x]");
	first_bad("n[1-2]x[3]"); /* a second range is not supported */
	first_bad(",a");
	first_bad(",");
}

static int ports(const char *s, unsigned *first, unsigned *count)
{
	char *copy = strdup(s);
	int r;

	assert_non_null(copy);
	r = pm_ports_parse(copy, first, count);
	free(copy);
	return r;
}

static void ports_ok(const char *s, unsigned want_first, unsigned want_count)
{
	unsigned first = 0xdead, count = 0xbeef;

	CHECK(ports(s, &first, &count) == 0, "ports \"%s\" refused", s);
	CHECK(first == want_first && count == want_count,
	      "ports \"%s\": first %u count %u, want %u and %u", s, first, count,
	      want_first, want_count);
}

static void ports_bad(const char *s)
{
	unsigned first = 0, count = 0;

	CHECK(ports(s, &first, &count) == -1,
	      "ports \"%s\" accepted: first %u count %u", s, first, count);
}

static void test_ports(void **state)
{
	(void)state;
	ports_ok("20017-20019", 20017, 3);
	ports_ok("20017,20019", 20017, 2);
	ports_ok("5", 5, 1);
	ports_ok("1-2,4", 1, 3);
	ports_ok("1", 1, 1);
	ports_ok("65535", 65535, 1);
	ports_ok("1-65535", 1, 65535);
	ports_ok("20017-20017", 20017, 1);
	ports_ok("4,1-2", 4, 3);
	ports_ok("10,20,30,40-41", 10, 5);
	ports_ok("020017", 20017, 1); /* leading zeros are still decimal */
}

static void test_ports_bad(void **state)
{
	unsigned f, c;

	(void)state;
	assert_int_equal(pm_ports_parse(NULL, &f, &c), -1);
	ports_bad("");
	ports_bad("0");
	ports_bad("0-5");
	ports_bad("65536");
	ports_bad("1-65536");
	ports_bad("20019-20017");
	ports_bad("-5");
	ports_bad("+5");
	ports_bad(" 5");
	ports_bad("5 ");
	ports_bad("5,");
	ports_bad(",5");
	ports_bad("5,,6");
	ports_bad("5-");
	ports_bad("5--6");
	ports_bad("5-6-7");
	ports_bad("a");
	ports_bad("5a");
	ports_bad("5-6a");
	ports_bad("0x10");
	/* Signs and white space are refused after a comma or dash as well as
	 * at the start. */
	ports_bad("5-+6");
	ports_bad("5- 6");
	ports_bad("5,+6");
	ports_bad("5, 6");
	ports_bad("5,-6");
	/* Numbers that do not fit an unsigned must not wrap into a port. */
	ports_bad("4294967297");          /* 2^32 + 1 */
	ports_bad("4294987313");          /* 2^32 + 20017 */
	ports_bad("1,4294967297");
	ports_bad("1-4294967297");
	ports_bad("1,-4294967295");
	ports_bad("18446744073709551617"); /* 2^64 + 1 */
	ports_bad("99999999999999999999999999");
}

/* Expands list and compares with the names joined by spaces. */
static void expect(const char *list, const char *want)
{
	char **v = NULL, joined[4096] = "";
	int n = pm_hostlist_expand(list, 1000, &v), i;

	assert_true(n > 0);
	for (i = 0; i < n; i++) {
		strcat(joined, i ? " " : "");
		strcat(joined, v[i]);
	}
	assert_string_equal(joined, want);
	/* The first host agrees with the full expansion. */
	{
		char first[256];
		assert_int_equal(pm_hostlist_first(list, first, sizeof(first)), 0);
		assert_string_equal(first, v[0]);
	}
	pm_hostlist_free(v, n);
}

static void test_expand(void **state)
{
	(void)state;
	expect("n1", "n1");
	expect("n[1-4]", "n1 n2 n3 n4");
	expect("n[01-03,7]", "n01 n02 n03 n7"); /* as scontrol show hostnames */
	expect("a,b", "a b");
	expect("gpu[3-4]-ib", "gpu3-ib gpu4-ib");
	expect("rack1-n[5],x[9-10]", "rack1-n5 x9 x10");
	expect("pmnode[1-4]", "pmnode1 pmnode2 pmnode3 pmnode4");
}

static void test_expand_bad(void **state)
{
	static const char *const bad[] = {
		"", "[1-2]", "n[", "n]", "n[a-b]", "n[2-1]", "n[1,]", "n[1-2][3]",
		"n[[1]]", "n[1-2", ",", "a,,b", "n[-1]", "n[1--2]",
	};
	char **v = NULL;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int n = pm_hostlist_expand(bad[i], 1000, &v);
		if (n >= 0)
			fail_msg("'%s' was accepted (%d hosts)", bad[i], n);
	}
	/* Bounded: a list may not make more names than asked for. */
	assert_int_equal(pm_hostlist_expand("n[1-100000]", 1000, &v), -1);
	assert_int_equal(pm_hostlist_expand("n[1-1000]", 1000, &v), 1000);
	assert_string_equal(v[999], "n1000");
	pm_hostlist_free(v, 1000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first),
		cmocka_unit_test(test_first_bad),
		cmocka_unit_test(test_ports),
		cmocka_unit_test(test_ports_bad),
		cmocka_unit_test(test_expand),
		cmocka_unit_test(test_expand_bad),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
