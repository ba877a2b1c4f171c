/* Times procmgr's built-in health checks (scripts excluded) on this node,
 * check by check and all together, next to the same checks done the way
 * shell-based node health checkers do them (awk, df, cat), in one run.
 *
 *   bench_health [-n ITERATIONS] [-b BASELINE_ITERATIONS]
 *
 * Prints min / median / max in milliseconds. */
#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/checkspec.h"
#include "health/health.h"

extern char **environ;

#define MAX_ROWS 8

struct row {
	const char *label;
	char spec[512];   /* procmgr check list */
	char shell[512];  /* the baseline's command, "" for none */
};

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void stats(double *v, int n, char *buf, size_t len)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	snprintf(buf, len, "%7.3f %7.3f %7.3f", v[0], v[n / 2], v[n - 1]);
}

/* One run of the baseline: sh -c CMD, output discarded. */
static int shell_once(const char *cmd)
{
	posix_spawn_file_actions_t fa;
	char *const argv[] = { "sh", "-c", (char *)cmd, NULL };
	pid_t pid;
	int st, rc;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	rc = posix_spawn(&pid, "/bin/sh", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc)
		return -1;
	return waitpid(pid, &st, 0) == pid ? 0 : -1;
}

/* Every interface of this machine, '+'-joined: what "nic:LIST" would name. */
static void all_interfaces(char *buf, size_t len)
{
	DIR *d = opendir("/sys/class/net");
	struct dirent *e;
	size_t used = 0;

	buf[0] = '\0';
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.' || used + strlen(e->d_name) + 2 >= len)
			continue;
		used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? "+" : "", e->d_name);
	}
	if (d)
		closedir(d);
}

int main(int argc, char **argv)
{
	struct row rows[MAX_ROWS];
	int nrows = 0, iters = 1000, biters = 200, opt, i, k;
	char ifaces[400], err[512];
	double *t = NULL;

	while ((opt = getopt(argc, argv, "n:b:")) != -1) {
		if (opt == 'n')
			iters = atoi(optarg);
		else if (opt == 'b')
			biters = atoi(optarg);
		else {
			fprintf(stderr, "usage: %s [-n ITERATIONS] [-b BASELINE_ITERATIONS]\n", argv[0]);
			return 2;
		}
	}
	if (iters < 1 || biters < 1) {
		fprintf(stderr, "%s: iterations must be at least 1\n", argv[0]);
		return 2;
	}
	all_interfaces(ifaces, sizeof(ifaces));
	rows[nrows++] = (struct row){ "mem", "mem",
		"awk '/MemAvailable/ {print $2}' /proc/meminfo" };
	rows[nrows++] = (struct row){ "disk:/tmp", "disk:/tmp", "df -P /tmp" };
	rows[nrows++] = (struct row){ "nic (all IB)", "nic",
		"cat /sys/class/infiniband/*/ports/*/state 2>/dev/null; true" };
	rows[nrows] = (struct row){ "nic:<all ifaces>", "", "cat /sys/class/net/*/operstate" };
	snprintf(rows[nrows++].spec, sizeof(rows[0].spec), "nic:%s", ifaces);
	if (pm_health_nvml_loadable(NULL))
		rows[nrows++] = (struct row){ "gpu", "gpu", "nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER" };
	rows[nrows] = (struct row){ "all (one run)", "", "" };
	for (i = 0; i < nrows; i++) {
		size_t l = strlen(rows[nrows].spec), m = strlen(rows[nrows].shell);
		snprintf(rows[nrows].spec + l, sizeof(rows[0].spec) - l, "%s%s", l ? "," : "",
			 rows[i].spec);
		snprintf(rows[nrows].shell + m, sizeof(rows[0].shell) - m, "%s%s", m ? "; " : "",
			 rows[i].shell);
	}
	nrows++;

	t = calloc((size_t)(iters > biters ? iters : biters), sizeof(*t));
	if (!t)
		return 1;
	printf("procmgr health checks: %d iterations; shell baseline: %d iterations\n",
	       iters, biters);
	printf("%-18s %-8s %-25s %-25s\n", "check", "status", "procmgr min/med/max ms",
	       "shell min/med/max ms");
	for (i = 0; i < nrows; i++) {
		struct pm_check c[MAX_ROWS];
		struct pm_health_result r[MAX_ROWS];
		struct pm_health *h;
		char a[64], b[64] = "      -", status[16] = "ok";
		int n = pm_checks_parse(rows[i].spec, c, MAX_ROWS, err, sizeof(err));

		if (n < 0 || pm_health_open(&h, NULL, err, sizeof(err))) {
			fprintf(stderr, "%s: %s\n", rows[i].label, err);
			return 1;
		}
		/* One run first: NVML's first init and event registration are
		 * paid once per procmgrd, not per check. */
		pm_health_run(h, c, n, r);
		for (k = 0; k < iters; k++) {
			double t0 = now_ms();
			if (pm_health_run(h, c, n, r))
				snprintf(status, sizeof(status), "%s", n == 1 ?
					 pm_health_status_name(r[0].status) : "not ok");
			t[k] = now_ms() - t0;
		}
		pm_health_close(h);
		stats(t, iters, a, sizeof(a));
		if (rows[i].shell[0]) {
			for (k = 0; k < biters; k++) {
				double t0 = now_ms();
				if (shell_once(rows[i].shell))
					break;
				t[k] = now_ms() - t0;
			}
			if (k == biters)
				stats(t, biters, b, sizeof(b));
		}
		printf("%-18s %-8s %-25s %-25s\n", rows[i].label, status, a, b);
	}
	/* What a fresh procmgrd pays before launch: open, run all, close. */
	{
		struct pm_check c[MAX_ROWS];
		struct pm_health_result r[MAX_ROWS];
		char a[64];
		int n = pm_checks_parse(rows[nrows - 1].spec, c, MAX_ROWS, err, sizeof(err));
		for (k = 0; k < iters; k++) {
			struct pm_health *h;
			double t0 = now_ms();
			if (pm_health_open(&h, NULL, err, sizeof(err)))
				return 1;
			pm_health_run(h, c, n, r);
			pm_health_close(h);
			t[k] = now_ms() - t0;
		}
		stats(t, iters, a, sizeof(a));
		printf("%-18s %-8s %-25s %-25s\n", "all, cold", "", a, "");
	}
	printf("all checks: %s\n", rows[nrows - 1].spec);
	free(t);
	return 0;
}
