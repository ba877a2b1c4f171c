/* Health checks against fixture trees (tests/data/health), the NVML test
 * double (tests/nvml) and scripts written by each test. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include "cmocka_compat.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/checkspec.h"
#include "cli/cmd.h"
#include "health/health.h"

/* Formats into an array; a test's path that does not fit is a test bug. */
#define FMT(buf, ...) \
	assert_true(snprintf((buf), sizeof(buf), __VA_ARGS__) < (int)sizeof(buf))

static char data[PATH_MAX];     /* tests/data/health */
static char fake_lib[PATH_MAX]; /* the NVML double */
static char tmpdir[PATH_MAX];   /* this run's scratch directory */
static char nvml_cfg[PATH_MAX]; /* the double's configuration file */

static const char *root(const char *fixture)
{
	static char buf[PATH_MAX];
	FMT(buf, "%s/%s", data, fixture);
	return buf;
}

/* Runs one check (as a user would write it) with ctx; returns its result. */
static struct pm_health_result run1(const struct pm_health_ctx *ctx, const char *spec)
{
	struct pm_check c;
	struct pm_health_result r;
	struct pm_health *h;
	char err[512];

	assert_int_equal(pm_check_parse(spec, &c, err, sizeof(err)), 0);
	assert_int_equal(pm_health_open(&h, ctx, err, sizeof(err)), 0);
	pm_health_run(h, &c, 1, &r);
	pm_health_close(h);
	return r;
}

static struct pm_health_result run_in(const char *fixture, const char *spec)
{
	struct pm_health_ctx ctx = { .sysroot = root(fixture) };
	return run1(&ctx, spec);
}

#define assert_result(r, st, text) do { \
	assert_string_equal(pm_health_status_name((r).status), pm_health_status_name(st)); \
	if (!strstr((r).reason, (text))) \
		fail_msg("reason '%s' lacks '%s'", (r).reason, (text)); \
} while (0)

/* ---- mem ---- */

static void test_mem(void **state)
{
	(void)state;
	assert_result(run_in("ok", "mem"), PM_HEALTH_OK, "57.2 GiB available (min 1.0 GiB)");
	assert_result(run_in("ok", "mem:100G"), PM_HEALTH_FAIL, "below 100.0 GiB");
	assert_result(run_in("low_mem", "mem"), PM_HEALTH_FAIL,
		      "only 512.0 MiB of memory available, below 1.0 GiB");
	assert_result(run_in("low_mem", "mem:256M"), PM_HEALTH_OK, "512.0 MiB available");
	assert_result(run_in("no_memavail", "mem"), PM_HEALTH_ERROR, "no MemAvailable line");
	assert_result(run_in("no-such-root", "mem"), PM_HEALTH_ERROR,
		      "/no-such-root/proc/meminfo: No such file or directory");
}

static void test_mem_real(void **state)
{
	struct pm_health_ctx ctx = { 0 };
	(void)state;
	/* This machine: whatever it has, 1 KiB is available. */
	assert_result(run1(&ctx, "mem:1K"), PM_HEALTH_OK, "available");
}

/* ---- disk ---- */

static void test_disk_threshold(void **state)
{
	struct pm_health_ctx ctx = { .sysroot = "/nonexistent" };
	struct statvfs sv;
	char spec[PATH_MAX + 64];
	unsigned long long avail;
	(void)state;

	assert_int_equal(statvfs(tmpdir, &sv), 0);
	avail = (unsigned long long)sv.f_bavail * sv.f_frsize;
	/* PATH is not under sysroot: a bogus sysroot changes nothing. */
	FMT(spec, "disk:%s:1K", tmpdir);
	assert_result(run1(&ctx, spec), PM_HEALTH_OK, "free on");
	/* One GiB more than is free can never be satisfied. */
	FMT(spec, "disk:%s:%llu", tmpdir, avail + (1ull << 30));
	assert_result(run1(&ctx, spec), PM_HEALTH_FAIL, "below");
	assert_result(run1(&ctx, "disk:/no/such/dir"), PM_HEALTH_ERROR,
		      "cannot statvfs /no/such/dir: No such file or directory");
}

