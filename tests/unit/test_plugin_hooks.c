/* procmgr.so's SPANK hooks in-process outside slurmstepd, Slurm faked
 * (tests/unit/fake_spank.c): the dispatch by context (plugin/procmgr.c),
 * srun's and sbatch's checks and the step's request they export
 * (plugin/local.c), slurmd's load (plugin/slurmd.c), and the job epilog
 * that removes state_dir/JOB (plugin/jobend.c), with the option strings and
 * plugstack.conf lines a user and a site write. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "fake_spank.h"
#include "plugin.h"

/* plugin/drain.c is test_plugin_drain's: here only whether it was asked. */
void pm_drain_maybe(const struct pm_node *n)
{
	(void)n;
}

static char tmp[64];

static int setup(void **state)
{
	(void)state;
	fake_spank_reset();
	unsetenv(PM_ENV_STEP_REQ);
	unsetenv(PM_ENV_JOB_OPTS);
	unsetenv(PM_ENV_SRUN_NODE);
	unsetenv("SLURMD_NODENAME");
	unsetenv("SLURM_MPI_TYPE");
	snprintf(tmp, sizeof(tmp), "/tmp/pm-hooks.XXXXXX");
	assert_non_null(mkdtemp(tmp));
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];
	(void)state;

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	assert_int_equal(system(cmd), 0);
	return 0;
}

/* slurm_spank_init in ctx with the plugstack.conf arguments given. */
static int init(spank_context_t ctx, const char *a0, const char *a1)
{
	char *av[] = { (char *)a0, (char *)a1, NULL };

	fake_spank.ctx = ctx;
	fake_spank.nopts = 0;
	return slurm_spank_init(NULL, a1 ? 2 : a0 ? 1 : 0, av);
}

static void opt(const char *name, const char *arg)
{
	assert_int_equal(fake_spank_option(name, arg, 0), 0);
}

static void said(const char *text)
{
	if (!strstr(fake_spank.error, text))
		fail_msg("error '%s' does not say '%s'", fake_spank.error, text);
}

static void test_options_registered(void **state)
{
	(void)state;
	assert_int_equal(init(S_CTX_LOCAL, NULL, NULL), 0);
	assert_int_equal(fake_spank.nopts, (int)pm_noptdescs);
	assert_string_equal(fake_spank.optnames[0], "procmgr");
	assert_int_equal(fake_spank.opts[0].has_arg, 0);
	assert_string_equal(fake_spank.optnames[1], "procmgr-restart");
	assert_int_equal(fake_spank.opts[1].has_arg, 1);
	assert_int_equal(fake_spank.opts[1].val, 1);
	assert_non_null(fake_spank.opts[1].usage);
	/* A prolog or epilog context registers nothing. */
	assert_int_equal(init(S_CTX_JOB_SCRIPT, NULL, NULL), 0);
	assert_int_equal(fake_spank.nopts, 0);
	/* Slurm refusing one is the command's failure, said. */
	fake_spank.register_fails = 3;
	assert_int_equal(init(S_CTX_LOCAL, NULL, NULL), -1);
	said("cannot register option --procmgr-restart-delay");
	assert_int_equal(fake_spank.nerrors, 1);
}

/* A bad plugstack.conf line: srun fails and says it; slurmstepd keeps it
 * for task_init; slurmd only logs it (its init failing would stop it). */
