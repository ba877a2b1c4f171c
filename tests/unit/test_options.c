/* Unit tests of runtime/common/options.c and site.c: the user options,
 * their layers and precedence, and the site's plugstack.conf arguments.
 *
 * Expected values are worked out from the option grammar in options.h and
 * the user guide (seconds with up to 3 decimals, the ranges the error messages
 * promise, site default < job script < srun flag < site cap), not copied
 * from a run of the code. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/options.h"
#include "common/checkspec.h"
#include "common/duration.h"

#define FILE_NAME "/etc/slurm/plugstack.conf.d/procmgr.conf"

static char err[PM_ERRLEN];

#define CHECK(cond, ...) do { if (!(cond)) fail_msg(__VA_ARGS__); } while (0)

static void contains(const char *hay, const char *needle)
{
	CHECK(strstr(hay, needle), "expected \"%s\" in message \"%s\"", needle, hay);
}

/* How a value is quoted in messages: cut after 64 characters, so that a
 * long value cannot push the option, key or allowed values out. */
static void quoted(char *buf, size_t len, const char *v)
{
	if (strlen(v) > 64)
		snprintf(buf, len, "'%.64s...'", v);
	else
		snprintf(buf, len, "'%s'", v);
}

/* A string of n copies of unit (joined by sep when sep is non-zero),
 * malloc'ed. */
static char *repeat(const char *unit, char sep, size_t n)
{
	size_t ul = strlen(unit), i, off = 0;
	char *s = malloc(n * (ul + 1) + 1);

	assert_non_null(s);
	for (i = 0; i < n; i++) {
		if (i && sep)
			s[off++] = sep;
		memcpy(s + off, unit, ul);
		off += ul;
	}
	s[off] = '\0';
	return s;
}

/* ---- one option at a time ------------------------------------------- */

static void opt_ok(struct pm_opts *o, const char *name, const char *value)
{
	err[0] = '\0';
	CHECK(pm_opt_parse(o, name, value, err, sizeof(err)) == 0,
	      "--procmgr-%s=%s refused: %s", name, value ? value : "(null)", err);
	CHECK(o->enabled && (o->set & PM_SET_ENABLED),
	      "--procmgr-%s does not imply --procmgr", name);
}

/* A refused value: the message names the option, the value and (part of)
 * what is allowed, and the option's field is not marked as given. */
static void opt_bad(const char *name, const char *value, const char *allowed)
{
	struct pm_opts o;
	char want[PM_ERRLEN];

	pm_opts_init(&o);
	strcpy(err, "stale");
	CHECK(pm_opt_parse(&o, name, value, err, sizeof(err)) == -1,
	      "--procmgr-%s='%s' accepted", name, value ? value : "(null)");
	snprintf(want, sizeof(want), "--procmgr-%s", name);
	contains(err, want);
	quoted(want, sizeof(want), value ? value : "");
	contains(err, want);
	contains(err, allowed);
	CHECK((o.set & ~(unsigned)PM_SET_ENABLED) == 0,
	      "--procmgr-%s='%s' refused but marked as set (0x%x)", name,
	      value ? value : "(null)", o.set);
}

static void test_init(void **state)
{
	struct pm_opts o;
	(void)state;

	memset(&o, 0xa5, sizeof(o));
	pm_opts_init(&o);
	assert_int_equal(o.set, 0);
	assert_false(o.enabled);
	assert_int_equal(o.restart, PM_RESTART_NEVER);
	assert_int_equal(o.restart_max, -1);
	assert_int_equal(o.restart_delay_ms, PM_DEFAULT_DELAY_MS);
	assert_int_equal(o.grace_ms, PM_DEFAULT_GRACE_MS);
	assert_int_equal(o.bind, 0);
	assert_string_equal(o.health, "");
	assert_int_equal(o.health_interval_ms, 0);
	assert_int_equal(o.hang_timeout_ms, 0);
	assert_int_equal(o.stack_timeout_ms, PM_DEFAULT_STACK_TIMEOUT_MS);
	assert_false(o.verbose);
}

/* The table srun --help is built from: the 9 documented options, the bare
 * --procmgr and --procmgr-verbose without an argument, the others with. */
static void test_optdescs(void **state)
{
	static const char *const names[] = { "", "restart", "restart-delay", "grace",
		"bind", "health", "health-interval", "hang-timeout", "spares", "output-dir",
		"warm", "verbose", "stack-timeout", "slow", "evict-slow", "sweep", "trial-ranks" };
	static const char *const sample[] = { NULL, "always:1", "1", "1", "gpu",
		"gpu", "1", "1", "1", "/tmp", "on", NULL, "1", "on", NULL, "/tmp/trials.txt", "2" };
	size_t i;
	(void)state;

	assert_int_equal(pm_noptdescs, sizeof(names) / sizeof(names[0]));
	for (i = 0; i < pm_noptdescs; i++) {
		struct pm_opts o;
		assert_string_equal(pm_optdescs[i].name, names[i]);
		CHECK((pm_optdescs[i].arginfo == NULL) == (sample[i] == NULL),
		      "option '%s': wrong has_arg", names[i]);
		assert_non_null(pm_optdescs[i].usage);
		assert_true(strlen(pm_optdescs[i].usage) > 10);
		/* Every option in the table is one pm_opt_parse knows, and
		 * implies --procmgr. */
		pm_opts_init(&o);
		opt_ok(&o, pm_optdescs[i].name, sample[i]);
	}
}

static void test_bare_procmgr(void **state)
{
	struct pm_opts o, ref;
	(void)state;

	pm_opts_init(&o);
	pm_opts_init(&ref);
	opt_ok(&o, "", NULL);
	assert_int_equal(o.set, PM_SET_ENABLED);
	/* Nothing but enabled/set changes: the site defaults still apply. */
	ref.enabled = true;
	ref.set = PM_SET_ENABLED;
	assert_memory_equal(&o, &ref, sizeof(o));
}

static void test_verbose(void **state)
{
	struct pm_opts o;
	(void)state;

	pm_opts_init(&o);
	opt_ok(&o, "verbose", NULL);
	assert_true(o.verbose);
	assert_int_equal(o.set, PM_SET_ENABLED | PM_SET_VERBOSE);
}

static void test_unknown_option(void **state)
{
	struct pm_opts o;
	(void)state;

	pm_opts_init(&o);
	assert_int_equal(pm_opt_parse(&o, "colour", "blue", err, sizeof(err)), -1);
	contains(err, "unknown option 'colour'");
	assert_int_equal(pm_opt_parse(&o, "restarts", "always", err, sizeof(err)), -1);
	contains(err, "'restarts'");
}

static void test_restart(void **state)
{
	static const struct {
		const char *v;
		enum pm_restart_mode mode;
		int max;
	} ok[] = {
		{ "never", PM_RESTART_NEVER, 0 },
		{ "on-failure", PM_RESTART_ON_FAILURE, -1 },
		{ "on-failure:0", PM_RESTART_ON_FAILURE, 0 },
		{ "on-failure:2", PM_RESTART_ON_FAILURE, 2 },
		{ "on-failure:007", PM_RESTART_ON_FAILURE, 7 },
		{ "on-failure:1000000", PM_RESTART_ON_FAILURE, 1000000 },
		{ "always", PM_RESTART_ALWAYS, -1 },
		{ "always:0", PM_RESTART_ALWAYS, 0 },
		{ "always:5", PM_RESTART_ALWAYS, 5 },
	};
	size_t i;
	(void)state;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct pm_opts o;
		pm_opts_init(&o);
		opt_ok(&o, "restart", ok[i].v);
		CHECK(o.restart == ok[i].mode && o.restart_max == ok[i].max,
		      "restart=%s gave mode %d max %d", ok[i].v, o.restart, o.restart_max);
		assert_true(o.set & PM_SET_RESTART);
	}
	assert_string_equal(pm_restart_name(PM_RESTART_NEVER), "never");
	assert_string_equal(pm_restart_name(PM_RESTART_ON_FAILURE), "on-failure");
	assert_string_equal(pm_restart_name(PM_RESTART_ALWAYS), "always");
}

static void test_restart_bad(void **state)
{
	static const char *const bad[] = {
		"", "sometimes", "on-failure:", "on-failure:-1", "on-failure:+1",
		"on-failure:x", "on-failure:2x", "on-failure:2.5", "on-failure:1000001",
		"on-failure:99999999999999999999999", "never:2", "always:1:2",
		"On-Failure", " on-failure", "on-failure ", "on-failur", "on-failures",
		"always:", ":3", "restart",
	};
	size_t i;
	(void)state;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		opt_bad("restart", bad[i], "never, on-failure[:N] or always[:N]");
	opt_bad("restart", NULL, "never, on-failure[:N] or always[:N]");
}

/* Seconds options: what each accepts, in milliseconds. */
struct secs { const char *v; unsigned ms; };

static unsigned secs_field(const struct pm_opts *o, const char *name)
{
	if (!strcmp(name, "restart-delay"))
		return o->restart_delay_ms;
	if (!strcmp(name, "grace"))
		return o->grace_ms;
	if (!strcmp(name, "health-interval"))
		return o->health_interval_ms;
	if (!strcmp(name, "stack-timeout"))
		return o->stack_timeout_ms;
	return o->hang_timeout_ms;
}

static void secs_ok(const char *name, unsigned flag, const struct secs *t, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		struct pm_opts o;
		pm_opts_init(&o);
		opt_ok(&o, name, t[i].v);
		CHECK(secs_field(&o, name) == t[i].ms, "--procmgr-%s=%s gave %u ms, not %u",
		      name, t[i].v, secs_field(&o, name), t[i].ms);
		assert_int_equal(o.set, PM_SET_ENABLED | flag);
	}
}

/* Malformed for every seconds option, whatever its range. */
static const char *const bad_seconds[] = {
	"", "-1", "+1", "-0", "1.", ".5", "1..5", "1.2.3", "0.0001", "1.2345",
	"1e3", "1x", "10 ", " 10", "0x10", "abc", "1,5", "99999999999999999999999",
	"604801", "4294967296",
};

static void secs_bad(const char *name, const char *allowed, const char *const *extra,
		     size_t nextra)
{
	size_t i;

	for (i = 0; i < sizeof(bad_seconds) / sizeof(bad_seconds[0]); i++) {
		/* SECONDS,FIRST is hang-timeout's own form (test_hang_first). */
		if (!strcmp(name, "hang-timeout") && strchr(bad_seconds[i], ','))
			continue;
		opt_bad(name, bad_seconds[i], allowed);
	}
	for (i = 0; i < nextra; i++)
		opt_bad(name, extra[i], allowed);
	opt_bad(name, NULL, allowed);
}

static void test_restart_delay(void **state)
{
	static const struct secs ok[] = {
		{ "0", 0 }, { "0.0", 0 }, { "0.000", 0 }, { "0.001", 1 }, { "0.5", 500 },
		{ "0.25", 250 }, { "1.25", 1250 }, { "2", 2000 }, { "059", 59000 },
		{ "59.999", 59999 }, { "60", 60000 }, { "60.000", 60000 },
		{ "1m", 60000 }, { "1:00", 60000 }, { "0.5s", 500 }, { "0:59", 59000 },
	};
	static const char *const bad[] = { "60.001", "61", "3600", "2m", "1:01", "0-1" };
	(void)state;

	secs_ok("restart-delay", PM_SET_DELAY, ok, sizeof(ok) / sizeof(ok[0]));
	secs_bad("restart-delay", "a duration from 0 to 60 s: " PM_DURATION_FORMS, bad,
		 sizeof(bad) / sizeof(bad[0]));
	assert_int_equal(PM_MAX_DELAY_MS, 60000);
}

