/* Unit tests of runtime/common/checkspec.c: the grammar of health check lists
 * (--procmgr-health=LIST and the site's health=), as PM_CHECK_GRAMMAR
 * states it. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/checkspec.h"

static char err[512];

#define CHECK(cond, ...) do { if (!(cond)) fail_msg(__VA_ARGS__); } while (0)

static void contains(const char *hay, const char *needle)
{
	CHECK(strstr(hay, needle), "expected \"%s\" in message \"%s\"", needle, hay);
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(pm_check_name(PM_CHECK_GPU), "gpu");
	assert_string_equal(pm_check_name(PM_CHECK_MEM), "mem");
	assert_string_equal(pm_check_name(PM_CHECK_DISK), "disk");
	assert_string_equal(pm_check_name(PM_CHECK_NIC), "nic");
	assert_string_equal(pm_check_name(PM_CHECK_SCRIPT), "script");
}

static void test_size(void **state)
{
	static const struct { const char *s; uint64_t v; } ok[] = {
		{ "0", 0 }, { "1", 1 }, { "1023", 1023 },
		{ "1K", 1024 }, { "1k", 1024 }, { "4M", 4ull << 20 }, { "4m", 4ull << 20 },
		{ "10G", 10ull << 30 }, { "2T", 2ull << 40 }, { "0G", 0 },
		{ "007K", 7ull << 10 },
		{ "18446744073709551615", UINT64_MAX },
		/* The largest multiples that fit in 64 bits. */
		{ "16777215T", 16777215ull << 40 },
		{ "17179869183G", 17179869183ull << 30 },
	};
	static const char *const bad[] = {
		"", "K", "-1", "+1", " 1", "1 ", "1 K", "1.5G", "1KB", "1Ki", "1P", "1B",
		"0x10", "1e3", "G1",
		"18446744073709551616", /* UINT64_MAX + 1 */
		"99999999999999999999999",
		"16777216T",            /* 2^64 bytes */
		"17179869184G",         /* 2^64 bytes */
	};
	size_t i;
	uint64_t v;
	(void)state;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		v = 42;
		CHECK(pm_parse_size(ok[i].s, &v) == 0 && v == ok[i].v,
		      "size '%s' gave %llu", ok[i].s, (unsigned long long)v);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 42;
		CHECK(pm_parse_size(bad[i], &v) == -1, "size '%s' accepted", bad[i]);
		CHECK(v == 42, "refused size '%s' changed the output", bad[i]);
	}
	assert_int_equal(pm_parse_size(NULL, &v), -1);
}

static struct pm_check ck;

static void check_ok(const char *item, enum pm_check_kind kind, const char *arg,
		     uint64_t min, int count)
{
	memset(&ck, 0x5a, sizeof(ck));
	err[0] = '\0';
	CHECK(pm_check_parse(item, &ck, err, sizeof(err)) == 0, "'%s' refused: %s", item, err);
	CHECK(ck.kind == kind, "'%s': kind %s", item, pm_check_name(ck.kind));
	CHECK(!strcmp(ck.arg, arg), "'%s': arg '%s', not '%s'", item, ck.arg, arg);
	CHECK(ck.min_bytes == min, "'%s': min %llu, not %llu", item,
	      (unsigned long long)ck.min_bytes, (unsigned long long)min);
	CHECK(ck.count == count, "'%s': count %d, not %d", item, ck.count, count);
}

/* Refused with "health check 'ITEM': WHY; allowed: GRAMMAR". */
static void check_bad(const char *item, const char *why)
{
	char want[PATH_MAX + 64];

	strcpy(err, "stale");
	CHECK(pm_check_parse(item, &ck, err, sizeof(err)) == -1, "'%s' accepted", item);
	/* A long item is cut after 64 characters, so that the reason and
	 * the grammar still fit. */
	if (strlen(item) > 64)
		snprintf(want, sizeof(want), "health check '%.64s...': ", item);
	else
		snprintf(want, sizeof(want), "health check '%s': ", item);
	CHECK(!strncmp(err, want, strlen(want)), "'%s': message '%s'", item, err);
	contains(err, why);
	contains(err, "; allowed: " PM_CHECK_GRAMMAR);
}