static void test_disk_full(void **state)
{
	char mnt[PATH_MAX], file[PATH_MAX + 16], spec[PATH_MAX + 64], buf[65536];
	struct pm_health_ctx ctx = { 0 };
	struct pm_health_result r;
	int fd;
	(void)state;

	if (geteuid() != 0) {
		print_message("skipped: mounting a small tmpfs needs root\n");
		skip();
	}
	FMT(mnt, "%s/full", tmpdir);
	assert_int_equal(mkdir(mnt, 0755), 0);
	if (mount("tmpfs", mnt, "tmpfs", 0, "size=256k")) {
		print_message("skipped: cannot mount a tmpfs here: %s\n", strerror(errno));
		skip();
	}
	FMT(spec, "disk:%s:64K", mnt);
	r = run1(&ctx, spec);
	assert_result(r, PM_HEALTH_OK, "256.0 KiB free");
	FMT(file, "%s/fill", mnt);
	fd = open(file, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	memset(buf, 'x', sizeof(buf));
	while (write(fd, buf, sizeof(buf)) > 0)
		;
	assert_int_equal(errno, ENOSPC);
	close(fd);
	r = run1(&ctx, spec);
	umount2(mnt, MNT_DETACH);
	rmdir(mnt);
	assert_result(r, PM_HEALTH_FAIL, "only 0 B free on");
}

/* ---- nic ---- */

static void test_nic_ib(void **state)
{
	(void)state;
	assert_result(run_in("ok", "nic"), PM_HEALTH_OK,
		      "2 InfiniBand device(s) (2 port(s) ACTIVE), 0 interface(s) up");
	assert_result(run_in("ib_down", "nic"), PM_HEALTH_FAIL,
		      "InfiniBand mlx5_1 port 1 is DOWN, not ACTIVE");
	assert_result(run_in("ib_down", "nic:mlx5_0"), PM_HEALTH_OK, "1 InfiniBand device(s)");
	assert_result(run_in("ib_broken", "nic"), PM_HEALTH_ERROR,
		      "cannot read the state of mlx5_1 port 1");
	/* An unreadable HCA does not hide a DOWN one: FAIL wins. */
	assert_result(run_in("ib_down", "nic:mlx5_1+eth0"), PM_HEALTH_FAIL, "mlx5_1 port 1 is DOWN");
}

static void test_nic_net(void **state)
{
	(void)state;
	assert_result(run_in("ok", "nic:eth0+ib0+lo"), PM_HEALTH_OK, "3 interface(s) up");
	assert_result(run_in("net_down", "nic:eth0"), PM_HEALTH_FAIL,
		      "interface eth0 is down, not up");
	assert_result(run_in("net_down", "nic:lo"), PM_HEALTH_OK, "1 interface(s) up");
	assert_result(run_in("net_down", "nic:lo+tun0"), PM_HEALTH_FAIL,
		      "interface tun0 is unknown, not up");
	assert_result(run_in("ok", "nic:mlx9"), PM_HEALTH_FAIL,
		      "no InfiniBand device or interface named mlx9");
	/* No IB and nothing named: nothing to check, said so. */
	assert_result(run_in("net_down", "nic"), PM_HEALTH_OK, "nothing to check");
}

static void test_nic_ctx(void **state)
{
	struct pm_health_ctx ctx = { .sysroot = root("ib_down"), .nics = "mlx5_0+eth0" };
	(void)state;
	/* The step's NICs, not every HCA: the DOWN mlx5_1 is not ours. */
	assert_result(run1(&ctx, "nic"), PM_HEALTH_OK, "1 InfiniBand device(s)");
	ctx.nics = "mlx5_1";
	assert_result(run1(&ctx, "nic"), PM_HEALTH_FAIL, "mlx5_1 port 1 is DOWN");
	/* A list in the check wins over the step's. */
	assert_result(run1(&ctx, "nic:mlx5_0"), PM_HEALTH_OK, "1 InfiniBand device(s)");
}

/* ---- gpu ---- */

static void nvml_write(const char *text)
{
	FILE *f = fopen(nvml_cfg, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static struct pm_health_result gpu1(const char *cfg, const char *spec)
{
	struct pm_health_ctx ctx = { .nvml_lib = fake_lib };
	nvml_write(cfg);
	return run1(&ctx, spec);
}

static void test_gpu_no_nvml(void **state)
{
	struct pm_health_ctx ctx = { .nvml_lib = "/nonexistent/libnvidia-ml.so.1" };
	(void)state;
	assert_result(run1(&ctx, "gpu"), PM_HEALTH_ERROR, "NVML not available");
	assert_false(pm_health_nvml_loadable(ctx.nvml_lib));
	assert_true(pm_health_nvml_loadable(fake_lib));
	ctx.nvml_lib = "libc.so.6";
	assert_result(run1(&ctx, "gpu"), PM_HEALTH_ERROR,
		      "libc.so.6 is not a usable NVML library (it lacks nvmlInit_v2)");
}

static void test_gpu_ok(void **state)
{
	(void)state;
	assert_result(gpu1("count=4\n", "gpu"), PM_HEALTH_OK, "4 GPU(s) responsive");
	assert_result(gpu1("count=4\n", "gpu:4"), PM_HEALTH_OK, "4 GPU(s) responsive");
	/* Features a GPU lacks are skipped, not failed. */
	assert_result(gpu1("count=2\ngpu0.ecc=unsupported\ngpu0.retired_pending=unsupported\n"
			   "gpu0.remap_pending=unsupported\ngpu1.events=unsupported\n", "gpu:2"),
		      PM_HEALTH_OK, "2 GPU(s) responsive");
	assert_result(gpu1("count=2\ngpu0.events=unsupported\ngpu1.events=unsupported\n", "gpu"),
		      PM_HEALTH_OK, "(XID events not watched)");
}

static void test_gpu_fail(void **state)
{
	(void)state;
	assert_result(gpu1("count=2\n", "gpu:4"), PM_HEALTH_FAIL,
		      "2 responsive GPU(s), expected 4");
	assert_result(gpu1("count=0\n", "gpu"), PM_HEALTH_FAIL, "no responsive GPU (NVML sees 0)");
	assert_result(gpu1("count=4\ngpu1.lost=1\n", "gpu"), PM_HEALTH_FAIL,
		      "GPU 1 not responding: GPU is lost");
	assert_result(gpu1("count=4\ngpu3.handle=15\n", "gpu"), PM_HEALTH_FAIL,
		      "GPU 3: GPU is lost");
	assert_result(gpu1("count=4\ngpu2.ecc=3\n", "gpu"), PM_HEALTH_FAIL,
		      "GPU 2: 3 uncorrectable ECC error(s)");
	assert_result(gpu1("count=4\ngpu0.retired_pending=1\n", "gpu"), PM_HEALTH_FAIL,
		      "GPU 0: page retirement pending");
	assert_result(gpu1("count=4\ngpu1.remap_pending=1\n", "gpu"), PM_HEALTH_FAIL,
		      "GPU 1: row remapping pending");
	assert_result(gpu1("count=4\ngpu1.remap_failed=1\n", "gpu"), PM_HEALTH_FAIL,
		      "GPU 1: row remapping failed");
	/* Several problems: the first is the reason, the rest are counted. */
	assert_result(gpu1("count=4\ngpu0.ecc=1\ngpu2.remap_pending=1\n", "gpu:4"),
		      PM_HEALTH_FAIL, "GPU 0: 1 uncorrectable ECC error(s) since the driver "
		      "loaded (and 1 more problem(s))");
	assert_result(gpu1("count=4\ninit=9\n", "gpu"), PM_HEALTH_ERROR,
		      "nvmlInit failed: Driver Not Loaded");
}

static void test_gpu_xid_new_only_once(void **state)
{
	struct pm_health_ctx ctx = { .nvml_lib = fake_lib };
	struct pm_health_result r;
	struct pm_health *h;
	struct pm_check c;
	char err[512];
	(void)state;

	/* An XID from before procmgr watched is not news. */
	nvml_write("count=2\nxid=0:13\n");
	assert_int_equal(pm_check_parse("gpu:2", &c, err, sizeof(err)), 0);
	assert_int_equal(pm_health_open(&h, &ctx, err, sizeof(err)), 0);
	assert_int_equal(pm_health_run(h, &c, 1, &r), 0);
	assert_result(r, PM_HEALTH_OK, "2 GPU(s) responsive");

	nvml_write("count=2\nxid=0:13,1:79\n");
	assert_int_equal(pm_health_run(h, &c, 1, &r), 1);
	assert_result(r, PM_HEALTH_FAIL, "GPU 1: XID 79");

	/* Reported once: the next run is clean again. */
	assert_int_equal(pm_health_run(h, &c, 1, &r), 0);
	assert_result(r, PM_HEALTH_OK, "2 GPU(s) responsive");

	nvml_write("count=2\nxid=0:13,1:79,0:48,0:63\n");
	assert_int_equal(pm_health_run(h, &c, 1, &r), 1);
	assert_result(r, PM_HEALTH_FAIL, "GPU 0: XID 48 (and 1 more problem(s))");
	pm_health_close(h);
}

/* ---- script ---- */

static void write_script(const char *name, const char *body, char *path, size_t len)
{
	FILE *f;
	assert_true(snprintf(path, len, "%s/%s", tmpdir, name) < (int)len);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\n%s", body);
	fclose(f);
	assert_int_equal(chmod(path, 0755), 0);
}

static struct pm_health_result script1(const char *body, unsigned timeout_ms)
{
	static int seq;
	struct pm_health_ctx ctx = { .timeout_ms = timeout_ms };
	char path[PATH_MAX], name[32], spec[PATH_MAX + 16];

	FMT(name, "check%d.sh", ++seq);
	write_script(name, body, path, sizeof(path));
	FMT(spec, "script:%s", path);
	return run1(&ctx, spec);
}

static void test_script_results(void **state)
{
	(void)state;
	assert_result(script1("echo all good\nexit 0\n", 0), PM_HEALTH_OK, "all good");
	assert_result(script1("exit 0\n", 0), PM_HEALTH_OK, "exit 0");
	/* NHC style: the first non-empty line, from stdout or stderr. */
	assert_result(script1("echo\necho 'fan 3 failed' >&2\necho more\nexit 1\n", 0),
		      PM_HEALTH_FAIL, "fan 3 failed");
	assert_result(script1("exit 3\n", 0), PM_HEALTH_FAIL,
		      "exited with status 3 and no message");
	assert_result(script1("kill -SEGV $$\n", 0), PM_HEALTH_FAIL, "killed by signal 11");
	/* stdin is /dev/null: cat ends at once, and reads nothing. */
	assert_result(script1("x=$(cat)\necho \"stdin:[$x]\"\nexit 1\n", 5000),
		      PM_HEALTH_FAIL, "stdin:[]");
	/* A long line is cut, never a second line added. */
	{
		struct pm_health_result r = script1(
			"printf 'x%.0s' $(seq 1 1000); printf '\\nsecond\\n'; exit 1\n", 0);
		assert_int_equal(r.status, PM_HEALTH_FAIL);
		assert_int_equal(strlen(r.reason), sizeof(r.reason) - 1);
		assert_null(strstr(r.reason, "second"));
	}
}

static void test_script_error(void **state)
{
	struct pm_health_ctx ctx = { 0 };
	char path[PATH_MAX], spec[PATH_MAX + 64], marker[PATH_MAX];
	(void)state;

	assert_result(run1(&ctx, "script:/no/such/check"), PM_HEALTH_ERROR,
		      "cannot run /no/such/check: No such file or directory");
	write_script("noexec.sh", "exit 0\n", path, sizeof(path));
	assert_int_equal(chmod(path, 0644), 0);
	FMT(spec, "script:%s", path);
	/* Even root cannot exec a file without any x bit. */
	assert_result(run1(&ctx, spec), PM_HEALTH_ERROR, "Permission denied");
	/* No shell: a path with shell syntax is a file name, nothing else. */
	FMT(marker, "%s/injected", tmpdir);
	FMT(spec, "script:/bin/true;>%s", marker); /* a shell would create it */
	assert_result(run1(&ctx, spec), PM_HEALTH_ERROR, "No such file or directory");
	assert_int_equal(access(marker, F_OK), -1);
}

/* Reads "LEADER CHILD" written by a test script. */
static void read_pids(const char *file, pid_t *leader, pid_t *child)
{
	FILE *f = fopen(file, "r");
	int a = 0, b = 0;
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%d %d", &a, &b), 2);
	fclose(f);
	*leader = a;
	*child = b;
}

/* The test process is a child subreaper (see main): what a script leaves
 * behind is reparented here, and waitpid says how it ended. */
static void assert_killed_and_gone(pid_t leader, pid_t child)
{
	int st = 0;
	alarm(20); /* a survivor would hang waitpid: fail, don't hang */
	assert_int_equal(waitpid(child, &st, 0), child);
	alarm(0);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGKILL);
	/* The script itself was reaped by the check. */
	assert_int_equal(kill(leader, 0), -1);
	assert_int_equal(errno, ESRCH);
}

static void test_script_timeout(void **state)
{
	char pids[PATH_MAX], body[PATH_MAX + 256];
	struct pm_health_result r;
	pid_t leader, child;
	(void)state;

	FMT(pids, "%s/timeout.pids", tmpdir);
	snprintf(body, sizeof(body),
		 "sleep 300 &\necho \"$$ $!\" > %s\necho checking fabric\nexec sleep 300\n", pids);
	alarm(30); /* a check that never kills would hang here: fail instead */
	r = script1(body, 1500);
	alarm(0);
	assert_result(r, PM_HEALTH_FAIL, "timed out after 1.5 s; last said: checking fabric");
	assert_int_in_range(r.elapsed_ms, 1500, 1500 + 5000);
	read_pids(pids, &leader, &child);
	assert_killed_and_gone(leader, child);
}

static void test_script_leftovers(void **state)
{
	char pids[PATH_MAX], body[PATH_MAX + 256];
	pid_t leader, child;
	(void)state;

	/* A healthy script that forgets a background job: the job goes too. */
	FMT(pids, "%s/left.pids", tmpdir);
	FMT(body, "sleep 300 &\necho \"$$ $!\" > %s\nexit 0\n", pids);
	assert_result(script1(body, 10000), PM_HEALTH_OK, "exit 0");
	read_pids(pids, &leader, &child);
	assert_killed_and_gone(leader, child);
}

/* ---- several checks, API ---- */

static void test_run_many(void **state)
{
	struct pm_health_ctx ctx = { .sysroot = root("ib_down"), .nvml_lib = "/nonexistent.so" };
	struct pm_check c[5];
	struct pm_health_result r[5];
	struct pm_health *h;
	char err[512], list[PATH_MAX + 64];
	(void)state;

	FMT(list, "mem:256M,disk:%s:1K,nic,gpu:8,mem", tmpdir);
	assert_int_equal(pm_checks_parse(list, c, 5, err, sizeof(err)), 5);
	assert_int_equal(pm_health_open(&h, &ctx, err, sizeof(err)), 0);
	assert_int_equal(pm_health_run(h, c, 5, r), 2);
	pm_health_close(h);
	assert_string_equal(r[0].check, "mem:256M");
	assert_int_equal(r[0].status, PM_HEALTH_OK);
	assert_true(!strncmp(r[1].check, "disk:", 5) && strstr(r[1].check, ":1K"));
	assert_int_equal(r[1].status, PM_HEALTH_OK);
	assert_string_equal(r[2].check, "nic");
	assert_int_equal(r[2].status, PM_HEALTH_FAIL);
	assert_string_equal(r[3].check, "gpu:8");
	assert_int_equal(r[3].status, PM_HEALTH_ERROR);
	assert_string_equal(r[4].check, "mem");
	assert_int_equal(r[4].status, PM_HEALTH_OK);
}

static void test_open_errors(void **state)
{
	struct pm_health_ctx ctx = { .sysroot = "relative/root" };
	struct pm_health *h = (struct pm_health *)&ctx;
	char err[512] = "";
	(void)state;

	assert_int_equal(pm_health_open(&h, &ctx, err, sizeof(err)), -1);
	assert_null(h);
	assert_non_null(strstr(err, "sysroot 'relative/root' is not an absolute path"));
	/* NULL ctx: all defaults. */
	assert_int_equal(pm_health_open(&h, NULL, err, sizeof(err)), 0);
	pm_health_close(h);
	pm_health_close(NULL);
}

/* ---- procmgr health ---- */

/* Runs the command with stdout and stderr captured into out. */
static int cli(char *out, size_t len, int argc, ...)
{
	char *argv[16], tmpl[PATH_MAX];
	va_list ap;
	int i, rc, fd, saved1, saved2;
	ssize_t k;

	va_start(ap, argc);
	for (i = 0; i < argc && i < 15; i++)
		argv[i] = va_arg(ap, char *);
	va_end(ap);
	argv[i] = NULL;
	FMT(tmpl, "%s/cli.XXXXXX", tmpdir);
	fd = mkstemp(tmpl);
	assert_true(fd >= 0);
	fflush(stdout);
	fflush(stderr);
	saved1 = dup(1);
	saved2 = dup(2);
	dup2(fd, 1);
	dup2(fd, 2);
	rc = pm_cmd_health(argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(saved1, 1);
	dup2(saved2, 2);
	close(saved1);
	close(saved2);
	k = pread(fd, out, len - 1, 0);
	out[k > 0 ? k : 0] = '\0';
	close(fd);
	unlink(tmpl);
	return rc;
}

#define assert_contains(hay, needle) do { \
	if (!strstr((hay), (needle))) \
		fail_msg("output '%s' lacks '%s'", (hay), (needle)); \
} while (0)

static void test_cli_usage(void **state)
{
	char out[8192];
	(void)state;
	assert_int_equal(cli(out, sizeof(out), 3, "health", "--timeout", "0"), 2);
	assert_contains(out, "--timeout '0' is not valid; allowed: a number of seconds");
	assert_int_equal(cli(out, sizeof(out), 3, "health", "--timeout", "5x"), 2);
	assert_int_equal(cli(out, sizeof(out), 3, "health", "--checks", "cpu"), 2);
	assert_contains(out, "health check 'cpu': unknown check; allowed: gpu[:COUNT]");
	assert_int_equal(cli(out, sizeof(out), 3, "health", "--checks", ""), 2);
	assert_contains(out, "--checks is empty");
	assert_int_equal(cli(out, sizeof(out), 2, "health", "--bogus"), 2);
	assert_contains(out, "unknown option '--bogus'");
	assert_int_equal(cli(out, sizeof(out), 2, "health", "--checks"), 2);
	assert_contains(out, "--checks needs a value");
	assert_int_equal(cli(out, sizeof(out), 2, "health", "extra"), 2);
	assert_contains(out, "unexpected argument 'extra'");
	assert_int_equal(cli(out, sizeof(out), 2, "health", "--help"), 0);
	assert_contains(out, "usage: procmgr health");
}

static void test_cli_run(void **state)
{
	char out[8192];
	(void)state;

	setenv("PROCMGR_NVML_LIB", "/nonexistent/libnvidia-ml.so.1", 1);
	setenv("PROCMGR_SYSROOT", root("ok"), 1);
	/* Default checks where NVML cannot be loaded: mem and nic. */
	assert_int_equal(cli(out, sizeof(out), 1, "health"), 0);
	assert_contains(out, "ok     mem  ");
	assert_contains(out, "ok     nic  ");
	assert_null(strstr(out, "gpu"));

	setenv("PROCMGR_SYSROOT", root("ib_down"), 1);
	assert_int_equal(cli(out, sizeof(out), 4, "health", "--checks", "mem,nic", "--json"), 1);
	assert_contains(out, "\"ok\":false,\"checks\":[{\"check\":\"mem\",\"status\":\"ok\"");
	assert_contains(out, "{\"check\":\"nic\",\"status\":\"fail\",\"reason\":"
			"\"InfiniBand mlx5_1 port 1 is DOWN, not ACTIVE\",\"ms\":");

	/* Where NVML loads, gpu is a default check too. */
	setenv("PROCMGR_NVML_LIB", fake_lib, 1);
	nvml_write("count=1\ngpu0.ecc=2\n");
	setenv("PROCMGR_SYSROOT", root("ok"), 1);
	assert_int_equal(cli(out, sizeof(out), 1, "health"), 1);
	assert_contains(out, "fail   gpu  ");
	assert_contains(out, "GPU 0: 2 uncorrectable ECC error(s)");
	unsetenv("PROCMGR_SYSROOT");
	unsetenv("PROCMGR_NVML_LIB");
}

static void test_cli_json_escape(void **state)
{
	char out[8192], path[PATH_MAX], arg[PATH_MAX + 16];
	(void)state;
	write_script("quote.sh", "echo 'disk \"scratch\" is \\\\ bad'\nexit 1\n", path, sizeof(path));
	FMT(arg, "script:%s", path);
	assert_int_equal(cli(out, sizeof(out), 4, "health", "--checks", arg, "--json"), 1);
	assert_contains(out, "\"reason\":\"disk \\\"scratch\\\" is \\\\ bad\"");
}

static int setup(void **state)
{
	const char *top = getenv("top_srcdir");
	char self[PATH_MAX], *slash;
	ssize_t k;
	(void)state;

	FMT(data, "%s/tests/data/health", top ? top : ".");
	/* The double is built next to this test: tests/nvml/.libs/. */
	k = readlink("/proc/self/exe", self, sizeof(self) - 1);
	assert_true(k > 0);
	self[k] = '\0';
	slash = strrchr(self, '/');
	*slash = '\0';
	if (!strcmp(slash - 6, "/.libs"))
		*(slash - 6) = '\0'; /* a libtool wrapper's real binary */
	FMT(fake_lib, "%s/../nvml/.libs/libfakenvml.so", self);
	FMT(tmpdir, "/tmp/pm-test-health.XXXXXX");
	assert_non_null(mkdtemp(tmpdir));
	FMT(nvml_cfg, "%s/nvml.conf", tmpdir);
	setenv("PROCMGR_FAKE_NVML", nvml_cfg, 1);
	/* Orphans of check scripts come here, where tests can see them die. */
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];
	(void)state;
	FMT(cmd, "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mem),
		cmocka_unit_test(test_mem_real),
		cmocka_unit_test(test_disk_threshold),
		cmocka_unit_test(test_disk_full),
		cmocka_unit_test(test_nic_ib),
		cmocka_unit_test(test_nic_net),
		cmocka_unit_test(test_nic_ctx),
		cmocka_unit_test(test_gpu_no_nvml),
		cmocka_unit_test(test_gpu_ok),
		cmocka_unit_test(test_gpu_fail),
		cmocka_unit_test(test_gpu_xid_new_only_once),
		cmocka_unit_test(test_script_results),
		cmocka_unit_test(test_script_error),
		cmocka_unit_test(test_script_timeout),
		cmocka_unit_test(test_script_leftovers),
		cmocka_unit_test(test_run_many),
		cmocka_unit_test(test_open_errors),
		cmocka_unit_test(test_cli_usage),
		cmocka_unit_test(test_cli_run),
		cmocka_unit_test(test_cli_json_escape),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