static void test_grace(void **state)
{
	static const struct secs ok[] = {
		{ "0", 0 }, { "0.001", 1 }, { "10", 10000 }, { "10.5", 10500 },
		{ "3599.999", 3599999 }, { "3600", 3600000 }, { "3600.000", 3600000 },
		{ "1h", 3600000 }, { "30s", 30000 }, { "1:00:00", 3600000 }, { "0-1", 3600000 },
	};
	static const char *const bad[] = { "3600.001", "3601", "86400", "61m", "1:00:01" };
	(void)state;

	secs_ok("grace", PM_SET_GRACE, ok, sizeof(ok) / sizeof(ok[0]));
	secs_bad("grace", "a duration from 0 to 3600 s: " PM_DURATION_FORMS, bad,
		 sizeof(bad) / sizeof(bad[0]));
}

static void test_health_interval(void **state)
{
	static const struct secs ok[] = {
		{ "0", 0 }, { "0.000", 0 }, { "1", 1000 }, { "1.000", 1000 },
		{ "1.5", 1500 }, { "30", 30000 }, { "604799.999", 604799999 },
		{ "604800", 604800000 }, { "5m", 300000 }, { "7d", 604800000 },
		{ "1-12:30", 131400000 },
	};
	/* Below a second (but not 0) and above a week are refused. */
	static const char *const bad[] = { "0.001", "0.5", "0.999", "604800.001",
		"604800.999", "0.5s", "8d", "7-0:00:01" };
	(void)state;

	secs_ok("health-interval", PM_SET_HEALTH_INTERVAL, ok, sizeof(ok) / sizeof(ok[0]));
	secs_bad("health-interval", "0 (off) or a duration from 1 s to 7 days: " PM_DURATION_FORMS, bad,
		 sizeof(bad) / sizeof(bad[0]));
}

static void test_hang_timeout(void **state)
{
	static const struct secs ok[] = {
		{ "0", 0 }, { "0.1", 100 }, { "0.100", 100 }, { "0.101", 101 },
		{ "2.5", 2500 }, { "600", 600000 }, { "604800", 604800000 },
		{ "10m", 600000 }, { "0.1s", 100 }, { "2:30", 150000 }, { "1-0:00:00", 86400000 },
	};
	static const char *const bad[] = { "0.001", "0.05", "0.099", "604800.5", "0.05s",
		"1:60" };
	(void)state;

	secs_ok("hang-timeout", PM_SET_HANG, ok, sizeof(ok) / sizeof(ok[0]));
	secs_bad("hang-timeout", "0 (off) or a duration from 0.1 s to 7 days", bad,
		 sizeof(bad) / sizeof(bad[0]));
}

/* Issue 20 item 12: the bound on a hang's stack capture, the user's or the
 * site's (default_stack_timeout); from 1 s (a debugger's attach) to 10 min. */
