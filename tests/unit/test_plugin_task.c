/* The plugin's task side in-process, Slurm faked (tests/unit/fake_spank.c):
 * the environment each rank gets (plugin/taskenv.c: torchrun's variables,
 * procmgr-rank's, the binding plan), and srun's --no-kill check for spares
 * (plugin/nokill.c), which reads srun's own command line: this program
 * re-runs itself with the flags to be found there. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "affinity/bind.h"
#include "fake_spank.h"
#include "plugin.h"
#include "taskenv.h"

struct pm_plugin pm_g;

/* plugin/topocache.c's: the topology is a fixture's. */
const char *pm_topocache_xml(char *buf, size_t len)
{
	const char *top = getenv("top_srcdir");

	snprintf(buf, len, "%s/tests/data/dgx-h100.xml", top ? top : ".");
	return buf;
}

static int setup(void **state)
{
	(void)state;
	fake_spank_reset();
	memset(&pm_g, 0, sizeof(pm_g));
	pm_opts_init(&pm_g.resolved);
	pm_g.resolved.enabled = true;
	return 0;
}

static void node(struct pm_node *n)
{
	memset(n, 0, sizeof(*n));
	n->job = 42;
	n->step = 1;
	n->nodeid = 1;
	n->nnodes = 3;
	n->ntasks_local = 2;
	n->ntasks = 6;
	n->port = 6000;
	snprintf(n->master, sizeof(n->master), "node0");
	snprintf(n->rundir, sizeof(n->rundir), "/tmp/procmgr-test/42.1");
	snprintf(n->opts, sizeof(n->opts), "restart=on-failure:2");
}

static void env_is(const char *name, const char *value)
{
	const char *v = fake_spank_env(name);

	if (!v)
		fail_msg("%s is not set", name);
	assert_string_equal(v, value);
}

static void test_torchrun_env(void **state)
{
	struct pm_node n;
	char err[256];
	(void)state;

	node(&n);
	pm_g.resolved.restart_max = 2;
	pm_g.site.peer_timeout_ms = 9000;
	assert_int_equal(pm_taskenv_set(NULL, &n, 3, 1, "/bin/train", err, sizeof(err)), 0);
	env_is("RANK", "3");
	env_is("LOCAL_RANK", "1");
	env_is("WORLD_SIZE", "6");
	env_is("LOCAL_WORLD_SIZE", "2");
	env_is("GROUP_RANK", "1");
	env_is("GROUP_WORLD_SIZE", "3");
	env_is("ROLE_RANK", "3");
	env_is("ROLE_WORLD_SIZE", "6");
	env_is("MASTER_ADDR", "node0");
	env_is("MASTER_PORT", "6001"); /* the control tree has port itself */
	env_is("TORCHELASTIC_RUN_ID", "42.1");
	env_is("TORCHELASTIC_MAX_RESTARTS", "2");
	env_is("TORCHELASTIC_USE_AGENT_STORE", "False");
	env_is("TORCHELASTIC_RESTART_COUNT", "0");
	env_is(PM_ENV_RESTART_COUNT, "0");
	env_is(PM_ENV_ARGV0, "/bin/train");
	env_is(PM_ENV_STEP_OPTS, "restart=on-failure:2");
	env_is(PM_ENV_PEER_TIMEOUT, "9000");
	assert_non_null(strstr(fake_spank_env(PM_ENV_SOCK), "/tmp/procmgr-test/42.1"));
	assert_non_null(strstr(fake_spank_env("TORCHELASTIC_ERROR_FILE"),
			       "/tmp/procmgr-test/42.1"));
	/* No hang timeout: a heartbeat file all the same, for the recovery
	 * figure (a program that heartbeats has its time to training again
	 * said; issue 32 item 11). */
	assert_non_null(fake_spank_env(PM_ENV_HEARTBEAT));
	/* torch's threads: set by procmgr unless the task has its own. */
	assert_non_null(fake_spank_env("OMP_NUM_THREADS"));
}

static void test_spares_count_by_node(void **state)
{
	struct pm_node n;
	char err[256];
	(void)state;

	node(&n);
	pm_g.resolved.spares = 1;
	pm_g.resolved.hang_timeout_ms = 60000;
	/* Slurm's rank 5 on node 1, local rank 0: procmgr's is 1*2+0. */
	assert_int_equal(pm_taskenv_set(NULL, &n, 5, 0, "/bin/train", err, sizeof(err)), 0);
	env_is("RANK", "2");
	env_is("WORLD_SIZE", "4"); /* two active nodes of two ranks */
	env_is("GROUP_WORLD_SIZE", "2");
	assert_non_null(strstr(fake_spank_env(PM_ENV_HEARTBEAT), "/tmp/procmgr-test/42.1"));
}

static void test_task_threads_kept(void **state)
{
	struct pm_node n;
	char err[256];
	(void)state;

	node(&n);
	spank_setenv(NULL, "OMP_NUM_THREADS", "7", 1);
	assert_int_equal(pm_taskenv_set(NULL, &n, 0, 0, "/bin/x", err, sizeof(err)), 0);
	env_is("OMP_NUM_THREADS", "7");
}