static void test_bad_site_line(void **state)
{
	(void)state;
	assert_int_equal(init(S_CTX_LOCAL, "state_dir", NULL), -1);
	said("argument 'state_dir' is not key=value");
	said("plugstack.conf");
	assert_int_equal(init(S_CTX_ALLOCATOR, "colour=red", NULL), -1);
	said("unknown key 'colour'");
	assert_int_equal(init(S_CTX_LOCAL, "fanout=2", "fanout=4"), -1);
	said("key 'fanout' given twice");

	fake_spank.nerrors = 0;
	assert_int_equal(init(S_CTX_REMOTE, "ports=9-1", NULL), 0);
	assert_int_equal(fake_spank.nerrors, 1);
	assert_non_null(strstr(pm_g.error, "bad value '9-1' for key 'ports'"));

	fake_spank.nerrors = 0;
	assert_int_equal(init(S_CTX_SLURMD, "drain=maybe", NULL), 0);
	assert_non_null(strstr(fake_spank.info, "procmgr: procmgr " PACKAGE_VERSION " loaded"));
	assert_int_equal(fake_spank.nerrors, 1);
	said("bad value 'maybe' for key 'drain'");
	assert_int_equal(fake_spank.nopts, 0);
	fake_spank.nerrors = 0;
	assert_int_equal(init(S_CTX_SLURMD, "drain=yes", NULL), 0);
	assert_int_equal(fake_spank.nerrors, 0);
}

/* srun refuses a bad value at once; in slurmstepd (a bypass of srun) it
 * is kept for task_init, where the step fails. */
static void test_bad_option(void **state)
{
	(void)state;
	assert_int_equal(init(S_CTX_LOCAL, NULL, NULL), 0);
	assert_int_equal(fake_spank_option("procmgr-restart", "sometimes", 0), -1);
	assert_int_equal(fake_spank.nerrors, 1);
	said("sometimes");
	said("expected never, on-failure[:N] or always[:N]");
	assert_int_equal(init(S_CTX_REMOTE, NULL, NULL), 0);
	assert_int_equal(fake_spank_option("procmgr-spares", "lots", 1), -1);
	assert_int_equal(fake_spank.nerrors, 1);
	assert_non_null(strstr(pm_g.error, "lots"));
}

/* srun: the resolved options go to the step in its environment, with the
 * node srun runs on. */
static void test_step_request(void **state)
{
	const char *req;
	(void)state;

	assert_int_equal(init(S_CTX_LOCAL, "max_restarts=5", NULL), 0);
	opt("procmgr-restart", "on-failure:2");
	opt("procmgr-grace", "3");
	setenv("SLURMD_NODENAME", "node7", 1);
	assert_int_equal(slurm_spank_init_post_opt(NULL, 0, NULL), 0);
	req = getenv(PM_ENV_STEP_REQ);
	assert_non_null(req);
	assert_non_null(strstr(req, "procmgr"));
	assert_non_null(strstr(req, "restart=on-failure:2"));
	assert_non_null(strstr(req, "grace=3"));
	assert_string_equal(getenv(PM_ENV_SRUN_NODE), "node7");
	/* --procmgr-verbose: the step's options shown on srun's stderr. */
	{
		char out[PATH_MAX + 16], text[8192] = "";
		int saved = dup(2), fd;
		FILE *f;

		snprintf(out, sizeof(out), "%s/stderr", tmp);
		fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		assert_true(fd >= 0 && saved >= 0);
		opt("procmgr-verbose", NULL);
		fflush(stderr);
		dup2(fd, 2);
		close(fd);
		assert_int_equal(slurm_spank_init_post_opt(NULL, 0, NULL), 0);
		fflush(stderr);
		dup2(saved, 2);
		close(saved);
		f = fopen(out, "r");
		assert_non_null(f);
		assert_true(fread(text, 1, sizeof(text) - 1, f) > 0);
		fclose(f);
		assert_non_null(strstr(text, "procmgr: step options: procmgr"));
		assert_non_null(strstr(text, "restart=on-failure:2"));
	}
	/* srun off the nodes (a login host): no node named. */
	unsetenv("SLURMD_NODENAME");
	assert_int_equal(slurm_spank_init_post_opt(NULL, 0, NULL), 0);
	assert_null(getenv(PM_ENV_SRUN_NODE));
	assert_int_equal(fake_spank.nerrors, 0);
	/* Everything in srun before the tasks: no --no-kill needed here. */
	assert_int_equal(slurm_spank_local_user_init(NULL, 0, NULL), 0);
	/* The remote hooks do nothing in srun. */
	assert_int_equal(slurm_spank_user_init(NULL, 0, NULL), 0);
	assert_int_equal(slurm_spank_task_init(NULL, 0, NULL), 0);
	assert_int_equal(slurm_spank_task_exit(NULL, 0, NULL), 0);
	assert_int_equal(slurm_spank_exit(NULL, 0, NULL), 0);
}