static void test_stack_timeout(void **state)
{
	static const struct secs ok[] = {
		{ "1", 1000 }, { "1.000", 1000 }, { "10", 10000 }, { "30s", 30000 },
		{ "2:30", 150000 }, { "600", 600000 }, { "10m", 600000 },
	};
	static const char *const bad[] = { "0", "0.999", "0.5s", "600.001", "601", "11m",
		"1-0" };
	struct pm_opts o, back;
	char buf[256];
	(void)state;

	secs_ok("stack-timeout", PM_SET_STACK, ok, sizeof(ok) / sizeof(ok[0]));
	secs_bad("stack-timeout", "a duration from 1 s to 600 s", bad,
		 sizeof(bad) / sizeof(bad[0]));
	pm_opts_init(&o);
	opt_ok(&o, "stack-timeout", "45");
	assert_int_equal(pm_opts_format(&o, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "procmgr stack-timeout=45");
	pm_opts_init(&back);
	assert_int_equal(pm_opts_parse_str(&back, buf, "T", err, sizeof(err)), 0);
	assert_int_equal(back.stack_timeout_ms, 45000);
	/* Not given: the default, and not in the text. */
	pm_opts_init(&o);
	opt_ok(&o, "", NULL);
	assert_int_equal(pm_opts_format(&o, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "procmgr");
	assert_int_equal(o.stack_timeout_ms, 10000);
}

/* --procmgr-hang-timeout=S,FIRST: FIRST bounds the wait for the first
 * heartbeat; it travels in the options' text form and back. */
static void test_hang_first(void **state)
{
	static const char *const bad[] = { "0,5", "5,", ",5", "5,0", "5,0.05", "5,60,7",
					   "5,abc", "5,604801" };
	struct pm_opts o, back;
	char buf[1024];
	size_t i;
	(void)state;

	pm_opts_init(&o);
	opt_ok(&o, "hang-timeout", "5,60");
	assert_int_equal(o.hang_timeout_ms, 5000);
	assert_int_equal(o.hang_first_ms, 60000);
	assert_int_equal(pm_opts_format(&o, buf, sizeof(buf)), 0);
	contains(buf, "hang-timeout=5,60");
	pm_opts_init(&back);
	assert_int_equal(pm_opts_parse_str(&back, buf, "test", err, sizeof(err)), 0);
	assert_int_equal(back.hang_timeout_ms, 5000);
	assert_int_equal(back.hang_first_ms, 60000);
	/* Both in any duration form. */
	opt_ok(&o, "hang-timeout", "5m,1:30");
	assert_int_equal(o.hang_timeout_ms, 300000);
	assert_int_equal(o.hang_first_ms, 90000);
	/* Without FIRST a rank that never beats is not judged, as before. */
	opt_ok(&o, "hang-timeout", "2.5");
	assert_int_equal(o.hang_first_ms, 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		opt_bad("hang-timeout", bad[i], ",FIRST: a duration from 0.1 s to 7 days");
}

static void test_parse_uint(void **state)
{
	unsigned v = 77;
	(void)state;

	assert_int_equal(pm_parse_uint("0", 0, 10, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(pm_parse_uint("10", 0, 10, &v), 0);
	assert_int_equal(v, 10);
	assert_int_equal(pm_parse_uint("4294967295", 0, UINT_MAX, &v), 0);
	assert_int_equal(v, UINT_MAX);
	v = 77;
	assert_int_equal(pm_parse_uint("11", 0, 10, &v), -1);
	assert_int_equal(pm_parse_uint("1", 2, 10, &v), -1);
	assert_int_equal(pm_parse_uint("4294967296", 0, UINT_MAX, &v), -1);
	assert_int_equal(pm_parse_uint("99999999999999999999999", 0, UINT_MAX, &v), -1);
	assert_int_equal(pm_parse_uint("-1", 0, UINT_MAX, &v), -1);
	assert_int_equal(pm_parse_uint("+1", 0, 10, &v), -1);
	assert_int_equal(pm_parse_uint(" 1", 0, 10, &v), -1);
	assert_int_equal(pm_parse_uint("1 ", 0, 10, &v), -1);
	assert_int_equal(pm_parse_uint("", 0, 10, &v), -1);
	assert_int_equal(pm_parse_uint(NULL, 0, 10, &v), -1);
	assert_int_equal(v, 77);
}

static void test_bind(void **state)
{
	static const struct { const char *v; unsigned mask; } ok[] = {
		{ "none", 0 },
		{ "closest", PM_BIND_ALL },
		{ "gpu", PM_BIND_GPU },
		{ "nic", PM_BIND_NIC },
		{ "cpu", PM_BIND_CPU },
		{ "mem", PM_BIND_MEM },
		{ "gpu,nic", PM_BIND_GPU | PM_BIND_NIC },
		{ "cpu,gpu", PM_BIND_GPU | PM_BIND_CPU },
		{ "gpu,gpu", PM_BIND_GPU },
		{ "gpu,nic,cpu,mem", PM_BIND_ALL },
		{ "mem,cpu,nic,gpu", PM_BIND_ALL },
		/* mem-strict is mem with a strict policy: it implies mem. */
		{ "mem-strict", PM_BIND_MEM | PM_BIND_MEM_STRICT },
		{ "cpu,mem-strict", PM_BIND_CPU | PM_BIND_MEM | PM_BIND_MEM_STRICT },
		{ "mem-strict,mem", PM_BIND_MEM | PM_BIND_MEM_STRICT },
		{ "closest,mem-strict", PM_BIND_ALL | PM_BIND_MEM_STRICT },
		{ "gpu,closest", PM_BIND_ALL },
	};
	size_t i;
	(void)state;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct pm_opts o;
		pm_opts_init(&o);
		opt_ok(&o, "bind", ok[i].v);
		CHECK(o.bind == ok[i].mask, "bind=%s gave 0x%x, not 0x%x", ok[i].v, o.bind,
		      ok[i].mask);
		assert_int_equal(o.set, PM_SET_ENABLED | PM_SET_BIND);
	}
}

static void test_bind_bad(void **state)
{
	const char *allowed = "none, closest, or a comma-separated list of "
			      "gpu,nic,cpu,mem,mem-strict,closest";
	static const char *const bad[] = {
		"", "GPU", "None", "gpu,", ",gpu", "gpu,,nic", ",", "none,gpu",
		"gpu,none", "disk", "gpu nic", "gpu;nic", " gpu", "mem-", "strict",
		"mem_strict",
	};
	char *longlist = repeat("gpu", ',', 16); /* 63 characters: accepted */
	char *toolong = repeat("gpu", ',', 17);  /* 67: refused */
	struct pm_opts o;
	size_t i;
	(void)state;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		opt_bad("bind", bad[i], allowed);
	opt_bad("bind", NULL, allowed);
	pm_opts_init(&o);
	assert_int_equal(strlen(longlist), 63);
	opt_ok(&o, "bind", longlist);
	assert_int_equal(o.bind, PM_BIND_GPU);
	opt_bad("bind", toolong, allowed);
	free(longlist);
	free(toolong);
}

/* Every mask the parser can produce formats to text that parses back to it. */
static void test_bind_format(void **state)
{
	char buf[64];
	unsigned m;
	(void)state;

	assert_int_equal(pm_format_bind(0, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "none");
	assert_int_equal(pm_format_bind(PM_BIND_ALL, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "closest");
	assert_int_equal(pm_format_bind(PM_BIND_GPU | PM_BIND_CPU, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "gpu,cpu");
	assert_int_equal(pm_format_bind(PM_BIND_MEM | PM_BIND_MEM_STRICT, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "mem-strict");
	assert_int_equal(pm_format_bind(PM_BIND_ALL | PM_BIND_MEM_STRICT, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "gpu,nic,cpu,mem-strict");

	for (m = 0; m < 32; m++) {
		unsigned back = 0xdead;
		if ((m & PM_BIND_MEM_STRICT) && !(m & PM_BIND_MEM))
			continue; /* not a mask the parser makes */
		assert_int_equal(pm_format_bind(m, buf, sizeof(buf)), 0);
		CHECK(pm_parse_bind(buf, &back) == 0 && back == m,
		      "mask 0x%x formats as '%s', which parses to 0x%x", m, buf, back);
	}
	/* Too small a buffer is an error, not an overflow. */
	assert_int_equal(pm_format_bind(0, buf, 4), -1);
	assert_int_equal(pm_format_bind(PM_BIND_ALL, buf, 7), -1);
	assert_int_equal(pm_format_bind(PM_BIND_GPU | PM_BIND_NIC, buf, 7), -1);
	assert_int_equal(pm_format_bind(PM_BIND_GPU | PM_BIND_NIC, buf, 8), 0);
	assert_string_equal(buf, "gpu,nic");
}

static void test_health(void **state)
{
	const char *full = "gpu:4,mem:10G,disk:/scratch:1T,nic:ib0+ib1,script:/usr/libexec/chk";
	char *max = repeat("gpu", ',', 256); /* 1023 characters: the most */
	struct pm_opts o;
	(void)state;

	pm_opts_init(&o);
	opt_ok(&o, "health", "gpu");
	assert_string_equal(o.health, "gpu");
	assert_int_equal(o.set, PM_SET_ENABLED | PM_SET_HEALTH);
	opt_ok(&o, "health", full);
	assert_string_equal(o.health, full);
	assert_int_equal(strlen(max), PM_LIST_MAX - 1);
	opt_ok(&o, "health", max);
	assert_string_equal(o.health, max);
	free(max);
}

static void test_health_bad(void **state)
{
	char *toolong = repeat("gpu", ',', 257); /* 1027 characters */
	(void)state;

	opt_bad("health", "", "an empty list");
	opt_bad("health", NULL, "an empty list");
	/* checkspec's reason, and the grammar, come through. */
	opt_bad("health", "gpu:0", "COUNT must be an integer from 1 to 1024");
	opt_bad("health", "gpu,foo", "unknown check");
	opt_bad("health", "gpu,foo", PM_CHECK_GRAMMAR);
	opt_bad("health", "gpu,,mem", "empty item");
	opt_bad("health", "disk:scratch", "absolute PATH");
	opt_bad("health", "mem:0", "MIN must be a positive size");
	/* Longer than the field holds: refused with a reason, not garbage. */
	opt_bad("health", toolong, "too long");
	free(toolong);
}

/* A message longer than the caller's buffer is cut, not overflowed. */
static void test_error_truncated(void **state)
{
	struct pm_opts o;
	char small[24];
	(void)state;

	pm_opts_init(&o);
	memset(small, 'x', sizeof(small));
	assert_int_equal(pm_opt_parse(&o, "bind", "bogus", small, sizeof(small)), -1);
	assert_int_equal(strlen(small), sizeof(small) - 1);
	assert_memory_equal(small, "invalid value 'bogus' f", sizeof(small));
}

/* ---- layers as strings: pm_opts_parse_str and pm_opts_format ---------- */

static void test_parse_str(void **state)
{
	struct pm_opts o;
	(void)state;

	pm_opts_init(&o);
	assert_int_equal(pm_opts_parse_str(&o, "procmgr restart=on-failure:2 grace=0.5 "
					   "bind=gpu,nic health=gpu:8 health-interval=30 "
					   "hang-timeout=0.25 restart-delay=1 verbose",
					   "PROCMGR_X", err, sizeof(err)), 0);
	assert_true(o.enabled);
	assert_int_equal(o.restart, PM_RESTART_ON_FAILURE);
	assert_int_equal(o.restart_max, 2);
	assert_int_equal(o.grace_ms, 500);
	assert_int_equal(o.bind, PM_BIND_GPU | PM_BIND_NIC);
	assert_string_equal(o.health, "gpu:8");
	assert_int_equal(o.health_interval_ms, 30000);
	assert_int_equal(o.hang_timeout_ms, 250);
	assert_int_equal(o.restart_delay_ms, 1000);
	assert_true(o.verbose);
	assert_int_equal(o.set, PM_SET_ENABLED | PM_SET_RESTART | PM_SET_DELAY |
				PM_SET_GRACE | PM_SET_BIND | PM_SET_HEALTH |
				PM_SET_HEALTH_INTERVAL | PM_SET_HANG | PM_SET_VERBOSE);

	/* Nothing, or only spaces: nothing set, not enabled. */
	pm_opts_init(&o);
	assert_int_equal(pm_opts_parse_str(&o, "", "PROCMGR_X", err, sizeof(err)), 0);
	assert_int_equal(pm_opts_parse_str(&o, "   ", "PROCMGR_X", err, sizeof(err)), 0);
	assert_int_equal(o.set, 0);
	assert_false(o.enabled);

	/* Extra spaces are fine; a later token wins. */
	assert_int_equal(pm_opts_parse_str(&o, "  grace=1   grace=2 ", "PROCMGR_X", err,
					   sizeof(err)), 0);
	assert_int_equal(o.grace_ms, 2000);
	assert_int_equal(o.set, PM_SET_ENABLED | PM_SET_GRACE);

	pm_opts_init(&o);
	assert_int_equal(pm_opts_parse_str(&o, "procmgr", "PROCMGR_X", err, sizeof(err)), 0);
	assert_int_equal(o.set, PM_SET_ENABLED);
	assert_true(o.enabled);
}

static void str_bad(const char *s, const char *a, const char *b)
{
	struct pm_opts o;

	pm_opts_init(&o);
	strcpy(err, "stale");
	CHECK(pm_opts_parse_str(&o, s, "PROCMGR_STEP_OPTIONS", err, sizeof(err)) == -1,
	      "'%s' accepted", s);
	CHECK(!strncmp(err, "PROCMGR_STEP_OPTIONS: ", 22), "'%s': message '%s' does "
	      "not start with the variable's name", s, err);
	contains(err, a);
	if (b)
		contains(err, b);
}

static void test_parse_str_bad(void **state)
{
	char *huge = repeat("grace=1", ' ', 600); /* 4799 characters */
	struct pm_opts o;
	(void)state;

	str_bad("restart", "'restart' needs a value", NULL);
	str_bad("procmgr grace", "'grace' needs a value", NULL);
	str_bad("grace=abc", "--procmgr-grace", "'abc'");
	str_bad("grace=", "--procmgr-grace", "''");
	str_bad("restart=on-failure:x", "--procmgr-restart", "'on-failure:x'");
	str_bad("bogus=1", "'bogus'", NULL);
	str_bad("bogus", "'bogus'", NULL);
	/* Options that take no value, given one: said so, by name. */
	str_bad("verbose=yes", "'verbose'", NULL);
	str_bad("procmgr=1", "'procmgr'", NULL);
	str_bad("=5", "no value", NULL);

	pm_opts_init(&o);
	assert_int_equal(pm_opts_parse_str(&o, huge, "PROCMGR_X", err, sizeof(err)), -1);
	assert_string_equal(err, "PROCMGR_X is too long");
	free(huge);
}

static void fmt_is(const struct pm_opts *o, const char *want)
{
	char buf[4096];

	assert_int_equal(pm_opts_format(o, buf, sizeof(buf)), 0);
	assert_string_equal(buf, want);
}

static void test_format(void **state)
{
	struct pm_opts o;
	char buf[8];
	(void)state;

	/* Nothing given: nothing written. */
	pm_opts_init(&o);
	fmt_is(&o, "");
	/* Only what is set, in a fixed order, seconds without needless decimals. */
	opt_ok(&o, "", NULL);
	fmt_is(&o, "procmgr");
	opt_ok(&o, "grace", "10");
	fmt_is(&o, "procmgr grace=10");
	opt_ok(&o, "verbose", NULL);
	opt_ok(&o, "hang-timeout", "0.25");
	opt_ok(&o, "health-interval", "30");
	opt_ok(&o, "health", "gpu,mem:1G");
	opt_ok(&o, "bind", "nic,gpu");
	opt_ok(&o, "restart-delay", "0.001");
	opt_ok(&o, "restart", "on-failure:2");
	fmt_is(&o, "procmgr restart=on-failure:2 restart-delay=0.001 grace=10 bind=gpu,nic "
		   "health=gpu,mem:1G health-interval=30 hang-timeout=0.25 verbose");

	/* A count only where one was given. */
	opt_ok(&o, "restart", "always");
	opt_ok(&o, "bind", "none");
	opt_ok(&o, "grace", "1.5");
	fmt_is(&o, "procmgr restart=always restart-delay=0.001 grace=1.5 bind=none "
		   "health=gpu,mem:1G health-interval=30 hang-timeout=0.25 verbose");
	opt_ok(&o, "restart", "never");
	opt_ok(&o, "bind", "closest,mem-strict");
	opt_ok(&o, "hang-timeout", "0");
	fmt_is(&o, "procmgr restart=never restart-delay=0.001 grace=1.5 "
		   "bind=gpu,nic,cpu,mem-strict health=gpu,mem:1G health-interval=30 "
		   "hang-timeout=0 verbose");

	/* Every field, as the plugin passes a resolved step: an empty health
	 * list and verbose off are left out, the rest written. */
	pm_opts_init(&o);
	o.enabled = true;
	o.set = ~0u;
	fmt_is(&o, "procmgr restart=never restart-delay=0 grace=10 bind=none "
		   "health-interval=0 hang-timeout=0 spares=0 stack-timeout=10 slow=off");

	/* Too small a buffer: an error, within bounds. */
	pm_opts_init(&o);
	opt_ok(&o, "", NULL);
	assert_int_equal(pm_opts_format(&o, buf, 7), -1);
	assert_int_equal(pm_opts_format(&o, buf, 8), 0);
	assert_string_equal(buf, "procmgr");
	opt_ok(&o, "grace", "2");
	o.set = PM_SET_GRACE; /* not enabled: " grace=2" would not fit either */
	o.enabled = false;
	assert_int_equal(pm_opts_format(&o, buf, 8), 0);
	assert_string_equal(buf, "grace=2");
	assert_int_equal(pm_opts_format(&o, buf, 7), -1);
}

static void assert_opts_equal(const struct pm_opts *a, const struct pm_opts *b)
{
	assert_int_equal(a->set, b->set);
	assert_int_equal(a->enabled, b->enabled);
	assert_int_equal(a->restart, b->restart);
	assert_int_equal(a->restart_max, b->restart_max);
	assert_int_equal(a->restart_delay_ms, b->restart_delay_ms);
	assert_int_equal(a->grace_ms, b->grace_ms);
	assert_int_equal(a->bind, b->bind);
	assert_string_equal(a->health, b->health);
	assert_int_equal(a->health_interval_ms, b->health_interval_ms);
	assert_int_equal(a->hang_timeout_ms, b->hang_timeout_ms);
	assert_int_equal(a->stack_timeout_ms, b->stack_timeout_ms);
	assert_int_equal(a->verbose, b->verbose);
}

/* Text -> options -> text is the identity on canonical text, and options ->
 * text -> options keeps every field: this is how layers travel. */
static void test_round_trip(void **state)
{
	static const char *const canon[] = {
		"procmgr",
		"procmgr restart=never",
		"procmgr restart=on-failure",
		"procmgr restart=on-failure:0",
		"procmgr restart=always:1000000",
		"procmgr restart-delay=60",
		"procmgr restart-delay=0.001 grace=3600",
		"procmgr grace=0",
		"procmgr grace=3599.999",
		"procmgr bind=none",
		"procmgr bind=closest",
		"procmgr bind=mem-strict",
		"procmgr bind=gpu,cpu,mem-strict",
		"procmgr health=gpu:4,mem:10G,disk:/scratch:1T,nic:ib0+ib1,script:/x/y=z",
		"procmgr health-interval=604800",
		"procmgr hang-timeout=0.1",
		"procmgr stack-timeout=1",
		"procmgr stack-timeout=600 verbose",
		"procmgr verbose",
		"procmgr restart=always:3 restart-delay=2.5 grace=30 bind=gpu,nic "
		"health=gpu health-interval=1 hang-timeout=604800 verbose",
	};
	size_t i;
	(void)state;

	for (i = 0; i < sizeof(canon) / sizeof(canon[0]); i++) {
		struct pm_opts a, b;
		char buf[4096];
		pm_opts_init(&a);
		CHECK(pm_opts_parse_str(&a, canon[i], "T", err, sizeof(err)) == 0,
		      "'%s' refused: %s", canon[i], err);
		assert_int_equal(pm_opts_format(&a, buf, sizeof(buf)), 0);
		assert_string_equal(buf, canon[i]);
		pm_opts_init(&b);
		assert_int_equal(pm_opts_parse_str(&b, buf, "T", err, sizeof(err)), 0);
		assert_opts_equal(&a, &b);
	}
}

/* A health list that pm_opt_parse accepts must survive the trip through the
 * space-separated environment form, or the step would be refused on the
 * compute nodes after srun accepted it. */
static void test_health_survives_format(void **state)
{
	static const char *const lists[] = {
		"script:/opt/site checks/run", "disk:/scratch dir", "script:/a\tb",
	};
	size_t i;
	(void)state;

	for (i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		struct pm_opts a, b;
		char buf[4096];
		pm_opts_init(&a);
		if (pm_opt_parse(&a, "health", lists[i], err, sizeof(err))) {
			contains(err, "--procmgr-health");
			continue; /* refused up front: fine */
		}
		assert_int_equal(pm_opts_format(&a, buf, sizeof(buf)), 0);
		pm_opts_init(&b);
		CHECK(pm_opts_parse_str(&b, buf, "T", err, sizeof(err)) == 0 &&
		      !strcmp(a.health, b.health),
		      "health '%s' accepted, but its formatted form '%s' does not parse "
		      "back (%s)", lists[i], buf, err);
	}
}

static void test_overlay(void **state)
{
	struct pm_opts dst, l;
	(void)state;

	pm_opts_init(&dst);
	opt_ok(&dst, "grace", "5");
	opt_ok(&dst, "bind", "gpu");
	opt_ok(&dst, "verbose", NULL);
	opt_ok(&dst, "health", "gpu");

	/* Only what the layer sets replaces; set flags accumulate. */
	pm_opts_init(&l);
	l.grace_ms = 1; /* not marked as set: ignored */
	opt_ok(&l, "bind", "none");
	opt_ok(&l, "restart", "always:4");
	pm_opts_overlay(&dst, &l);
	assert_int_equal(dst.grace_ms, 5000);
	assert_int_equal(dst.bind, 0);
	assert_int_equal(dst.restart, PM_RESTART_ALWAYS);
	assert_int_equal(dst.restart_max, 4);
	assert_true(dst.verbose);
	assert_string_equal(dst.health, "gpu");
	assert_true(dst.enabled);
	assert_int_equal(dst.set, PM_SET_ENABLED | PM_SET_GRACE | PM_SET_BIND |
				  PM_SET_VERBOSE | PM_SET_HEALTH | PM_SET_RESTART);

	/* "on-failure" without a count replaces the count too. */
	pm_opts_init(&l);
	opt_ok(&l, "restart", "on-failure");
	pm_opts_overlay(&dst, &l);
	assert_int_equal(dst.restart, PM_RESTART_ON_FAILURE);
	assert_int_equal(dst.restart_max, -1);

	/* An empty layer changes nothing. */
	{
		struct pm_opts before = dst;
		pm_opts_init(&l);
		pm_opts_overlay(&dst, &l);
		assert_memory_equal(&before, &dst, sizeof(dst));
	}
}

/* ---- the site's plugstack.conf arguments ----------------------------- */

static int site(struct pm_site *s, const char *a0, const char *a1, const char *a2)
{
	char *argv[3];
	int argc = 0;

	if (a0)
		argv[argc++] = (char *)a0;
	if (a1)
		argv[argc++] = (char *)a1;
	if (a2)
		argv[argc++] = (char *)a2;
	strcpy(err, "stale");
	return pm_site_parse(s, argc, argv, FILE_NAME, err, sizeof(err));
}

static void site_ok(struct pm_site *s, const char *arg)
{
	CHECK(site(s, arg, NULL, NULL) == 0, "'%s' refused: %s", arg, err);
}

static void test_site_init(void **state)
{
	struct pm_site s;
	(void)state;

	memset(&s, 0x5a, sizeof(s));
	pm_site_init(&s);
	assert_string_equal(s.runtime, PM_LIBEXECDIR "/procmgrd");
	assert_int_equal(s.max_restarts, PM_DEFAULT_MAX_RESTARTS);
	assert_int_equal(s.max_restarts, 10);
	assert_string_equal(s.health, "");
	assert_false(s.drain);
	assert_int_equal(s.health_timeout_ms, 30000);
	assert_int_equal(s.port_lo, 0);
	assert_int_equal(s.port_hi, 0);
	assert_int_equal(s.fanout, PM_DEFAULT_FANOUT);
	assert_string_equal(s.state_dir, "/var/spool/procmgr");
	assert_string_equal(s.topology, "");
	assert_int_equal(s.defaults.restart, PM_RESTART_NEVER);
	assert_int_equal(s.defaults.restart_max, 0);
	assert_int_equal(s.defaults.grace_ms, PM_DEFAULT_GRACE_MS);
	assert_int_equal(s.defaults.restart_delay_ms, PM_DEFAULT_DELAY_MS);
	assert_int_equal(s.defaults.bind, 0);
	assert_false(s.defaults.enabled);

	/* No arguments: the defaults. */
	assert_int_equal(site(&s, NULL, NULL, NULL), 0);
	assert_int_equal(s.max_restarts, 10);
}

static void test_site_keys(void **state)
{
	struct pm_site s;
	char *longest = malloc(PATH_MAX + 16);
	(void)state;

	pm_site_init(&s);
	site_ok(&s, "runtime=/opt/procmgr/libexec/procmgrd");
	assert_string_equal(s.runtime, "/opt/procmgr/libexec/procmgrd");
	site_ok(&s, "state_dir=/var/lib/procmgr");
	assert_string_equal(s.state_dir, "/var/lib/procmgr");
	site_ok(&s, "topology=/etc/procmgr/topo.xml");
	assert_string_equal(s.topology, "/etc/procmgr/topo.xml");
	assert_string_equal(s.metrics_dir, "");
	site_ok(&s, "metrics_dir=/var/lib/prometheus/node-exporter");
	assert_string_equal(s.metrics_dir, "/var/lib/prometheus/node-exporter");
	assert_string_equal(s.runtime, "/opt/procmgr/libexec/procmgrd");
	/* A path of PATH_MAX - 1 characters fits. */
	assert_non_null(longest);
	longest[0] = '/';
	memset(longest + 1, 'p', PATH_MAX - 2);
	strcpy(longest + PATH_MAX - 1, "");
	{
		char arg[PATH_MAX + 16];
		snprintf(arg, sizeof(arg), "state_dir=%s", longest);
		site_ok(&s, arg);
		assert_string_equal(s.state_dir, longest);
	}
	free(longest);

	site_ok(&s, "max_restarts=0");
	assert_int_equal(s.max_restarts, 0);
	site_ok(&s, "max_restarts=1000000");
	assert_int_equal(s.max_restarts, 1000000);

	site_ok(&s, "default_restart=on-failure:3");
	assert_int_equal(s.defaults.restart, PM_RESTART_ON_FAILURE);
	assert_int_equal(s.defaults.restart_max, 3);
	site_ok(&s, "default_restart=always");
	assert_int_equal(s.defaults.restart, PM_RESTART_ALWAYS);
	assert_int_equal(s.defaults.restart_max, -1);
	site_ok(&s, "default_restart=never");
	assert_int_equal(s.defaults.restart, PM_RESTART_NEVER);
	assert_int_equal(s.defaults.restart_max, 0);

	site_ok(&s, "default_bind=closest");
	assert_int_equal(s.defaults.bind, PM_BIND_ALL);
	site_ok(&s, "default_bind=gpu,mem-strict");
	assert_int_equal(s.defaults.bind, PM_BIND_GPU | PM_BIND_MEM | PM_BIND_MEM_STRICT);
	site_ok(&s, "default_bind=none");
	assert_int_equal(s.defaults.bind, 0);

	site_ok(&s, "default_grace=2.5");
	assert_int_equal(s.defaults.grace_ms, 2500);
	site_ok(&s, "default_grace=0");
	assert_int_equal(s.defaults.grace_ms, 0);
	site_ok(&s, "default_grace=3600");
	assert_int_equal(s.defaults.grace_ms, 3600000);
	site_ok(&s, "default_grace=1:30");
	assert_int_equal(s.defaults.grace_ms, 90000);

	site_ok(&s, "default_stack_timeout=30");
	assert_int_equal(s.defaults.stack_timeout_ms, 30000);
	site_ok(&s, "default_stack_timeout=10m");
	assert_int_equal(s.defaults.stack_timeout_ms, 600000);

	site_ok(&s, "health=gpu:8,mem:1G,nic:ib0");
	assert_string_equal(s.health, "gpu:8,mem:1G,nic:ib0");
	site_ok(&s, "health=");
	assert_string_equal(s.health, "");

	site_ok(&s, "drain=yes");
	assert_true(s.drain);
	site_ok(&s, "health_timeout=1.5");
	assert_int_equal(s.health_timeout_ms, 1500);
	site_ok(&s, "health_timeout=0.1");
	assert_int_equal(s.health_timeout_ms, 100);
	site_ok(&s, "health_timeout=2m");
	assert_int_equal(s.health_timeout_ms, 120000);
	site_ok(&s, "drain=no");
	assert_false(s.drain);

	site_ok(&s, "ports=1024-65535");
	assert_int_equal(s.port_lo, 1024);
	assert_int_equal(s.port_hi, 65535);
	site_ok(&s, "ports=20000-20001");
	assert_int_equal(s.port_lo, 20000);
	assert_int_equal(s.port_hi, 20001);

	site_ok(&s, "fanout=2");
	assert_int_equal(s.fanout, 2);
	site_ok(&s, "fanout=1024");
	assert_int_equal(s.fanout, 1024);

	/* Several at once, and a value that contains '='. */
	pm_site_init(&s);
	assert_int_equal(site(&s, "drain=yes", "fanout=8", "state_dir=/a=b"), 0);
	assert_true(s.drain);
	assert_int_equal(s.fanout, 8);
	assert_string_equal(s.state_dir, "/a=b");
}

/* The example snippet shipped in etc/ parses. */
static void test_site_example(void **state)
{
	char *argv[] = { "runtime=/usr/local/libexec/procmgrd", "default_restart=never",
			 "max_restarts=10", "default_bind=none", "drain=no", "fanout=32",
			 "state_dir=/var/spool/procmgr" };
	struct pm_site s;
	(void)state;

	pm_site_init(&s);
	assert_int_equal(pm_site_parse(&s, 7, argv, FILE_NAME, err, sizeof(err)), 0);
	assert_string_equal(s.runtime, "/usr/local/libexec/procmgrd");
}

static void site_bad(const char *key, const char *value, const char *allowed)
{
	struct pm_site s;
	char arg[PATH_MAX + 64], want[PATH_MAX + 64];

	pm_site_init(&s);
	snprintf(arg, sizeof(arg), "%s=%s", key, value);
	/* After a good argument (of another key: a key given twice is refused). */
	CHECK(site(&s, strcmp(key, "drain") ? "drain=no" : "fanout=8", arg, NULL) == -1,
	      "'%s' accepted", arg);
	CHECK(!strncmp(err, FILE_NAME ": ", strlen(FILE_NAME) + 2),
	      "'%s': message '%s' does not start with the file", arg, err);
	snprintf(want, sizeof(want), "key '%s'", key);
	contains(err, want);
	quoted(want, sizeof(want), value);
	contains(err, want);
	contains(err, allowed);
}

static void test_site_bad(void **state)
{
	static const struct { const char *key, *value, *allowed; } bad[] = {
		{ "runtime", "", "an absolute path" },
		{ "runtime", "procmgrd", "an absolute path" },
		{ "runtime", "./procmgrd", "an absolute path" },
		{ "state_dir", "var/spool", "an absolute path" },
		{ "topology", "topo.xml", "an absolute path" },
		{ "topology", "", "an absolute path" },
		{ "metrics_dir", "metrics", "an absolute path" },
		{ "default_restart", "", "never, on-failure[:N] or always[:N]" },
		{ "default_restart", "sometimes", "never, on-failure[:N] or always[:N]" },
		{ "default_restart", "on-failure:-1", "never, on-failure[:N] or always[:N]" },
		{ "default_restart", "always:x", "never, on-failure[:N] or always[:N]" },
		{ "max_restarts", "", "a whole number from 0 to 1000000" },
		{ "max_restarts", "-1", "a whole number from 0 to 1000000" },
		{ "max_restarts", "1000001", "a whole number from 0 to 1000000" },
		{ "max_restarts", "ten", "a whole number from 0 to 1000000" },
		{ "max_restarts", "3.5", "a whole number from 0 to 1000000" },
		{ "max_restarts", "99999999999999999999999", "a whole number from 0 to 1000000" },
		{ "default_bind", "", "none, closest" },
		{ "default_bind", "gpux", "none, closest" },
		{ "default_bind", "gpu,", "none, closest" },
		{ "default_bind", "gpu,,cpu", "mem-strict" },
		{ "health_timeout", "", "a duration from 0.1 to 3600 s" },
		{ "health_timeout", "0", "a duration from 0.1 to 3600 s" },
		{ "health_timeout", "0.099", "a duration from 0.1 to 3600 s" },
		{ "health_timeout", "3600.001", "a duration from 0.1 to 3600 s" },
		{ "health_timeout", "61m", "a duration from 0.1 to 3600 s" },
		{ "default_grace", "", "a duration from 0 to 3600 s" },
		{ "default_grace", "3601", "a duration from 0 to 3600 s" },
		{ "default_grace", "3600.001", "a duration from 0 to 3600 s" },
		{ "default_grace", "1.0001", "a duration from 0 to 3600 s" },
		{ "default_grace", "-1", "a duration from 0 to 3600 s" },
		{ "default_grace", "10x", "a duration from 0 to 3600 s" },
		{ "health", "gpu:0", PM_CHECK_GRAMMAR },
		{ "health", "bogus", PM_CHECK_GRAMMAR },
		{ "health", "gpu,,mem", PM_CHECK_GRAMMAR },
		{ "health", ",gpu", PM_CHECK_GRAMMAR },
		{ "drain", "", "yes or no" },
		{ "drain", "true", "yes or no" },
		{ "drain", "YES", "yes or no" },
		{ "drain", "1", "yes or no" },
		{ "ports", "", "LO-HI, two ports from 1024 to 65535, LO < HI" },
		{ "ports", "2000", "LO-HI" },
		{ "ports", "-2000", "LO-HI" },
		{ "ports", "2000-", "LO-HI" },
		{ "ports", "1023-2000", "LO-HI" },
		{ "ports", "2000-65536", "LO-HI" },
		{ "ports", "2000-1000", "LO < HI" },
		{ "ports", "2000-2000", "LO < HI" },
		{ "ports", "2000-3000-4000", "LO-HI" },
		{ "ports", "a-b", "LO-HI" },
		{ "ports", " 2000-3000", "LO-HI" },
		{ "ports", "2000-3000 ", "LO-HI" },
		{ "ports", "99999999999999999999-2000", "LO-HI" },
		{ "ports", "2000-99999999999999999999", "LO-HI" },
		{ "fanout", "", "a whole number from 2 to 1024" },
		{ "fanout", "0", "a whole number from 2 to 1024" },
		{ "fanout", "1", "a whole number from 2 to 1024" },
		{ "fanout", "1025", "a whole number from 2 to 1024" },
		{ "fanout", "-2", "a whole number from 2 to 1024" },
		{ "fanout", "32x", "a whole number from 2 to 1024" },
		{ "default_stack_timeout", "0", "a duration from 1 s to 600 s" },
		{ "default_stack_timeout", "601", "a duration from 1 s to 600 s" },
		{ "default_stack_timeout", "", "a duration from 1 s to 600 s" },
	};
	char *toolong = malloc(PATH_MAX + 1);
	char *listlong = repeat("gpu", ',', 257);
	size_t i;
	(void)state;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		site_bad(bad[i].key, bad[i].value, bad[i].allowed);

	/* A path of PATH_MAX characters (no room for the NUL) is refused. */
	assert_non_null(toolong);
	toolong[0] = '/';
	memset(toolong + 1, 'p', PATH_MAX - 1);
	toolong[PATH_MAX] = '\0';
	site_bad("runtime", toolong, "an absolute path");
	site_bad("state_dir", toolong, "an absolute path");
	site_bad("topology", toolong, "an absolute path");
	/* A health list the site's field cannot hold. */
	site_bad("health", listlong, PM_CHECK_GRAMMAR);
	free(toolong);
	free(listlong);
}

/* peer_timeout: how long a silent link is tolerated; 0 turns liveness off. */
static void test_site_peer_timeout(void **state)
{
	static const char *const bad[] = { "peer_timeout=0.5", "peer_timeout=3601",
					   "peer_timeout=-1", "peer_timeout=", "peer_timeout=x" };
	struct pm_site s;
	size_t i;
	(void)state;

	pm_site_init(&s);
	assert_int_equal(s.peer_timeout_ms, PM_DEFAULT_PEER_TIMEOUT_MS);
	assert_int_equal(site(&s, "peer_timeout=2", NULL, NULL), 0);
	assert_int_equal(s.peer_timeout_ms, 2000);
	assert_int_equal(site(&s, "peer_timeout=0", NULL, NULL), 0);
	assert_int_equal(s.peer_timeout_ms, 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(site(&s, bad[i], NULL, NULL), -1);
		contains(err, "'peer_timeout'");
		contains(err, "0 (off) or a duration from 1 to 3600 s");
	}
}

/* connect_timeout: how long a node waits for its parent to listen. */
static void test_site_connect_timeout(void **state)
{
	static const char *const bad[] = { "connect_timeout=0", "connect_timeout=0.5",
					   "connect_timeout=3601", "connect_timeout=",
					   "connect_timeout=x" };
	struct pm_site s;
	size_t i;
	(void)state;

	pm_site_init(&s);
	assert_int_equal(s.connect_timeout_ms, PM_DEFAULT_CONNECT_TIMEOUT_MS);
	assert_int_equal(site(&s, "connect_timeout=600", NULL, NULL), 0);
	assert_int_equal(s.connect_timeout_ms, 600000);
	assert_int_equal(site(&s, "connect_timeout=1.5", NULL, NULL), 0);
	assert_int_equal(s.connect_timeout_ms, 1500);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(site(&s, bad[i], NULL, NULL), -1);
		contains(err, "'connect_timeout'");
		contains(err, "a duration from 1 to 3600 s");
	}
}

/* state_max_rank, state_max_node: sizes in MiB, K/M/G/T, 0 for none. */
static void test_site_state_max(void **state)
{
	static const char *const bad[] = { "state_max_rank=", "state_max_rank=x",
					   "state_max_rank=1P", "state_max_rank=-1",
					   "state_max_rank=1023K", "state_max_rank=1025T",
					   "state_max_rank=4294967296", "state_max_rank=1.5G" };
	struct pm_site s;
	size_t i;
	(void)state;

	pm_site_init(&s);
	assert_int_equal(s.state_max_rank_mib, PM_DEFAULT_STATE_MAX_RANK_MIB);
	assert_int_equal(s.state_max_node_mib, PM_DEFAULT_STATE_MAX_NODE_MIB);
	assert_int_equal(site(&s, "state_max_rank=16", NULL, NULL), 0);
	assert_int_equal(s.state_max_rank_mib, 16);
	assert_int_equal(site(&s, "state_max_rank=2G", NULL, NULL), 0);
	assert_int_equal(s.state_max_rank_mib, 2048);
	assert_int_equal(site(&s, "state_max_rank=2048K", NULL, NULL), 0);
	assert_int_equal(s.state_max_rank_mib, 2);
	assert_int_equal(site(&s, "state_max_node=1T", NULL, NULL), 0);
	assert_int_equal(s.state_max_node_mib, 1u << 20);
	assert_int_equal(site(&s, "state_max_node=0", NULL, NULL), 0);
	assert_int_equal(s.state_max_node_mib, 0);
	assert_int_equal(site(&s, "state_max_node=1024T", NULL, NULL), 0);
	assert_int_equal(s.state_max_node_mib, PM_STATE_MAX_MIB);
	/* The copy to the buddy's bound: the same sizes, per second. */
	assert_int_equal(s.state_repl_mib_s, PM_DEFAULT_STATE_REPL_MIB_S);
	assert_int_equal(site(&s, "state_repl_rate=200M", NULL, NULL), 0);
	assert_int_equal(s.state_repl_mib_s, 200);
	assert_int_equal(site(&s, "state_repl_rate=0", NULL, NULL), 0);
	assert_int_equal(s.state_repl_mib_s, 0);
	assert_int_equal(site(&s, "state_repl_rate=10G", NULL, NULL), 0);
	assert_int_equal(s.state_repl_mib_s, 10240);
	assert_int_equal(site(&s, "state_repl_rate=fast", NULL, NULL), -1);
	contains(err, "'state_repl_rate'");
	contains(err, "a size per second from 1M to 1024T");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(site(&s, bad[i], NULL, NULL), -1);
		contains(err, "'state_max_rank'");
		contains(err, "a size from 1M to 1024T");
	}
}

/* A key given twice is refused, naming the file, the key and both values. */
static void test_site_twice(void **state)
{
	struct pm_site s;
	(void)state;

	pm_site_init(&s);
	assert_int_equal(site(&s, "max_restarts=3", "drain=yes", "max_restarts=5"), -1);
	contains(err, FILE_NAME ": key 'max_restarts' given twice ('3' and '5'); give it once");
	assert_int_equal(site(&s, "max_restarts=3", "drain=yes", NULL), 0);
}

/* --procmgr-warm: its three forms, refusals that say what is allowed, the
 * round trip through the options text and the site's default under the
 * user's off. */
static void test_warm(void **state)
{
	struct pm_opts o, p, r;
	struct pm_site site_cf;
	(void)state;

	pm_opts_init(&o);
	opt_ok(&o, "warm", "on");
	assert_string_equal(o.warm, "on");
	fmt_is(&o, "procmgr warm=on");
	opt_ok(&o, "warm", "python:torch,numpy");
	fmt_is(&o, "procmgr warm=python:torch,numpy");
	pm_opts_init(&p);
	assert_int_equal(pm_opts_parse_str(&p, "procmgr warm=python:torch,numpy", "x", err,
					   sizeof(err)), 0);
	assert_string_equal(p.warm, "python:torch,numpy");
	opt_ok(&o, "warm", "off");
	assert_string_equal(o.warm, "off");
	/* yes and no were taken, undocumented: only the documented words now. */
	assert_int_equal(pm_opt_parse(&o, "warm", "yes", err, sizeof(err)), -1);
	contains(err, "on, off or python:MOD[,MOD...]");
	assert_int_equal(pm_opt_parse(&o, "warm", "no", err, sizeof(err)), -1);
	assert_int_equal(pm_opt_parse(&o, "warm", "python:", err, sizeof(err)), -1);
	contains(err, "on, off or python:MOD[,MOD...]");
	assert_int_equal(pm_opt_parse(&o, "warm", "python:os;id", err, sizeof(err)), -1);
	contains(err, "'python:os;id'");
	assert_int_equal(pm_opt_parse(&o, "warm", NULL, err, sizeof(err)), -1);
	assert_int_equal(pm_opts_parse_str(&p, "procmgr warm", "x", err, sizeof(err)), -1);
	contains(err, "'warm' needs a value");
	pm_site_init(&site_cf);
	assert_int_equal(site(&site_cf, "default_warm=python:torch", NULL, NULL), 0);
	pm_opts_init(&o);
	opt_ok(&o, "", NULL);
	assert_int_equal(pm_opts_resolve(&r, &site_cf, NULL, &o, err, sizeof(err)), 0);
	assert_string_equal(r.warm, "python:torch");
	opt_ok(&o, "warm", "off");
	assert_int_equal(pm_opts_resolve(&r, &site_cf, NULL, &o, err, sizeof(err)), 0);
	assert_string_equal(r.warm, "off");
	assert_int_equal(site(&site_cf, "default_warm=maybe", NULL, NULL), -1);
	contains(err, "default_warm");
}

static void test_spares(void **state)
{
	struct pm_opts o, r;
	struct pm_site site_cf;
	(void)state;

	pm_opts_init(&o);
	opt_ok(&o, "spares", "2");
	assert_int_equal(o.spares, 2);
	fmt_is(&o, "procmgr spares=2");
	assert_int_equal(pm_opt_parse(&o, "spares", "-1", err, sizeof(err)), -1);
	contains(err, "a whole number of nodes from 0 to 100000");
	assert_int_equal(pm_opt_parse(&o, "spares", "two", err, sizeof(err)), -1);
	contains(err, "'two'");
	/* A replacement restarts every rank: spares without restarts are refused. */
	pm_site_init(&site_cf);
	assert_int_equal(pm_opts_resolve(&r, &site_cf, NULL, &o, err, sizeof(err)), -1);
	contains(err, "--procmgr-spares=2 needs restarts");
	contains(err, "--procmgr-restart=on-failure");
	opt_ok(&o, "restart", "on-failure:3");
	assert_int_equal(pm_opts_resolve(&r, &site_cf, NULL, &o, err, sizeof(err)), 0);
	assert_int_equal(r.spares, 2);
	/* The site's default, and a user's 0 over it. */
	assert_int_equal(site(&site_cf, "default_spares=1", NULL, NULL), 0);
	pm_opts_init(&o);
	opt_ok(&o, "restart", "on-failure");
	assert_int_equal(pm_opts_resolve(&r, &site_cf, NULL, &o, err, sizeof(err)), 0);
	assert_int_equal(r.spares, 1);
	opt_ok(&o, "spares", "0");
	assert_int_equal(pm_opts_resolve(&r, &site_cf, NULL, &o, err, sizeof(err)), 0);
	assert_int_equal(r.spares, 0);
}

/* --procmgr-output-dir: an absolute path without blanks, carried whole
 * through the options text and the layers; bad values say what is allowed. */
static void test_output_dir(void **state)
{
	struct pm_opts o, job, r;
	struct pm_site site_cf;
	char buf[4096], big[PM_OUTPUT_DIR_MAX + 8];
	(void)state;

	pm_opts_init(&o);
	opt_ok(&o, "output-dir", "/scratch/me/run=1");
	assert_string_equal(o.output_dir, "/scratch/me/run=1");
	fmt_is(&o, "procmgr output-dir=/scratch/me/run=1");
	/* Round trip through the text options travel in. */
	assert_int_equal(pm_opts_format(&o, buf, sizeof(buf)), 0);
	pm_opts_init(&r);
	assert_int_equal(pm_opts_parse_str(&r, buf, "X", err, sizeof(err)), 0);
	assert_string_equal(r.output_dir, "/scratch/me/run=1");

	assert_int_equal(pm_opt_parse(&o, "output-dir", "logs", err, sizeof(err)), -1);
	contains(err, "invalid value 'logs' for --procmgr-output-dir: a relative path");
	contains(err, "expected an absolute directory path");
	assert_int_equal(pm_opt_parse(&o, "output-dir", "", err, sizeof(err)), -1);
	contains(err, "an empty path");
	assert_int_equal(pm_opt_parse(&o, "output-dir", NULL, err, sizeof(err)), -1);
	assert_int_equal(pm_opt_parse(&o, "output-dir", "/my logs", err, sizeof(err)), -1);
	contains(err, "a blank or a control character");
	assert_int_equal(pm_opt_parse(&o, "output-dir", "/a\nb", err, sizeof(err)), -1);
	contains(err, "a blank or a control character");
	memset(big, 'a', sizeof(big) - 1);
	big[0] = '/';
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(pm_opt_parse(&o, "output-dir", big, err, sizeof(err)), -1);
	contains(err, "a path too long");
	/* A refused value leaves the last good one. */
	assert_string_equal(o.output_dir, "/scratch/me/run=1");

	/* The job script's directory, and srun's over it. */
	pm_site_init(&site_cf);
	pm_opts_init(&job);
	opt_ok(&job, "output-dir", "/job");
	pm_opts_init(&o);
	opt_ok(&o, "", NULL);
	assert_int_equal(pm_opts_resolve(&r, &site_cf, &job, &o, err, sizeof(err)), 0);
	assert_string_equal(r.output_dir, "/job");
	opt_ok(&o, "output-dir", "/step");
	assert_int_equal(pm_opts_resolve(&r, &site_cf, &job, &o, err, sizeof(err)), 0);
	assert_string_equal(r.output_dir, "/step");
	/* None given: none, and nothing in the text. */
	pm_opts_init(&o);
	o.enabled = true;
	o.set = ~0u;
	assert_int_equal(pm_opts_format(&o, buf, sizeof(buf)), 0);
	assert_null(strstr(buf, "output-dir"));
}

/* --procmgr-slow and --procmgr-evict-slow: parsed, formatted, layered,
 * and bad values refused saying what is allowed. */
static void test_slow_opts(void **state)
{
	struct pm_opts o, back, r;
	struct pm_site site_cf;
	(void)state;

	pm_opts_init(&o);
	assert_int_equal(pm_opts_slow_interval(&o), 0);
	opt_ok(&o, "slow", "on");
	assert_int_equal(o.slow_interval_ms, PM_DEFAULT_SLOW_INTERVAL_MS);
	assert_int_equal(o.slow_threshold_pct, PM_DEFAULT_SLOW_THRESHOLD_PCT);
	fmt_is(&o, "procmgr slow=5,40%");
	opt_ok(&o, "slow", "1.5s,35%");
	assert_int_equal(o.slow_interval_ms, 1500);
	assert_int_equal(o.slow_threshold_pct, 35);
	assert_int_equal(pm_opts_slow_interval(&o), 1500);
	fmt_is(&o, "procmgr slow=1.5,35%");
	/* The round trip through the options text. */
	pm_opts_init(&back);
	assert_int_equal(pm_opts_parse_str(&back, "procmgr slow=1.5,35% evict-slow", "test",
					   err, sizeof(err)), 0);
	assert_int_equal(back.slow_interval_ms, 1500);
	assert_int_equal(back.slow_threshold_pct, 35);
	assert_true(back.evict_slow);
	opt_ok(&o, "slow", "off");
	assert_int_equal(o.slow_interval_ms, 0);
	fmt_is(&o, "procmgr slow=off");
	const char *bad_values[] = { "", "fast", "0.05", "2h", "5s,", "5s,20", "5s,0%",
				     "5s,1001%", "5s,x%", NULL };
	for (int i = 0; bad_values[i]; i++) {
		CHECK(pm_opt_parse(&o, "slow", bad_values[i], err, sizeof(err)) == -1,
		      "slow=%s accepted", bad_values[i]);
		contains(err, "--procmgr-slow");
		contains(err, "on, off (or 0), or an interval");
	}
	/* Eviction alone turns detection on, with the default interval. */
	pm_opts_init(&o);
	opt_ok(&o, "evict-slow", NULL);
	assert_true(o.evict_slow);
	assert_int_equal(pm_opts_slow_interval(&o), PM_DEFAULT_SLOW_INTERVAL_MS);
	fmt_is(&o, "procmgr evict-slow");
	/* Resolved, the interval is written out: the step reads every field as
	 * set, and "slow=off evict-slow" there was no detection at all (and
	 * --procmgr-verbose said slow=off). */
	{
		struct pm_site st;
		struct pm_opts res, stepd;
		pm_site_init(&st);
		assert_int_equal(pm_opts_resolve(&res, &st, NULL, &o, err, sizeof(err)), 0);
		assert_int_equal(res.slow_interval_ms, PM_DEFAULT_SLOW_INTERVAL_MS);
		res.set = ~0u;
		char buf[4096];
		assert_int_equal(pm_opts_format(&res, buf, sizeof(buf)), 0);
		contains(buf, "slow=5,40%");
		pm_opts_init(&stepd);
		assert_int_equal(pm_opts_parse_str(&stepd, buf, "test", err, sizeof(err)), 0);
		assert_int_equal(pm_opts_slow_interval(&stepd), PM_DEFAULT_SLOW_INTERVAL_MS);
		assert_true(stepd.evict_slow);
		/* Detection turned off by name and eviction asked for: refused. */
		struct pm_opts both;
		pm_opts_init(&both);
		opt_ok(&both, "slow", "off");
		opt_ok(&both, "evict-slow", NULL);
		assert_int_equal(pm_opts_resolve(&res, &st, NULL, &both, err, sizeof(err)), -1);
		contains(err, "--procmgr-evict-slow needs slow-node detection");
		contains(err, "--procmgr-slow=off");
	}
	/* As slurmstepd's SPANK gives a flag. */
	pm_opts_init(&o);
	opt_ok(&o, "evict-slow", "");
	assert_true(o.evict_slow);
	assert_int_equal(pm_opt_parse(&o, "evict-slow", "maybe", err, sizeof(err)), -1);
	contains(err, "yes or no");
	assert_int_equal(pm_opts_parse_str(&back, "evict-slow=yes", "test", err, sizeof(err)), -1);
	contains(err, "takes no value");
	/* The site's defaults. */
	pm_site_init(&site_cf);
	assert_int_equal(site(&site_cf, "default_slow=10s,30%", "default_evict_slow=yes", NULL), 0);
	pm_opts_init(&o);
	opt_ok(&o, "", NULL);
	assert_int_equal(pm_opts_resolve(&r, &site_cf, NULL, &o, err, sizeof(err)), 0);
	assert_int_equal(r.slow_interval_ms, 10000);
	assert_int_equal(r.slow_threshold_pct, 30);
	assert_true(r.evict_slow);
	opt_ok(&o, "slow", "2s");
	assert_int_equal(pm_opts_resolve(&r, &site_cf, NULL, &o, err, sizeof(err)), 0);
	assert_int_equal(r.slow_interval_ms, 2000);
	pm_site_init(&site_cf);
	assert_int_equal(site(&site_cf, "default_evict_slow=maybe", NULL, NULL), -1);
	contains(err, "default_evict_slow");
	contains(err, "yes or no");
}

/* A sweep's two options: parsed, written, layered, and refused where they
 * make no sense. */
static void test_sweep(void **state)
{
	struct pm_opts o, r;
	struct pm_site site_cf;
	(void)state;

	pm_opts_init(&o);
	opt_ok(&o, "sweep", "/work/trials.txt");
	fmt_is(&o, "procmgr sweep=/work/trials.txt");
	opt_ok(&o, "trial-ranks", "4");
	assert_int_equal(o.trial_ranks, 4);
	fmt_is(&o, "procmgr sweep=/work/trials.txt trial-ranks=4");
	pm_site_init(&site_cf);
	assert_int_equal(pm_opts_resolve(&r, &site_cf, NULL, &o, err, sizeof(err)), 0);
	assert_string_equal(r.sweep, "/work/trials.txt");
	assert_int_equal(r.trial_ranks, 4);
	/* The options' text is blank-separated words. */
	assert_int_equal(pm_opt_parse(&o, "sweep", "/my trials.txt", err, sizeof(err)), -1);
	contains(err, "without blanks");
	assert_int_equal(pm_opt_parse(&o, "sweep", "", err, sizeof(err)), -1);
	assert_int_equal(pm_opt_parse(&o, "trial-ranks", "0", err, sizeof(err)), -1);
	contains(err, "from 1 to 1000000");
	assert_int_equal(pm_opt_parse(&o, "trial-ranks", "x", err, sizeof(err)), -1);
	/* Round trip through the step's options text. */
	{
		char buf[4096];
		struct pm_opts back;
		assert_int_equal(pm_opts_format(&o, buf, sizeof(buf)), 0);
		pm_opts_init(&back);
		assert_int_equal(pm_opts_parse_str(&back, buf, "test", err, sizeof(err)), 0);
		assert_string_equal(back.sweep, o.sweep);
		assert_int_equal(back.trial_ranks, o.trial_ranks);
	}
	/* trial-ranks alone is refused; a sweep takes spares, without
	 * restarts too (its trials have their own policy). */
	pm_opts_init(&o);
	opt_ok(&o, "trial-ranks", "2");
	assert_int_equal(pm_opts_resolve(&r, &site_cf, NULL, &o, err, sizeof(err)), -1);
	contains(err, "--procmgr-trial-ranks=2 needs --procmgr-sweep=FILE");
	pm_opts_init(&o);
	opt_ok(&o, "sweep", "/t");
	opt_ok(&o, "restart", "on-failure");
	opt_ok(&o, "spares", "1");
	assert_int_equal(pm_opts_resolve(&r, &site_cf, NULL, &o, err, sizeof(err)), 0);
	assert_int_equal(r.spares, 1);
	pm_opts_init(&o);
	opt_ok(&o, "sweep", "/t");
	opt_ok(&o, "spares", "2");
	assert_int_equal(pm_opts_resolve(&r, &site_cf, NULL, &o, err, sizeof(err)), 0);
	/* A step without a sweep still needs restarts for its spares. */
	pm_opts_init(&o);
	opt_ok(&o, "spares", "2");
	assert_int_equal(pm_opts_resolve(&r, &site_cf, NULL, &o, err, sizeof(err)), -1);
	contains(err, "needs restarts");
}

static void test_site_unknown(void **state)
{
	struct pm_site s;
	(void)state;

	pm_site_init(&s);
	assert_int_equal(site(&s, "colour=blue", NULL, NULL), -1);
	contains(err, FILE_NAME ": ");
	contains(err, "'colour'");
	contains(err, "'blue'");
	/* The message lists what is known. */
	contains(err, "runtime, default_restart, max_restarts, default_bind, "
		 "default_grace, default_spares, default_warm, default_slow, default_evict_slow, "
		 "health, health_timeout, peer_timeout, "
		 "connect_timeout, drain, ports, fanout, "
		 "state_dir, topology");

	/* Keys are case-sensitive and exact. */
	assert_int_equal(site(&s, "Drain=yes", NULL, NULL), -1);
	contains(err, "'Drain'");
	assert_int_equal(site(&s, "max_restart=3", NULL, NULL), -1);
	contains(err, "'max_restart'");
	/* A bad argument after good ones is still an error. */
	assert_int_equal(site(&s, "drain=yes", "fanout=4", "typo=1"), -1);
	contains(err, "'typo'");

	/* Not key=value at all. */
	assert_int_equal(site(&s, "drain", NULL, NULL), -1);
	contains(err, FILE_NAME ": ");
	contains(err, "'drain' is not key=value");
	contains(err, "default_grace");
	assert_int_equal(site(&s, "=yes", NULL, NULL), -1);
	contains(err, "'=yes' is not key=value");
}

/* default_restart may not promise more than max_restarts, whatever the order
 * of the two on the line. */
static void test_site_default_restart_cap(void **state)
{
	struct pm_site s;
	(void)state;

	pm_site_init(&s);
	assert_int_equal(site(&s, "default_restart=on-failure:11", NULL, NULL), -1);
	contains(err, FILE_NAME ": ");
	contains(err, "default_restart=on-failure:11");
	contains(err, "max_restarts=10");

	pm_site_init(&s);
	assert_int_equal(site(&s, "default_restart=always:5", "max_restarts=4", NULL), -1);
	contains(err, "default_restart=always:5");
	contains(err, "max_restarts=4");

	pm_site_init(&s);
	assert_int_equal(site(&s, "default_restart=on-failure:20", "max_restarts=20", NULL), 0);
	pm_site_init(&s);
	assert_int_equal(site(&s, "max_restarts=20", "default_restart=on-failure:20", NULL), 0);
	assert_int_equal(s.defaults.restart_max, 20);
	/* Without a count the cap is applied at resolution, not refused here. */
	pm_site_init(&s);
	assert_int_equal(site(&s, "max_restarts=0", "default_restart=always", NULL), 0);
}

/* ---- precedence: site default < job script < srun flag < site cap ------ */

static void layer(struct pm_opts *o, const char *s)
{
	pm_opts_init(o);
	CHECK(pm_opts_parse_str(o, s, "layer", err, sizeof(err)) == 0, "'%s': %s", s, err);
}

static void site_args(struct pm_site *s, const char *a0, const char *a1, const char *a2)
{
	pm_site_init(s);
	CHECK(site(s, a0, a1, a2) == 0, "site refused: %s", err);
}

static void test_resolve_site_defaults(void **state)
{
	struct pm_site s;
	struct pm_opts out, step;
	(void)state;

	site_args(&s, "default_restart=on-failure:2", "default_grace=5",
		  "default_bind=closest");
	/* No layer asks for procmgr: the step is not supervised. */
	assert_int_equal(pm_opts_resolve(&out, &s, NULL, NULL, err, sizeof(err)), 0);
	assert_false(out.enabled);

	/* The bare --procmgr gets the site's defaults. */
	layer(&step, "procmgr");
	assert_int_equal(pm_opts_resolve(&out, &s, NULL, &step, err, sizeof(err)), 0);
	assert_true(out.enabled);
	assert_int_equal(out.restart, PM_RESTART_ON_FAILURE);
	assert_int_equal(out.restart_max, 2);
	assert_int_equal(out.grace_ms, 5000);
	assert_int_equal(out.bind, PM_BIND_ALL);
	assert_int_equal(out.restart_delay_ms, PM_DEFAULT_DELAY_MS);
	assert_int_equal(out.hang_timeout_ms, 0);
	assert_false(out.verbose);
	assert_int_equal(out.set, PM_SET_ENABLED);

	/* Built-in defaults where the site says nothing. */
	site_args(&s, NULL, NULL, NULL);
	assert_int_equal(pm_opts_resolve(&out, &s, NULL, &step, err, sizeof(err)), 0);
	assert_int_equal(out.restart, PM_RESTART_NEVER);
	assert_int_equal(out.restart_max, 0);
	assert_int_equal(out.grace_ms, PM_DEFAULT_GRACE_MS);
	assert_int_equal(out.bind, 0);
}

static void test_resolve_layers(void **state)
{
	struct pm_site s;
	struct pm_opts out, job, step;
	(void)state;

	site_args(&s, "default_restart=on-failure:2", "default_grace=5",
		  "default_bind=closest");
	/* #SBATCH lines over the site; the srun flag over #SBATCH, field by
	 * field. */
	layer(&job, "procmgr restart=on-failure:4 grace=7 hang-timeout=30");
	layer(&step, "restart=never bind=gpu");
	assert_int_equal(pm_opts_resolve(&out, &s, &job, &step, err, sizeof(err)), 0);
	assert_true(out.enabled);
	assert_int_equal(out.restart, PM_RESTART_NEVER);
	assert_int_equal(out.restart_max, 0);
	assert_int_equal(out.grace_ms, 7000);          /* job */
	assert_int_equal(out.bind, PM_BIND_GPU);        /* step */
	assert_int_equal(out.hang_timeout_ms, 30000);  /* job */

	/* Without the step's flags the job's apply. */
	assert_int_equal(pm_opts_resolve(&out, &s, &job, NULL, err, sizeof(err)), 0);
	assert_int_equal(out.restart, PM_RESTART_ON_FAILURE);
	assert_int_equal(out.restart_max, 4);
	assert_int_equal(out.bind, PM_BIND_ALL);        /* site */

	/* A step flag overrides the job's restart, count included. */
	layer(&step, "restart=always:1");
	assert_int_equal(pm_opts_resolve(&out, &s, &job, &step, err, sizeof(err)), 0);
	assert_int_equal(out.restart, PM_RESTART_ALWAYS);
	assert_int_equal(out.restart_max, 1);
	assert_int_equal(out.grace_ms, 7000);

	/* Any option in a layer turns procmgr on. */
	layer(&job, "");
	layer(&step, "verbose");
	assert_int_equal(pm_opts_resolve(&out, &s, &job, &step, err, sizeof(err)), 0);
	assert_true(out.enabled);
	assert_true(out.verbose);

	/* The layers are not changed. */
	layer(&job, "grace=1");
	layer(&step, "grace=2");
	assert_int_equal(pm_opts_resolve(&out, &s, &job, &step, err, sizeof(err)), 0);
	assert_int_equal(job.grace_ms, 1000);
	assert_int_equal(step.grace_ms, 2000);
	assert_int_equal(out.grace_ms, 2000);
}

static void test_resolve_cap(void **state)
{
	struct pm_site s;
	struct pm_opts out, job, step;
	(void)state;

	site_args(&s, "max_restarts=10", NULL, NULL);
	/* At the cap: fine. */
	layer(&step, "restart=on-failure:10");
	assert_int_equal(pm_opts_resolve(&out, &s, NULL, &step, err, sizeof(err)), 0);
	assert_int_equal(out.restart_max, 10);
	/* Above: refused, and the message says the cap. */
	layer(&step, "restart=on-failure:11");
	assert_int_equal(pm_opts_resolve(&out, &s, NULL, &step, err, sizeof(err)), -1);
	contains(err, "--procmgr-restart=on-failure:11");
	contains(err, "max_restarts=10");
	layer(&step, "restart=always:1000000");
	assert_int_equal(pm_opts_resolve(&out, &s, NULL, &step, err, sizeof(err)), -1);
	contains(err, "--procmgr-restart=always:1000000");
	contains(err, "max_restarts=10");

	/* From #SBATCH too, unless the srun flag replaces it. */
	layer(&job, "restart=on-failure:50");
	layer(&step, "grace=1");
	assert_int_equal(pm_opts_resolve(&out, &s, &job, &step, err, sizeof(err)), -1);
	contains(err, "on-failure:50");
	contains(err, "max_restarts=10");
	layer(&step, "restart=on-failure:3");
	assert_int_equal(pm_opts_resolve(&out, &s, &job, &step, err, sizeof(err)), 0);
	assert_int_equal(out.restart_max, 3);
	layer(&step, "restart=never");
	assert_int_equal(pm_opts_resolve(&out, &s, &job, &step, err, sizeof(err)), 0);
	assert_int_equal(out.restart, PM_RESTART_NEVER);

	/* A cap of 0: only never, or a mode without a count. */
	site_args(&s, "max_restarts=0", NULL, NULL);
	layer(&step, "restart=always:1");
	assert_int_equal(pm_opts_resolve(&out, &s, NULL, &step, err, sizeof(err)), -1);
	contains(err, "max_restarts=0");
	layer(&step, "restart=always:0");
	assert_int_equal(pm_opts_resolve(&out, &s, NULL, &step, err, sizeof(err)), 0);
}

/* "on-failure" alone: PM_DEFAULT_RESTARTS (3), but never above the cap. */
static void test_resolve_no_count(void **state)
{
	static const struct { const char *cap; int want; } t[] = {
		{ "max_restarts=10", 3 }, { "max_restarts=3", 3 }, { "max_restarts=2", 2 },
		{ "max_restarts=0", 0 }, { "max_restarts=1000000", 3 },
	};
	struct pm_site s;
	struct pm_opts out, step;
	size_t i;
	(void)state;

	assert_int_equal(PM_DEFAULT_RESTARTS, 3);
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		site_args(&s, t[i].cap, NULL, NULL);
		layer(&step, "restart=on-failure");
		assert_int_equal(pm_opts_resolve(&out, &s, NULL, &step, err, sizeof(err)), 0);
		assert_int_equal(out.restart, PM_RESTART_ON_FAILURE);
		CHECK(out.restart_max == t[i].want, "%s: on-failure gives %d restarts",
		      t[i].cap, out.restart_max);
		layer(&step, "restart=always");
		assert_int_equal(pm_opts_resolve(&out, &s, NULL, &step, err, sizeof(err)), 0);
		assert_int_equal(out.restart_max, t[i].want);
	}
	/* Same for the site's own default without a count. */
	site_args(&s, "default_restart=on-failure", "max_restarts=1", NULL);
	layer(&step, "procmgr");
	assert_int_equal(pm_opts_resolve(&out, &s, NULL, &step, err, sizeof(err)), 0);
	assert_int_equal(out.restart, PM_RESTART_ON_FAILURE);
	assert_int_equal(out.restart_max, 1);
}

/* gpu:FIRST,...,gpu:LAST, malloc'ed. */
static char *gpu_items(int first, int last)
{
	char *s = malloc(PM_LIST_MAX * 2);
	size_t off = 0;
	int i;

	assert_non_null(s);
	s[0] = '\0';
	for (i = first; i <= last; i++)
		off += (size_t)snprintf(s + off, PM_LIST_MAX * 2 - off, "%sgpu:%d",
					i > first ? "," : "", i);
	return s;
}

static void test_resolve_health(void **state)
{
	struct pm_site s;
	struct pm_opts out, job, step;
	char *site_list = gpu_items(1, 100);  /* 691 characters */
	char *user_list = gpu_items(101, 150); /* 399: 1091 together */
	char arg[PM_LIST_MAX + 16];
	(void)state;

	/* The site's checks always run, the user's on top. */
	site_args(&s, "health=gpu,mem:1G", NULL, NULL);
	layer(&step, "health=disk:/scratch");
	assert_int_equal(pm_opts_resolve(&out, &s, NULL, &step, err, sizeof(err)), 0);
	assert_string_equal(out.health, "gpu,mem:1G,disk:/scratch");
	layer(&step, "procmgr");
	assert_int_equal(pm_opts_resolve(&out, &s, NULL, &step, err, sizeof(err)), 0);
	assert_string_equal(out.health, "gpu,mem:1G");
	/* The job's list, replaced by the step's: still with the site's. */
	layer(&job, "health=nic:ib0");
	layer(&step, "health=gpu:2");
	assert_int_equal(pm_opts_resolve(&out, &s, &job, &step, err, sizeof(err)), 0);
	assert_string_equal(out.health, "gpu,mem:1G,gpu:2");
	assert_int_equal(pm_opts_resolve(&out, &s, &job, NULL, err, sizeof(err)), 0);
	assert_string_equal(out.health, "gpu,mem:1G,nic:ib0");

	/* A check the site already runs is not run twice. */
	site_args(&s, "health=gpu,mem:1G", NULL, NULL);
	layer(&step, "health=mem:1G,nic:ib0,gpu");
	assert_int_equal(pm_opts_resolve(&out, &s, NULL, &step, err, sizeof(err)), 0);
	assert_string_equal(out.health, "gpu,mem:1G,nic:ib0");
	/* Same kind, other argument: a different check, kept. */
	layer(&step, "health=mem:2G");
	assert_int_equal(pm_opts_resolve(&out, &s, NULL, &step, err, sizeof(err)), 0);
	assert_string_equal(out.health, "gpu,mem:1G,mem:2G");

	/* No site checks: the user's alone; none at all: none. */
	site_args(&s, NULL, NULL, NULL);
	layer(&step, "health=disk:/tmp");
	assert_int_equal(pm_opts_resolve(&out, &s, NULL, &step, err, sizeof(err)), 0);
	assert_string_equal(out.health, "disk:/tmp");
	layer(&step, "procmgr");
	assert_int_equal(pm_opts_resolve(&out, &s, NULL, &step, err, sizeof(err)), 0);
	assert_string_equal(out.health, "");

	/* Together longer than a list holds: refused, not cut. */
	snprintf(arg, sizeof(arg), "health=%s", site_list);
	site_args(&s, arg, NULL, NULL);
	layer(&step, "procmgr");
	assert_int_equal(pm_opts_resolve(&out, &s, NULL, &step, err, sizeof(err)), 0);
	assert_string_equal(out.health, site_list);
	pm_opts_init(&step);
	opt_ok(&step, "health", user_list);
	assert_int_equal(pm_opts_resolve(&out, &s, NULL, &step, err, sizeof(err)), -1);
	contains(err, "too long");
	free(site_list);
	free(user_list);
}

/* slurmstepd checks srun's resolved options again against the same site
 * (plugin/remote.c): resolving the formatted result of a resolution must
 * give that result again, with the site's health checks once. */
static void test_resolve_again(void **state)
{
	static const char *const steps[] = {
		"procmgr", "restart=on-failure", "restart=always:2 health=disk:/tmp grace=1",
		"health=gpu,mem:1G bind=closest,mem-strict verbose", "health=gpu",
	};
	struct pm_site s;
	size_t i;
	(void)state;

	site_args(&s, "health=gpu,mem:1G", "max_restarts=2", "default_bind=nic");
	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		struct pm_opts step, first, again, parsed;
		char buf[4096];
		layer(&step, steps[i]);
		assert_int_equal(pm_opts_resolve(&first, &s, NULL, &step, err, sizeof(err)), 0);
		first.set = ~0u; /* as plugin/local.c passes it */
		assert_int_equal(pm_opts_format(&first, buf, sizeof(buf)), 0);
		layer(&parsed, buf);
		assert_int_equal(pm_opts_resolve(&again, &s, NULL, &parsed, err, sizeof(err)), 0);
		CHECK(!strcmp(again.health, first.health), "'%s': health '%s' on srun's "
		      "side, '%s' on slurmstepd's", steps[i], first.health, again.health);
		assert_int_equal(again.restart, first.restart);
		assert_int_equal(again.restart_max, first.restart_max);
		assert_int_equal(again.grace_ms, first.grace_ms);
		assert_int_equal(again.bind, first.bind);
		assert_int_equal(again.verbose, first.verbose);
		assert_true(again.enabled);
	}
}

/* A list that fits on srun's side must fit on slurmstepd's: the site's
 * checks are not added to it a second time. */
static void test_resolve_again_long(void **state)
{
	char *site_list = gpu_items(1, 100);  /* 691 characters */
	char *user_list = gpu_items(101, 140); /* 319: 1011 together */
	char arg[PM_LIST_MAX + 16], buf[4096];
	struct pm_site s;
	struct pm_opts step, first, parsed, again;
	(void)state;

	assert_int_equal(strlen(site_list), 691);
	assert_int_equal(strlen(user_list), 319);
	snprintf(arg, sizeof(arg), "health=%s", site_list);
	site_args(&s, arg, NULL, NULL);
	pm_opts_init(&step);
	opt_ok(&step, "health", user_list);
	assert_int_equal(pm_opts_resolve(&first, &s, NULL, &step, err, sizeof(err)), 0);
	assert_int_equal(strlen(first.health), 1011);
	first.set = ~0u;
	assert_int_equal(pm_opts_format(&first, buf, sizeof(buf)), 0);
	layer(&parsed, buf);
	CHECK(pm_opts_resolve(&again, &s, NULL, &parsed, err, sizeof(err)) == 0,
	      "accepted by srun, refused by slurmstepd: %s", err);
	assert_string_equal(again.health, first.health);
	free(site_list);
	free(user_list);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init),
		cmocka_unit_test(test_optdescs),
		cmocka_unit_test(test_bare_procmgr),
		cmocka_unit_test(test_verbose),
		cmocka_unit_test(test_unknown_option),
		cmocka_unit_test(test_restart),
		cmocka_unit_test(test_restart_bad),
		cmocka_unit_test(test_restart_delay),
		cmocka_unit_test(test_grace),
		cmocka_unit_test(test_health_interval),
		cmocka_unit_test(test_hang_timeout),
		cmocka_unit_test(test_stack_timeout),
		cmocka_unit_test(test_hang_first),
		cmocka_unit_test(test_site_peer_timeout),
		cmocka_unit_test(test_site_connect_timeout),
		cmocka_unit_test(test_site_state_max),
		cmocka_unit_test(test_site_twice),
		cmocka_unit_test(test_parse_uint),
		cmocka_unit_test(test_bind),
		cmocka_unit_test(test_bind_bad),
		cmocka_unit_test(test_bind_format),
		cmocka_unit_test(test_health),
		cmocka_unit_test(test_health_bad),
		cmocka_unit_test(test_error_truncated),
		cmocka_unit_test(test_parse_str),
		cmocka_unit_test(test_parse_str_bad),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_health_survives_format),
		cmocka_unit_test(test_overlay),
		cmocka_unit_test(test_site_init),
		cmocka_unit_test(test_site_keys),
		cmocka_unit_test(test_site_example),
		cmocka_unit_test(test_site_bad),
		cmocka_unit_test(test_spares),
		cmocka_unit_test(test_output_dir),
		cmocka_unit_test(test_warm),
		cmocka_unit_test(test_slow_opts),
		cmocka_unit_test(test_sweep),
		cmocka_unit_test(test_site_unknown),
		cmocka_unit_test(test_site_default_restart_cap),
		cmocka_unit_test(test_resolve_site_defaults),
		cmocka_unit_test(test_resolve_layers),
		cmocka_unit_test(test_resolve_cap),
		cmocka_unit_test(test_resolve_no_count),
		cmocka_unit_test(test_resolve_health),
		cmocka_unit_test(test_resolve_again),
		cmocka_unit_test(test_resolve_again_long),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
