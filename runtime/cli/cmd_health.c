/* procmgr health: run node health checks here, by hand. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "common/contract.h"
#include "common/text.h"
#include "health/health.h"

#define PM_HEALTH_MAX_CHECKS 64

static void usage(FILE *f)
{
	fprintf(f,
		"usage: procmgr health [--checks LIST] [--timeout SECONDS] [--json]\n"
		"  --checks LIST      comma-separated checks: " PM_CHECK_GRAMMAR "\n"
		"                     default: mem,nic, and gpu where NVML can be loaded\n"
		"  --timeout SECONDS  how long a script may run before it is killed (default %u)\n"
		"  --json             one JSON object instead of one line per check\n"
		"exit status: 0 all ok, 1 some check failed or could not run, 2 usage error\n"
		"environment: PROCMGR_SYSROOT (read /proc and /sys under it),\n"
		"             PROCMGR_NVML_LIB (NVML library, default " PM_HEALTH_DEFAULT_NVML ")\n",
		PM_HEALTH_DEFAULT_TIMEOUT_MS / 1000);
}

static int parse_timeout(const char *s, unsigned *ms)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end || errno || !isfinite(v) || v <= 0 || v > 86400) {
		fprintf(stderr, "procmgr health: --timeout '%s' is not valid; "
			"allowed: a number of seconds greater than 0 and at most 86400 (e.g. 30 or 0.5)\n", s);
		return -1;
	}
	*ms = (unsigned)(v * 1000 + 0.5);
	if (!*ms)
		*ms = 1;
	return 0;
}

static void print_json(const struct pm_health_result *r, int n, int bad)
{
	char host[256] = "";
	int i;

	gethostname(host, sizeof(host) - 1);
	printf("{\"node\":");
	pm_json_print(stdout, host);
	printf(",\"ok\":%s,\"checks\":[", bad ? "false" : "true");
	for (i = 0; i < n; i++) {
		printf("%s{\"check\":", i ? "," : "");
		pm_json_print(stdout, r[i].check);
		printf(",\"status\":\"%s\",\"reason\":", pm_health_status_name(r[i].status));
		pm_json_print(stdout, r[i].reason);
		printf(",\"ms\":%u}", r[i].elapsed_ms);
	}
	printf("]}\n");
}

static void print_text(const struct pm_health_result *r, int n)
{
	int i;

	for (i = 0; i < n; i++)
		printf("%-5s  %-24s %6u ms  %s\n", pm_health_status_name(r[i].status),
		       r[i].check, r[i].elapsed_ms, r[i].reason);
}

int pm_cmd_health(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "checks", required_argument, NULL, 'c' },
		{ "timeout", required_argument, NULL, 't' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct pm_health_ctx ctx = { 0 };
	struct pm_check checks[PM_HEALTH_MAX_CHECKS];
	struct pm_health_result results[PM_HEALTH_MAX_CHECKS];
	const char *list = NULL;
	struct pm_health *h;
	char err[512];
	int json = 0, n, bad, opt;

	ctx.sysroot = getenv(PM_ENV_SYSROOT);
	ctx.nvml_lib = getenv(PM_ENV_NVML_LIB);
	if (ctx.sysroot && !*ctx.sysroot)
		ctx.sysroot = NULL;
	if (ctx.nvml_lib && !*ctx.nvml_lib)
		ctx.nvml_lib = NULL;
	/* Called more than once in one process by the tests. */
	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c': list = optarg; break;
		case 't':
			if (parse_timeout(optarg, &ctx.timeout_ms))
				return 2;
			break;
		case 'j': json = 1; break;
		case 'h': usage(stdout); return 0;
		case ':':
			fprintf(stderr, "procmgr health: %s needs a value\n", argv[optind - 1]);
			usage(stderr);
			return 2;
		default:
			fprintf(stderr, "procmgr health: unknown option '%s'\n", argv[optind - 1]);
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "procmgr health: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (!list)
		list = pm_health_nvml_loadable(ctx.nvml_lib) ? "mem,nic,gpu" : "mem,nic";
	n = pm_checks_parse(list, checks, PM_HEALTH_MAX_CHECKS, err, sizeof(err));
	if (n < 0) {
		fprintf(stderr, "procmgr health: --checks: %s\n", err);
		return 2;
	}
	if (n == 0) {
		fprintf(stderr, "procmgr health: --checks is empty; allowed: %s\n",
			PM_CHECK_GRAMMAR);
		return 2;
	}
	if (pm_health_open(&h, &ctx, err, sizeof(err))) {
		fprintf(stderr, "procmgr health: %s\n", err);
		return 2;
	}
	bad = pm_health_run(h, checks, n, results);
	pm_health_close(h);
	if (json)
		print_json(results, n, bad);
	else
		print_text(results, n);
	fflush(stdout);
	return bad ? 1 : 0;
}