static void test_over_site_cap(void **state)
{
	(void)state;
	assert_int_equal(init(S_CTX_LOCAL, "max_restarts=1", NULL), 0);
	opt("procmgr-restart", "on-failure:3");
	assert_int_equal(slurm_spank_init_post_opt(NULL, 0, NULL), -1);
	said("asks for more restarts than this site");
	assert_null(getenv(PM_ENV_STEP_REQ));
}

/* Without --procmgr a request left in srun's environment (a batch
 * script's earlier srun) must not reach this step. */
static void test_not_enabled(void **state)
{
	(void)state;
	setenv(PM_ENV_STEP_REQ, "procmgr restart=always", 1);
	assert_int_equal(init(S_CTX_LOCAL, NULL, NULL), 0);
	assert_int_equal(slurm_spank_init_post_opt(NULL, 0, NULL), 0);
	assert_null(getenv(PM_ENV_STEP_REQ));
	assert_int_equal(fake_spank.nerrors, 0);
}

/* The job script's #SBATCH --procmgr-* layer, under srun's own flags. */
static void test_job_layer(void **state)
{
	(void)state;
	setenv(PM_ENV_JOB_OPTS, "procmgr restart=on-failure:1 grace=7s", 1);
	assert_int_equal(init(S_CTX_LOCAL, NULL, NULL), 0);
	opt("procmgr-grace", "2");
	assert_int_equal(slurm_spank_init_post_opt(NULL, 0, NULL), 0);
	assert_non_null(strstr(getenv(PM_ENV_STEP_REQ), "restart=on-failure:1"));
	assert_non_null(strstr(getenv(PM_ENV_STEP_REQ), "grace=2"));
	setenv(PM_ENV_JOB_OPTS, "procmgr restart=bogus", 1);
	assert_int_equal(slurm_spank_init_post_opt(NULL, 0, NULL), -1);
	said(PM_ENV_JOB_OPTS);
	said("bogus");
}

/* Restarts under Slurm's PMIx: refused in post_opt (srun up to 23.x) and
 * in local_user_init (24.x sets SLURM_MPI_TYPE later). */
static void test_mpi(void **state)
{
	(void)state;
	assert_int_equal(init(S_CTX_LOCAL, NULL, NULL), 0);
	opt("procmgr-restart", "on-failure:2");
	setenv("SLURM_MPI_TYPE", "pmix_v4", 1);
	assert_int_equal(slurm_spank_init_post_opt(NULL, 0, NULL), -1);
	said("cannot be used with --mpi=pmix_v4");
	said("PMIx");
	setenv("SLURM_MPI_TYPE", "none", 1);
	assert_int_equal(slurm_spank_init_post_opt(NULL, 0, NULL), 0);
	fake_spank.nerrors = 0;
	setenv("SLURM_MPI_TYPE", "pmi2", 1);
	assert_int_equal(slurm_spank_local_user_init(NULL, 0, NULL), -1);
	said("--mpi=pmi2");
	assert_int_equal(fake_spank.nerrors, 1);
	/* Not srun's: nothing checked. */
	fake_spank.ctx = S_CTX_ALLOCATOR;
	assert_int_equal(slurm_spank_local_user_init(NULL, 0, NULL), 0);
	assert_int_equal(pm_local_mpi(), 0);
}