static void test_gpu(void **state)
{
	(void)state;
	check_ok("gpu", PM_CHECK_GPU, "", 0, -1);
	check_ok("gpu:1", PM_CHECK_GPU, "", 0, 1);
	check_ok("gpu:8", PM_CHECK_GPU, "", 0, 8);
	check_ok("gpu:08", PM_CHECK_GPU, "", 0, 8);
	check_ok("gpu:1024", PM_CHECK_GPU, "", 0, 1024);
	check_bad("gpu:0", "COUNT must be an integer from 1 to 1024");
	check_bad("gpu:1025", "COUNT must be an integer from 1 to 1024");
	check_bad("gpu:", "COUNT must be");
	check_bad("gpu:-1", "COUNT must be");
	check_bad("gpu:+1", "COUNT must be");
	check_bad("gpu: 1", "COUNT must be");
	check_bad("gpu:x", "COUNT must be");
	check_bad("gpu:2x", "COUNT must be");
	check_bad("gpu:1.5", "COUNT must be");
	check_bad("gpu:1:2", "COUNT must be");
	check_bad("gpu:99999999999999999999999", "COUNT must be");
	check_bad("gpu:4294967297", "COUNT must be");
}

static void test_mem(void **state)
{
	(void)state;
	check_ok("mem", PM_CHECK_MEM, "", 0, -1);
	check_ok("mem:1", PM_CHECK_MEM, "", 1, -1);
	check_ok("mem:4G", PM_CHECK_MEM, "", 4ull << 30, -1);
	check_ok("mem:512m", PM_CHECK_MEM, "", 512ull << 20, -1);
	check_bad("mem:0", "MIN must be a positive size");
	check_bad("mem:0G", "MIN must be a positive size");
	check_bad("mem:", "MIN must be a positive size");
	check_bad("mem:-1G", "MIN must be a positive size");
	check_bad("mem:1X", "MIN must be a positive size");
	check_bad("mem:1G:2", "MIN must be a positive size");
	check_bad("mem:16777216T", "MIN must be a positive size");
}

static void test_disk(void **state)
{
	char item[PATH_MAX + 16];
	(void)state;

	check_ok("disk:/scratch", PM_CHECK_DISK, "/scratch", 0, -1);
	check_ok("disk:/", PM_CHECK_DISK, "/", 0, -1);
	check_ok("disk:/scratch:10G", PM_CHECK_DISK, "/scratch", 10ull << 30, -1);
	check_ok("disk:/tmp/a-b_c.d:1", PM_CHECK_DISK, "/tmp/a-b_c.d", 1, -1);
	check_bad("disk", "disk needs an absolute PATH");
	check_bad("disk:", "disk needs an absolute PATH");
	check_bad("disk:scratch", "disk needs an absolute PATH");
	check_bad("disk::10G", "disk needs an absolute PATH");
	check_bad("disk:/scratch:", "MIN must be a positive size");
	check_bad("disk:/scratch:0", "MIN must be a positive size");
	check_bad("disk:/scratch:ten", "MIN must be a positive size");
	check_bad("disk:/scratch:1G:2", "MIN must be a positive size");
	/* The longest path that fits, and one more. */
	strcpy(item, "disk:/");
	memset(item + 6, 'd', PATH_MAX - 2);
	item[6 + PATH_MAX - 2] = '\0';
	memset(&ck, 0, sizeof(ck));
	assert_int_equal(pm_check_parse(item, &ck, err, sizeof(err)), 0);
	assert_int_equal(strlen(ck.arg), PATH_MAX - 1);
	strcat(item, "d");
	check_bad(item, "PATH is too long");
	strcat(item, ":1G");
	check_bad(item, "PATH is too long");
}

