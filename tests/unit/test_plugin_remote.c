/* procmgr.so in slurmstepd, in-process, Slurm faked (fake_spank.c), up to
 * procmgrd's start: the hooks' handling of the batch and extern steps and
 * of a step without procmgr (plugin/remote.c), an error kept from
 * init_post_opt and told at task_init (where srun shows it and the step
 * fails), the step's identity, ports and paths (plugin/node.c) and
 * state_dir's checks as root (pm_spawn_dirs). test_plugin_spawn starts the
 * real procmgrd. */
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
#include <unistd.h>
#include <cmocka.h>

#include <slurm/slurm.h>

#include "fake_spank.h"
#include "plugin.h"
#include "spawn.h"

/* slurmstepd's configuration, which the plugin reads weakly. */
slurm_conf_t slurm_conf;

static int drains;
void pm_drain_maybe(const struct pm_node *n)
{
	(void)n;
	drains++;
}

static char tmp[64], sd_arg[PATH_MAX + 16];

static int setup(void **state)
{
	(void)state;
	fake_spank_reset();
	memset(&slurm_conf, 0, sizeof(slurm_conf));
	drains = 0;
	snprintf(tmp, sizeof(tmp), "/tmp/pm-remote.XXXXXX");
	assert_non_null(mkdtemp(tmp));
	snprintf(sd_arg, sizeof(sd_arg), "state_dir=%s/sd", tmp);
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

static void said(const char *text)
{
	if (!strstr(fake_spank.error, text))
		fail_msg("error '%s' does not say '%s'", fake_spank.error, text);
}

/* slurm_spank_init in slurmstepd with plugstack.conf's arguments. */
static int init(const char *a0, const char *a1)
{
	char *av[] = { sd_arg, (char *)a0, (char *)a1, NULL };

	fake_spank.ctx = S_CTX_REMOTE;
	fake_spank.nopts = 0;
	return slurm_spank_init(NULL, a1 ? 3 : a0 ? 2 : 1, av);
}

/* Job 77 step 0 on node 1 of 2, two tasks here of four, uid/gid 1000. */
static void step(const char *req)
{
	fake_spank_item(S_JOB_ID, 77);
	fake_spank_item(S_JOB_STEPID, 0);
	fake_spank_item(S_JOB_NODEID, 1);
	fake_spank_item(S_JOB_NNODES, 2);
	fake_spank_item(S_JOB_LOCAL_TASK_COUNT, 2);
	fake_spank_item(S_JOB_TOTAL_TASK_COUNT, 4);
	fake_spank_item(S_JOB_UID, 1000);
	fake_spank_item(S_JOB_GID, 1000);
	spank_setenv(NULL, "SLURM_STEP_NODELIST", "node[0-1]", 1);
	spank_setenv(NULL, "SLURM_STEP_RESV_PORTS", "12000-12001", 1);
	if (req)
		spank_setenv(NULL, PM_ENV_STEP_REQ, req, 1);
}

/* Each hook, as slurmstepd calls them: task_init for local task lrank. */
static int task_init(int lrank)
{
	fake_spank_item(S_TASK_ID, (uint32_t)lrank);
	return slurm_spank_task_init(NULL, 0, NULL);
}

/* First: the hooks in a step procmgr does not supervise do nothing. */
static void test_not_supervised(void **state)
{
	static char *argv[] = { "/bin/true", NULL };
	(void)state;

	assert_int_equal(init(NULL, NULL), 0);
	step(NULL);
	fake_spank.argc = 1;
	fake_spank.argv = argv;
	assert_int_equal(slurm_spank_init_post_opt(NULL, 0, NULL), 0);
	assert_int_equal(slurm_spank_user_init(NULL, 0, NULL), 0);
	assert_int_equal(task_init(0), 0);
	assert_string_equal(argv[0], "/bin/true");
	assert_int_equal(slurm_spank_task_exit(NULL, 0, NULL), 0);
	assert_int_equal(slurm_spank_exit(NULL, 0, NULL), 0);
	assert_int_equal(fake_spank.nerrors, 0);
	assert_int_equal(drains, 0);
	/* Nothing made in state_dir. */
	assert_int_equal(access(sd_arg + strlen("state_dir="), F_OK), -1);
}

/* The batch step hands #SBATCH --procmgr-* to the script's sruns; the
 * extern and interactive steps are not procmgr's. */
static void test_batch_and_extern(void **state)
{
	(void)state;
	assert_int_equal(init(NULL, NULL), 0);
	step("procmgr");
	fake_spank_item(S_JOB_STEPID, SLURM_BATCH_SCRIPT);
	assert_int_equal(slurm_spank_init_post_opt(NULL, 0, NULL), 0);
	assert_null(fake_spank_env(PM_ENV_JOB_OPTS));
	assert_int_equal(fake_spank_option("procmgr-restart", "on-failure:1", 1), 0);
	assert_int_equal(slurm_spank_init_post_opt(NULL, 0, NULL), 0);
	assert_non_null(strstr(fake_spank_env(PM_ENV_JOB_OPTS), "restart=on-failure:1"));
	fake_spank.setenv_fails = PM_ENV_JOB_OPTS;
	assert_int_equal(slurm_spank_init_post_opt(NULL, 0, NULL), 0);
	said("cannot export " PM_ENV_JOB_OPTS " to the batch script");
	fake_spank.setenv_fails = NULL;

	fake_spank.nerrors = 0;
	fake_spank_item(S_JOB_STEPID, SLURM_EXTERN_CONT);
	assert_int_equal(slurm_spank_init_post_opt(NULL, 0, NULL), 0);
	fake_spank_item(S_JOB_STEPID, SLURM_INTERACTIVE_STEP);
	assert_int_equal(slurm_spank_init_post_opt(NULL, 0, NULL), 0);
	/* No step id at all: not a step's slurmstepd. */
	fake_spank.have[S_JOB_STEPID] = false;
	assert_int_equal(slurm_spank_init_post_opt(NULL, 0, NULL), 0);
	assert_int_equal(fake_spank.nerrors, 0);
}

/* A request that fails its check here (a bypass of srun, or a site cap
 * srun did not know): logged now, and the step fails at task_init, the
 * reason said once per node. Nothing started, nothing made. */
static void test_bad_request_deferred(void **state)
{
	static char *argv[] = { "/bin/true", NULL };
	int saved, null_fd;
	(void)state;

	assert_int_equal(init("max_restarts=1", NULL), 0);
	step("procmgr restart=on-failure:5");
	fake_spank.argc = 1;
	fake_spank.argv = argv;
	assert_int_equal(slurm_spank_init_post_opt(NULL, 0, NULL), 0);
	assert_int_equal(fake_spank.nerrors, 1);
	said("asks for more restarts than this site");
	assert_int_equal(slurm_spank_user_init(NULL, 0, NULL), 0);
	fake_spank.error[0] = '\0';
	assert_int_equal(task_init(1), -1);
	assert_int_equal(fake_spank.nerrors, 1);
	assert_int_equal(task_init(0), -1);
	assert_int_equal(fake_spank.nerrors, 2);
	said("asks for more restarts than this site");
	assert_string_equal(argv[0], "/bin/true");
	assert_int_equal(access(sd_arg + strlen("state_dir="), F_OK), -1);

	/* The exit hook ends nothing it did not start: slurmstepd's own
	 * descriptors (here a /dev/null as fd 0) stay open. */
	saved = dup(0);
	assert_true(saved >= 0);
	null_fd = open("/dev/null", O_RDONLY);
	assert_true(null_fd >= 0);
	assert_int_equal(dup2(null_fd, 0), 0);
	close(null_fd);
	assert_int_equal(slurm_spank_task_exit(NULL, 0, NULL), 0);
	assert_int_equal(slurm_spank_exit(NULL, 0, NULL), 0);
	assert_int_not_equal(fcntl(0, F_GETFD), -1);
	assert_int_equal(dup2(saved, 0), 0);
	close(saved);
}

/* A bad plugstack.conf line or option value in slurmstepd: the same. */
static void test_bad_site_line_deferred(void **state)
{
	(void)state;
	assert_int_equal(init("fanout=1", NULL), 0);
	step("procmgr");
	assert_int_equal(slurm_spank_init_post_opt(NULL, 0, NULL), 0);
	fake_spank.nerrors = 0;
	assert_int_equal(task_init(0), -1);
	said("bad value '1' for key 'fanout'");
	assert_int_equal(slurm_spank_exit(NULL, 0, NULL), 0);

	assert_int_equal(init(NULL, NULL), 0);
	assert_int_equal(fake_spank_option("procmgr-grace", "forever", 1), -1);
	step("procmgr");
	assert_int_equal(slurm_spank_init_post_opt(NULL, 0, NULL), 0);
	assert_int_equal(task_init(0), -1);
	said("forever");
	assert_int_equal(slurm_spank_exit(NULL, 0, NULL), 0);
}

/* state_dir must be root's and private: root creates files in it. Said
 * at task_init; the job's directory is not made. */
static void test_state_dir_not_private(void **state)
{
	char sd[PATH_MAX + 16];
	(void)state;

	snprintf(sd, sizeof(sd), "%s/sd", tmp);
	assert_int_equal(mkdir(sd, 0777), 0);
	assert_int_equal(chmod(sd, 0777), 0);
	assert_int_equal(init(NULL, NULL), 0);
	step("procmgr");
	assert_int_equal(slurm_spank_init_post_opt(NULL, 0, NULL), 0);
	assert_int_equal(slurm_spank_user_init(NULL, 0, NULL), 0);
	fake_spank.error[0] = '\0';
	assert_int_equal(task_init(0), -1);
	said("may be written by other users");
	said("chmod go-w");
	snprintf(sd, sizeof(sd), "%s/sd/77", tmp);
	assert_int_equal(access(sd, F_OK), -1);
	assert_int_equal(slurm_spank_exit(NULL, 0, NULL), 0);
	assert_int_equal(drains, 1);
}

/* ---- node.c: the step's identity, ports and paths ---- */

static void prepare_fails(const char *text)
{
	struct pm_node n;
	char err[PM_ERRLEN] = "";

	memset(&n, 0, sizeof(n));
	assert_int_equal(pm_node_prepare(NULL, &n, err, sizeof(err)), -1);
	if (!strstr(err, text))
		fail_msg("'%s' does not say '%s'", err, text);
	pm_node_free(&n);
}

static void test_node_prepare(void **state)
{
	char want[PATH_MAX + 64], list[4200];
	struct pm_node n;
	char err[PM_ERRLEN] = "";
	size_t i;
	(void)state;

	slurm_conf.authinfo = "ttl=60,socket=/run/munge/alt.socket";
	assert_int_equal(init("runtime=/opt/pm/libexec/procmgrd", NULL), 0);
	pm_opts_resolve(&pm_g.resolved, &pm_g.site, NULL, &pm_g.flags, err, sizeof(err));
	step("procmgr");
	spank_setenv(NULL, PM_ENV_SRUN_NODE, "login1", 1);
	memset(&n, 0, sizeof(n));
	assert_int_equal(pm_node_prepare(NULL, &n, err, sizeof(err)), 0);
	assert_int_equal(n.job, 77);
	assert_int_equal(n.nodeid, 1);
	assert_int_equal(n.uid, 1000);
	assert_int_equal(n.port, 12000);
	assert_int_equal(n.pid, -1);
	assert_int_equal(n.ready_fd, -1);
	assert_string_equal(n.nodelist, "node[0-1]");
	assert_string_equal(n.master, "node0");
	assert_string_equal(n.srun_node, "login1");
	assert_string_equal(n.munge_socket, "/run/munge/alt.socket");
	assert_string_equal(n.shim, "/opt/pm/libexec/procmgr-rank");
	snprintf(want, sizeof(want), "%s/sd/77/0.1.run", tmp);
	assert_string_equal(n.rundir, want);
	assert_non_null(strstr(n.opts, "restart="));
	pm_node_free(&n);

	/* A name only for srun's node; Slurm's ports refused fall back to
	 * the site's range, where each step has its own pair. */
	spank_setenv(NULL, PM_ENV_SRUN_NODE, "../etc", 1);
	spank_setenv(NULL, "SLURM_STEP_RESV_PORTS", "12000", 1);
	pm_g.site.port_lo = 20000;
	pm_g.site.port_hi = 20099;
	assert_int_equal(pm_node_prepare(NULL, &n, err, sizeof(err)), 0);
	assert_string_equal(n.srun_node, "");
	assert_int_equal(n.port, 20000 + 2 * ((77 * 7919u + 0) % 50));
	pm_node_free(&n);

	/* A node list longer than the first buffer. */
	snprintf(list, sizeof(list), "first");
	for (i = strlen(list); i < 4150; i += 6)
		strcat(list, ",node0");
	spank_setenv(NULL, "SLURM_STEP_NODELIST", list, 1);
	assert_int_equal(pm_node_prepare(NULL, &n, err, sizeof(err)), 0);
	assert_string_equal(n.master, "first");
	assert_int_equal(strlen(n.nodelist), strlen(list));
	pm_node_free(&n);

	spank_setenv(NULL, "SLURM_STEP_NODELIST", "node[0-", 1);
	prepare_fails("SLURM_STEP_NODELIST='node[0-'");
	spank_setenv(NULL, "SLURM_STEP_NODELIST", "node[0-1]", 1);
	pm_g.site.port_hi = 0;
	slurm_conf.plugstack = "/etc/slurm/plugstack.conf.d/pm.conf";
	assert_int_equal(init("runtime=/opt/pm/libexec/procmgrd", NULL), 0);
	prepare_fails("no port for the control tree");
	prepare_fails("procmgr's line in /etc/slurm/plugstack.conf.d/pm.conf");
	spank_setenv(NULL, "SLURM_STEP_RESV_PORTS", "12000-12001", 1);
	memset(pm_g.site.state_dir, 's', sizeof(pm_g.site.state_dir) - 8);
	prepare_fails("is too long for the step's files");
	assert_int_equal(init(NULL, NULL), 0);
	pm_g.resolved.spares = 2;
	prepare_fails("--procmgr-spares=2 needs more than 2 nodes; this step has 2 (srun -N)");
	pm_g.resolved.spares = 1;
	fake_spank_item(S_JOB_LOCAL_TASK_COUNT, 3);
	prepare_fails("this step has 4 tasks on 2 nodes (3 on this one)");
	fake_spank.nenv = 0;
	prepare_fails("SLURM_STEP_NODELIST unset, or over 64 MiB");
	fake_spank.have[S_JOB_GID] = false;
	prepare_fails("cannot read the step's identity from Slurm");
}

/* ---- pm_spawn_dirs: state_dir root's and private, state_dir/JOB the
 * job user's, nothing followed ---- */

static int dirs(uint32_t job, uid_t uid, char *err, size_t errlen)
{
	struct pm_node n;

	memset(&n, 0, sizeof(n));
	n.job = job;
	n.uid = uid;
	n.gid = uid;
	snprintf(pm_g.site.state_dir, sizeof(pm_g.site.state_dir), "%s/sd", tmp);
	pm_path_jobdir(n.jobdir, sizeof(n.jobdir), pm_g.site.state_dir, job);
	err[0] = '\0';
	return pm_spawn_dirs(&n, err, errlen);
}

static void test_spawn_dirs(void **state)
{
	char err[PM_ERRLEN], path[PATH_MAX + 32], other[PATH_MAX + 32];
	struct stat st;
	(void)state;

	if (geteuid() != 0)
		skip(); /* the job's directory is given to its user */
	/* state_dir made if missing, root's, 0755; JOB made the user's. */
	assert_int_equal(dirs(5, 1000, err, sizeof(err)), 0);
	snprintf(path, sizeof(path), "%s/sd", tmp);
	assert_int_equal(lstat(path, &st), 0);
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	snprintf(path, sizeof(path), "%s/sd/5", tmp);
	assert_int_equal(lstat(path, &st), 0);
	assert_int_equal(st.st_uid, 1000);
	assert_int_equal(st.st_gid, 1000);
	assert_int_equal(st.st_mode & 07777, 0700);
	/* Again (a second step of the job): the same directory. */
	assert_int_equal(dirs(5, 1000, err, sizeof(err)), 0);
	/* Job 5's id seen before, by another user's job: never taken. */
	assert_int_equal(dirs(5, 1001, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "/sd/5 is not a directory of root or of the job's user: "
				    "remove it"));
	/* A file or a link in its place: refused, not followed. */
	snprintf(path, sizeof(path), "%s/sd/6", tmp);
	assert_int_equal(close(open(path, O_WRONLY | O_CREAT, 0600)), 0);
	assert_int_equal(dirs(6, 1000, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "is not a directory of root or of the job's user"));
	snprintf(other, sizeof(other), "%s/elsewhere", tmp);
	assert_int_equal(mkdir(other, 0700), 0);
	snprintf(path, sizeof(path), "%s/sd/7", tmp);
	assert_int_equal(symlink(other, path), 0);
	assert_int_equal(dirs(7, 1000, err, sizeof(err)), -1);
	assert_int_equal(lstat(other, &st), 0);
	assert_int_equal(st.st_uid, 0);

	/* state_dir: another user's, or a link to a directory. */
	snprintf(path, sizeof(path), "%s/sd", tmp);
	assert_int_equal(chown(path, 1000, 1000), 0);
	assert_int_equal(dirs(8, 1000, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "belongs to another user"));
	snprintf(other, sizeof(other), "%s/sd.real", tmp);
	assert_int_equal(rename(path, other), 0);
	assert_int_equal(chown(other, 0, 0), 0);
	assert_int_equal(symlink(other, path), 0);
	assert_int_equal(dirs(8, 1000, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "is not a directory (a link is not followed)"));
	snprintf(path, sizeof(path), "%s/sd.real/8", tmp);
	assert_int_equal(access(path, F_OK), -1);

	/* A job directory path without a job's name. */
	{
		struct pm_node n;
		memset(&n, 0, sizeof(n));
		snprintf(pm_g.site.state_dir, sizeof(pm_g.site.state_dir), "%s/sd.real", tmp);
		snprintf(n.jobdir, sizeof(n.jobdir), "%.4000s/sd.real/", tmp);
		assert_int_equal(pm_spawn_dirs(&n, err, sizeof(err)), -1);
		assert_non_null(strstr(err, "is not a job directory in state_dir"));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_not_supervised, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batch_and_extern, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_request_deferred, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_site_line_deferred, setup, teardown),
		cmocka_unit_test_setup_teardown(test_state_dir_not_private, setup, teardown),
		cmocka_unit_test_setup_teardown(test_node_prepare, setup, teardown),
		cmocka_unit_test_setup_teardown(test_spawn_dirs, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