/* --procmgr-output-dir is made here, as the user, before a step exists. */
static void test_output_dir(void **state)
{
	char dir[PATH_MAX + 16], file[PATH_MAX + 16];
	struct stat st;
	int fd;
	(void)state;

	snprintf(dir, sizeof(dir), "%s/out", tmp);
	assert_int_equal(init(S_CTX_LOCAL, NULL, NULL), 0);
	opt("procmgr-output-dir", dir);
	assert_int_equal(slurm_spank_init_post_opt(NULL, 0, NULL), 0);
	assert_int_equal(stat(dir, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_non_null(strstr(getenv(PM_ENV_STEP_REQ), dir));
	/* Under a file: nothing can be made there, and srun says so. */
	snprintf(file, sizeof(file), "%s/file", tmp);
	fd = open(file, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	close(fd);
	snprintf(dir, sizeof(dir), "%s/file/out", tmp);
	assert_int_equal(init(S_CTX_LOCAL, NULL, NULL), 0);
	opt("procmgr-output-dir", dir);
	assert_int_equal(slurm_spank_init_post_opt(NULL, 0, NULL), -1);
	said("--procmgr-output-dir=");
	said("/file/out");
}

/* salloc and sbatch: the job's layer goes to the shell's environment. */
static void test_allocator(void **state)
{
	char dir[PATH_MAX + 16];
	struct stat st;
	(void)state;

	assert_int_equal(init(S_CTX_ALLOCATOR, NULL, NULL), 0);
	assert_int_equal(slurm_spank_init_post_opt(NULL, 0, NULL), 0);
	assert_null(getenv(PM_ENV_JOB_OPTS));
	snprintf(dir, sizeof(dir), "%s/alloc-out", tmp);
	assert_int_equal(init(S_CTX_ALLOCATOR, NULL, NULL), 0);
	opt("procmgr-restart", "on-failure:1");
	opt("procmgr-output-dir", dir);
	assert_int_equal(slurm_spank_init_post_opt(NULL, 0, NULL), 0);
	assert_non_null(strstr(getenv(PM_ENV_JOB_OPTS), "restart=on-failure:1"));
	assert_null(getenv(PM_ENV_STEP_REQ));
	assert_int_equal(stat(dir, &st), 0);
	/* sbatch's local_user_init is not srun's. */
	assert_int_equal(slurm_spank_local_user_init(NULL, 0, NULL), 0);
	assert_int_equal(fake_spank.nerrors, 0);
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* --procmgr-sweep: the trials file checked in post_opt, as the user, and
 * passed on by its absolute path; checked against the step's size once
 * srun knows it (local_user_init). */
static void test_sweep(void **state)
{
	char file[PATH_MAX + 16], given[PATH_MAX + 16], want[PATH_MAX + 32];
	(void)state;

	snprintf(file, sizeof(file), "%s/trials", tmp);
	put(file, "echo a\necho b\n[big ranks=4] echo c\n");
	snprintf(given, sizeof(given), "%s/./trials", tmp);
	assert_int_equal(init(S_CTX_LOCAL, NULL, NULL), 0);
	opt("procmgr-sweep", given);
	assert_int_equal(slurm_spank_init_post_opt(NULL, 0, NULL), 0);
	snprintf(want, sizeof(want), "sweep=%s", file);
	assert_non_null(strstr(getenv(PM_ENV_STEP_REQ), want));
	assert_int_equal(fake_spank.nerrors, 0);
	/* Uneven tasks: refused before any starts. */
	fake_spank_item(S_JOB_TOTAL_TASK_COUNT, 6);
	fake_spank_item(S_JOB_NNODES, 4);
	assert_int_equal(slurm_spank_local_user_init(NULL, 0, NULL), -1);
	said("same number of tasks on every node (6 tasks on 4 nodes)");
	/* A trial of 4 ranks in a step of 2. */
	fake_spank_item(S_JOB_TOTAL_TASK_COUNT, 2);
	fake_spank_item(S_JOB_NNODES, 1);
	assert_int_equal(slurm_spank_local_user_init(NULL, 0, NULL), -1);
	said("--procmgr-sweep: ");
	fake_spank_item(S_JOB_TOTAL_TASK_COUNT, 4);
	fake_spank.nerrors = 0;
	assert_int_equal(slurm_spank_local_user_init(NULL, 0, NULL), 0);
	assert_int_equal(fake_spank.nerrors, 0);

	/* No such file, an unreadable one, a path with a blank. */
	snprintf(given, sizeof(given), "%s/none", tmp);
	assert_int_equal(init(S_CTX_LOCAL, NULL, NULL), 0);
	opt("procmgr-sweep", given);
	assert_int_equal(slurm_spank_init_post_opt(NULL, 0, NULL), -1);
	said("cannot read the trials file");
	put(file, "[x ranks=oops] echo a\n");
	assert_int_equal(init(S_CTX_LOCAL, NULL, NULL), 0);
	opt("procmgr-sweep", file);
	assert_int_equal(slurm_spank_init_post_opt(NULL, 0, NULL), -1);
	said("--procmgr-sweep: ");
	/* A blank refused by the option's check, or found past a link. */
	snprintf(given, sizeof(given), "%s/two words", tmp);
	put(given, "echo a\n");
	assert_int_equal(init(S_CTX_LOCAL, NULL, NULL), 0);
	assert_int_equal(fake_spank_option("procmgr-sweep", given, 0), -1);
	snprintf(file, sizeof(file), "%s/link", tmp);
	assert_int_equal(symlink(given, file), 0);
	opt("procmgr-sweep", file);
	assert_int_equal(slurm_spank_init_post_opt(NULL, 0, NULL), -1);
	said("must have no blanks");
}

/* ---- the job epilog (jobend.c) ---- */

static void mkdirs(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void mkdirs(const char *fmt, ...)
{
	char path[PATH_MAX], cmd[PATH_MAX + 16];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", path);
	assert_int_equal(system(cmd), 0);
}

static bool there(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static bool there(const char *fmt, ...)
{
	char path[PATH_MAX];
	struct stat st;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	return lstat(path, &st) == 0;
}

static int epilog(uint32_t job, const char *a0, const char *a1)
{
	char *av[] = { (char *)a0, (char *)a1, NULL };

	fake_spank_item(S_JOB_ID, job);
	fake_spank.ctx = S_CTX_JOB_SCRIPT;
	return slurm_spank_job_epilog(NULL, a1 ? 2 : 1, av);
}

/* state_dir/JOB goes at the job's end, links removed and never followed;
 * what the user nested deeper than procmgr goes stays, and is said. */
static void test_epilog_removes(void **state)
{
	char sd[PATH_MAX + 16], path[PATH_MAX + 64], target[PATH_MAX + 16];
	(void)state;

	snprintf(sd, sizeof(sd), "state_dir=%s/sd", tmp);
	mkdirs("%s/sd/42/1.0.run", tmp);
	snprintf(path, sizeof(path), "%s/sd/42/1.0.run/sock", tmp);
	put(path, "x");
	snprintf(path, sizeof(path), "%s/sd/42/1.events", tmp);
	put(path, "x");
	snprintf(target, sizeof(target), "%s/outside", tmp);
	mkdirs("%s", target);
	snprintf(path, sizeof(path), "%s/sd/42/link", tmp);
	assert_int_equal(symlink(target, path), 0);
	snprintf(path, sizeof(path), "%s/keep", target);
	put(path, "mine");
	assert_int_equal(epilog(42, sd, NULL), 0);
	assert_false(there("%s/sd/42", tmp));
	assert_true(there("%s/outside/keep", tmp));
	assert_int_equal(fake_spank.nerrors, 0);

	mkdirs("%s/sd/43/a/b/c/d/e", tmp);
	assert_int_equal(epilog(43, sd, NULL), 0);
	assert_true(there("%s/sd/43/a/b/c/d/e", tmp));
	said("cannot remove");
	said("/sd/43 at the job's end");

	/* Not a directory in the job's place (a link): said, not followed. */
	fake_spank.nerrors = 0;
	snprintf(path, sizeof(path), "%s/sd/44", tmp);
	assert_int_equal(symlink(target, path), 0);
	assert_int_equal(epilog(44, sd, NULL), 0);
	said("cannot remove ");
	said("/sd/44 at the job's end");
	assert_true(there("%s/outside/keep", tmp));

	/* No procmgr step ever ran here, no job id, a bad line: nothing. */
	fake_spank.nerrors = 0;
	snprintf(sd, sizeof(sd), "state_dir=%s/none", tmp);
	assert_int_equal(epilog(44, sd, NULL), 0);
	assert_int_equal(epilog(0, sd, NULL), 0);
	assert_int_equal(fake_spank.nerrors, 0);
	assert_false(there("%s/none", tmp));
	assert_int_equal(epilog(44, "nonsense", NULL), 0);
	said("is not key=value");
}

static void age(const char *path, time_t secs)
{
	struct timespec t[2];

	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[0].tv_sec -= secs;
	t[1] = t[0];
	assert_int_equal(utimensat(AT_FDCWD, path, t, AT_SYMLINK_NOFOLLOW), 0);
}

/* job_dir_keep: the end is marked, and a later job's epilog removes what
 * is due: only under root's marks. */
static void test_epilog_keeps(void **state)
{
	char sd[PATH_MAX + 16], path[PATH_MAX + 64];
	struct stat st;
	(void)state;

	snprintf(sd, sizeof(sd), "state_dir=%s/sd", tmp);
	mkdirs("%s/sd/50", tmp);
	mkdirs("%s/sd/51", tmp);
	mkdirs("%s/sd/52", tmp);
	snprintf(path, sizeof(path), "%s/sd/.51.ended", tmp);
	put(path, "");
	age(path, 7200);
	snprintf(path, sizeof(path), "%s/sd/.52.ended", tmp);
	put(path, "");
	age(path, 7200);
	if (geteuid() == 0)
		assert_int_equal(chown(path, 65534, 65534), 0);
	snprintf(path, sizeof(path), "%s/sd/.5x.ended", tmp);
	put(path, "");
	age(path, 7200);

	assert_int_equal(epilog(50, sd, "job_dir_keep=1h"), 0);
	assert_true(there("%s/sd/50", tmp));
	snprintf(path, sizeof(path), "%s/sd/.50.ended", tmp);
	assert_int_equal(lstat(path, &st), 0);
	assert_int_equal(st.st_uid, geteuid());
	/* 51's hour is over; 52's mark is not root's; .5x is no job's. */
	assert_false(there("%s/sd/51", tmp));
	assert_false(there("%s/sd/.51.ended", tmp));
	if (geteuid() == 0) {
		assert_true(there("%s/sd/52", tmp));
		assert_true(there("%s/sd/.52.ended", tmp));
	}
	assert_true(there("%s/sd/.5x.ended", tmp));
	/* A job without a directory here leaves no mark. */
	assert_int_equal(epilog(53, sd, "job_dir_keep=1h"), 0);
	assert_false(there("%s/sd/.53.ended", tmp));
	/* A second epilog of the same job keeps the first mark's time. */
	snprintf(path, sizeof(path), "%s/sd/.50.ended", tmp);
	age(path, 60);
	assert_int_equal(epilog(50, sd, "job_dir_keep=30"), 0);
	assert_false(there("%s/sd/50", tmp));
	assert_false(there("%s/sd/.50.ended", tmp));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_options_registered, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_site_line, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_option, setup, teardown),
		cmocka_unit_test_setup_teardown(test_step_request, setup, teardown),
		cmocka_unit_test_setup_teardown(test_over_site_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_enabled, setup, teardown),
		cmocka_unit_test_setup_teardown(test_job_layer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mpi, setup, teardown),
		cmocka_unit_test_setup_teardown(test_output_dir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_allocator, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sweep, setup, teardown),
		cmocka_unit_test_setup_teardown(test_epilog_removes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_epilog_keeps, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