static void test_nic(void **state)
{
	char item[PATH_MAX + 16];
	(void)state;

	check_ok("nic", PM_CHECK_NIC, "", 0, -1);
	check_ok("nic:ib0", PM_CHECK_NIC, "ib0", 0, -1);
	check_ok("nic:mlx5_0+mlx5_1", PM_CHECK_NIC, "mlx5_0+mlx5_1", 0, -1);
	check_ok("nic:eth0.100+bond-1", PM_CHECK_NIC, "eth0.100+bond-1", 0, -1);
	check_bad("nic:", "NAME must be device names joined by '+'");
	check_bad("nic:+ib0", "NAME must be");
	check_bad("nic:ib0+", "NAME must be");
	check_bad("nic:ib0++ib1", "NAME must be");
	check_bad("nic:+", "NAME must be");
	check_bad("nic:ib 0", "NAME must be");
	check_bad("nic:ib0/1", "NAME must be");
	check_bad("nic:ib0:1", "NAME must be");
	check_bad("nic:ib0;rm", "NAME must be");
	/* A name list the field cannot hold. */
	strcpy(item, "nic:");
	memset(item + 4, 'n', PATH_MAX);
	item[4 + PATH_MAX] = '\0';
	check_bad(item, "NAME must be");
}

static void test_script(void **state)
{
	char item[PATH_MAX + 16];
	(void)state;

	check_ok("script:/usr/libexec/procmgr/check", PM_CHECK_SCRIPT,
		 "/usr/libexec/procmgr/check", 0, -1);
	/* Everything after "script:" is the path, colons included. */
	check_ok("script:/opt/a:b", PM_CHECK_SCRIPT, "/opt/a:b", 0, -1);
	check_bad("script", "script needs an absolute PATH");
	check_bad("script:", "script needs an absolute PATH");
	check_bad("script:check.sh", "script needs an absolute PATH");
	check_bad("script:./check", "script needs an absolute PATH");
	strcpy(item, "script:/");
	memset(item + 8, 's', PATH_MAX - 2);
	item[8 + PATH_MAX - 2] = '\0';
	assert_int_equal(pm_check_parse(item, &ck, err, sizeof(err)), 0);
	assert_int_equal(strlen(ck.arg), PATH_MAX - 1);
	strcat(item, "s");
	check_bad(item, "PATH is too long");
}

/* Options travel between srun and slurmstepd as space-separated text, and
 * plugstack.conf arguments are split at spaces: a path with white space
 * in it cannot get through, so it is refused where it is first given. */
static void test_path_white_space(void **state)
{
	(void)state;
	check_bad("script:/opt/site checks/run", "white space");
	check_bad("script:/opt/a\tb", "white space");
	check_bad("disk:/scratch dir", "white space");
	check_bad("disk:/scratch\n:1G", "white space");
}

static void test_unknown(void **state)
{
	(void)state;
	check_bad("", "unknown check");
	check_bad("gpus", "unknown check");
	check_bad("GPU", "unknown check");
	check_bad("gp", "unknown check");
	check_bad("cpu:2", "unknown check");
	check_bad(":gpu", "unknown check");
	check_bad(" gpu", "unknown check");
	check_bad("gpu ", "unknown check");
	check_bad("memory:1G", "unknown check");
	check_bad("scripts:/x", "unknown check");
}

static void test_list(void **state)
{
	struct pm_check out[8];
	(void)state;

	assert_int_equal(pm_checks_parse("", out, 8, err, sizeof(err)), 0);
	assert_int_equal(pm_checks_parse("gpu", out, 8, err, sizeof(err)), 1);
	assert_int_equal(out[0].kind, PM_CHECK_GPU);
	assert_int_equal(out[0].count, -1);

	assert_int_equal(pm_checks_parse("gpu:4,mem:10G,disk:/scratch:1T,nic:ib0+ib1,"
					 "script:/usr/libexec/chk", out, 8, err,
					 sizeof(err)), 5);
	assert_int_equal(out[0].kind, PM_CHECK_GPU);
	assert_int_equal(out[0].count, 4);
	assert_int_equal(out[1].kind, PM_CHECK_MEM);
	assert_int_equal(out[1].min_bytes, 10ull << 30);
	assert_int_equal(out[2].kind, PM_CHECK_DISK);
	assert_string_equal(out[2].arg, "/scratch");
	assert_int_equal(out[2].min_bytes, 1ull << 40);
	assert_int_equal(out[3].kind, PM_CHECK_NIC);
	assert_string_equal(out[3].arg, "ib0+ib1");
	assert_int_equal(out[4].kind, PM_CHECK_SCRIPT);
	assert_string_equal(out[4].arg, "/usr/libexec/chk");

	/* Only counting, as the option parsers do. */
	assert_int_equal(pm_checks_parse("gpu,gpu,mem", NULL, 0, err, sizeof(err)), 3);
	/* The same check twice is allowed. */
	assert_int_equal(pm_checks_parse("gpu,gpu", out, 8, err, sizeof(err)), 2);
}