static void test_setenv_fails(void **state)
{
	struct pm_node n;
	char err[256] = "";
	(void)state;

	node(&n);
	fake_spank.setenv_fails = PM_ENV_ARGV0;
	assert_int_equal(pm_taskenv_set(NULL, &n, 0, 0, "/bin/x", err, sizeof(err)), -1);
	assert_string_equal(err, "cannot set the rank's environment");
	fake_spank.setenv_fails = NULL;
	/* A run directory too long for the socket's path fails as well. */
	memset(n.rundir, 'd', sizeof(n.rundir) - 1);
	n.rundir[0] = '/';
	n.rundir[sizeof(n.rundir) - 1] = '\0';
	assert_int_equal(pm_taskenv_set(NULL, &n, 0, 0, "/bin/x", err, sizeof(err)), -1);
}

/* The node's plan from the fixture's topology, for the GPUs Slurm gave
 * the step: a plan for two ranks, and its refusal of a bad GPU list. */
static void test_plan(void **state)
{
	struct pm_node n;
	char err[256] = "";
	(void)state;

	node(&n);
	pm_g.resolved.bind = PM_BIND_ALL;
	spank_setenv(NULL, "CUDA_VISIBLE_DEVICES", "0,1", 1);
	assert_int_equal(pm_taskenv_plan(NULL, &n, err, sizeof(err)), 0);
	assert_non_null(n.plan);
	assert_string_equal(n.step_gpus, "");
	pm_bind_plan_free(n.plan);
	/* ConstrainDevices: the step's GPUs 4,5 seen as 0,1 by the task. */
	fake_spank_reset();
	spank_setenv(NULL, "SLURM_STEP_GPUS", "4,5", 1);
	spank_setenv(NULL, "CUDA_VISIBLE_DEVICES", "0,1", 1);
	node(&n);
	assert_int_equal(pm_taskenv_plan(NULL, &n, err, sizeof(err)), 0);
	assert_string_equal(n.step_gpus, "4,5");
	pm_bind_plan_free(n.plan);
	node(&n);
	n.ntasks_local = 0;
	assert_int_equal(pm_taskenv_plan(NULL, &n, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "cannot plan the binding of node 1's ranks"));
}

/* ---- nokill.c: spares need srun --no-kill ---- */

static void test_nokill_not_needed(void **state)
{
	(void)state;
	pm_g.resolved.enabled = false;
	pm_g.resolved.spares = 2;
	assert_int_equal(pm_local_init(NULL), 0);
	pm_g.resolved.enabled = true;
	pm_g.resolved.spares = 0;
	assert_int_equal(pm_local_init(NULL), 0);
	assert_int_equal(fake_spank.nerrors, 0);
}

static void test_nokill_from_environment(void **state)
{
	(void)state;
	pm_g.resolved.spares = 1;
	setenv("SLURM_NO_KILL", "1", 1);
	assert_int_equal(pm_local_init(NULL), 0);
	setenv("SLURM_NO_KILL", "no", 1);
	/* This program's command line has no -k: refused, and told why. */
	assert_int_equal(pm_local_init(NULL), -1);
	assert_int_equal(fake_spank.nerrors, 1);
	assert_non_null(strstr(fake_spank.error, "needs srun --no-kill"));
	unsetenv("SLURM_NO_KILL");
}

/* This program again, with args on its command line: what pm_local_init
 * says there, cmd_argc of them being the step's command. */
static int child(const char *a1, const char *a2, int cmd_argc)
{
	char n[16];
	pid_t pid;
	int st;

	snprintf(n, sizeof(n), "%d", cmd_argc);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		execl("/proc/self/exe", "test_plugin_task", "--nokill-child", n, a1, a2,
		      (char *)NULL);
		_exit(99);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static void test_nokill_on_srun_command_line(void **state)
{
	(void)state;
	assert_int_equal(child("-k", "cmd", 1), 0);
	assert_int_equal(child("--no-kill", "cmd", 1), 0);
	assert_int_equal(child("--no-kill=yes", "cmd", 1), 0);
	/* The command's own -k is not srun's. */
	assert_int_equal(child("cmd", "-k", 2), 1);
	assert_int_equal(child("-n2", "cmd", 1), 1);
}

static int nokill_child(char **argv)
{
	static char *cmd[] = { "cmd", "-k", NULL };

	setup(NULL);
	pm_g.resolved.spares = 1;
	unsetenv("SLURM_NO_KILL");
	fake_spank.argc = atoi(argv[2]);
	fake_spank.argv = cmd;
	return pm_local_init(NULL) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_torchrun_env, setup),
		cmocka_unit_test_setup(test_spares_count_by_node, setup),
		cmocka_unit_test_setup(test_task_threads_kept, setup),
		cmocka_unit_test_setup(test_setenv_fails, setup),
		cmocka_unit_test_setup(test_plan, setup),
		cmocka_unit_test_setup(test_nokill_not_needed, setup),
		cmocka_unit_test_setup(test_nokill_from_environment, setup),
		cmocka_unit_test_setup(test_nokill_on_srun_command_line, setup),
	};

	if (argc > 2 && !strcmp(argv[1], "--nokill-child"))
		return nokill_child(argv);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