static void test_list_max(void **state)
{
	struct pm_check out[3];
	(void)state;

	memset(out, 0, sizeof(out));
	/* Exactly max: fine. One more: an error, and out[] not overrun (ASan). */
	assert_int_equal(pm_checks_parse("gpu,mem", out, 2, err, sizeof(err)), 2);
	assert_int_equal(pm_checks_parse("gpu,mem,nic", out, 2, err, sizeof(err)), -1);
	assert_string_equal(err, "more than 2 health checks");
	assert_int_equal(pm_checks_parse("gpu", out, 0, err, sizeof(err)), -1);
	assert_string_equal(err, "more than 0 health checks");
	/* A bad item past max is reported as bad, not as one too many. */
	assert_int_equal(pm_checks_parse("gpu,mem,bogus", out, 2, err, sizeof(err)), -1);
	contains(err, "'bogus'");
}

static void list_bad(const char *list, const char *item, const char *why)
{
	char want[512];

	strcpy(err, "stale");
	CHECK(pm_checks_parse(list, NULL, 0, err, sizeof(err)) == -1, "'%s' accepted", list);
	snprintf(want, sizeof(want), "health check '%s': %s", item, why);
	contains(err, want);
	contains(err, PM_CHECK_GRAMMAR);
}

static void test_list_bad(void **state)
{
	char *huge;
	size_t i;
	(void)state;

	list_bad(",", ",", "empty item in the list");
	list_bad(",gpu", ",gpu", "empty item in the list");
	list_bad("gpu,", "gpu,", "empty item in the list");
	list_bad("gpu,,mem", "gpu,,mem", "empty item in the list");
	/* The bad item is named, not the whole list. */
	list_bad("gpu,mem:0,nic", "mem:0", "MIN must be a positive size");
	list_bad("gpu,bogus", "bogus", "unknown check");
	list_bad("gpu, mem", " mem", "unknown check");
	list_bad("disk:/a:1G,disk:b", "disk:b", "disk needs an absolute PATH");

	/* 1024 "gpu" items: 4095 characters, the longest list parsed. */
	huge = malloc(4097);
	assert_non_null(huge);
	for (i = 0; i < 4096; i += 4)
		memcpy(huge + i, "gpu,", 4);
	huge[4095] = '\0';
	assert_int_equal(strlen(huge), 4095);
	assert_int_equal(pm_checks_parse(huge, NULL, 0, err, sizeof(err)), 1024);
	/* One character more: refused, and said why. */
	huge[4095] = 'x';
	huge[4096] = '\0';
	assert_int_equal(pm_checks_parse(huge, NULL, 0, err, sizeof(err)), -1);
	assert_string_equal(err, "health check list is longer than 4095 characters");
	free(huge);
}

static void test_short(void **state)
{
	(void)state;
	assert_string_equal(pm_check_short("script:/etc/nhc/fans.sh"), "fans.sh");
	assert_string_equal(pm_check_short("script:/a/very/long/directory/path/that/is/longer/"
					   "than/sixty/four/characters/check.sh"), "check.sh");
	assert_string_equal(pm_check_short("script:/x/"), "script:/x/");
	assert_string_equal(pm_check_short("disk:/scratch:10G"), "disk:/scratch:10G");
	assert_string_equal(pm_check_short("gpu:8"), "gpu:8");
	assert_string_equal(pm_check_short("nic:ib0+ib1"), "nic:ib0+ib1");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_size),
		cmocka_unit_test(test_gpu),
		cmocka_unit_test(test_mem),
		cmocka_unit_test(test_disk),
		cmocka_unit_test(test_nic),
		cmocka_unit_test(test_script),
		cmocka_unit_test(test_path_white_space),
		cmocka_unit_test(test_unknown),
		cmocka_unit_test(test_list),
		cmocka_unit_test(test_list_max),
		cmocka_unit_test(test_list_bad),
		cmocka_unit_test(test_short),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
