/* slurmstepd: one per node per step. Starts this node's procmgrd, turns each
 * task into a supervised rank, and stops everything at step end. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/slurm.h>

#include "affinity/bind.h"
#include "drain.h"
#include "plugin.h"
#include "spawn.h"
#include "taskenv.h"
#include "metricsdir.h"
#include "topocache.h"

/* No procmgrd and no ready pipe until pm_node_prepare: an error found
 * before it still runs the exit hook, whose stop must not take fd 0
 * (slurmstepd's) for the ready pipe. */
static struct pm_node node_s = { .pid = -1, .pidfd = -1, .ready_fd = -1 };
static bool active; /* procmgr supervises this step on this node */
/* The first error was said where srun shows it (user_init, whose error
 * output srun has): the tasks need not say it again. */
static bool error_told;
static char launch_err[PM_ERRLEN]; /* procmgrd could not be started (post_opt) */

/* A remote hook that fails only makes srun say "task launch failed" and
 * the job COMPLETED: keep the first error for task_init, where the step
 * fails, and log it in slurmd's log now; told_srun: srun shows it too.
 * Returns 0, what the hook returns. */
static int defer_error(const char *err, bool told_srun)
{
	if (!pm_g.error[0]) {
		snprintf(pm_g.error, sizeof(pm_g.error), "%s", err);
		error_told = told_srun;
	}
	pm_err("%s", err);
	return 0;
}

int pm_remote_post_opt(spank_t sp)
{
	char buf[4096], err[PM_ERRLEN];
	uint32_t stepid = 0;
	struct pm_opts step;

	if (spank_get_item(sp, S_JOB_STEPID, &stepid) != ESPANK_SUCCESS)
		return 0;
	if (stepid == SLURM_BATCH_SCRIPT) {
		/* #SBATCH --procmgr-* lines: handed to the script's srun steps. */
		if (pm_g.flags.set && pm_opts_format(&pm_g.flags, buf, sizeof(buf)) == 0 &&
		    spank_setenv(sp, PM_ENV_JOB_OPTS, buf, 1) != ESPANK_SUCCESS)
			pm_err("cannot export %s to the batch script", PM_ENV_JOB_OPTS);
		return 0;
	}
	if (stepid == SLURM_EXTERN_CONT || stepid == SLURM_INTERACTIVE_STEP)
		return 0;
	if (spank_getenv(sp, PM_ENV_STEP_REQ, buf, sizeof(buf)) != ESPANK_SUCCESS)
		return 0;

	/* The environment is the user's: check it again, site cap included. */
	pm_opts_init(&step);
	if (pm_opts_parse_str(&step, buf, PM_ENV_STEP_REQ, err, sizeof(err)) ||
	    pm_opts_resolve(&pm_g.resolved, &pm_g.site, NULL, &step, err, sizeof(err)))
		defer_error(err, false);
	active = pm_g.resolved.enabled || pm_g.error[0];
	if (!active || pm_g.error[0])
		return 0;
	/* As root, while we still are. */
	if (pm_node_prepare(sp, &node_s, err, sizeof(err)) ||
	    pm_spawn_dirs(&node_s, err, sizeof(err)))
		return defer_error(err, false);
	if (pm_g.resolved.bind)
		pm_topocache_refresh();
	pm_metricsdir_prepare(&node_s);
	/* Started now, its start-up (exec, listen, checks) overlaps
	 * slurmstepd's own until user_init reads its ready line: ~4 ms per
	 * node off the launch. user_init says a failure, where srun shows it. */
	if (pm_spawn_launch(sp, &node_s, err, sizeof(err)))
		snprintf(launch_err, sizeof(launch_err), "%s", err);
	return 0;
}

int pm_remote_user_init(spank_t sp)
{
	char err[PM_ERRLEN];

	if (!active || pm_g.error[0])
		return 0;
	if (launch_err[0])
		return defer_error(launch_err, true);
	if (pm_spawn_start(sp, &node_s, err, sizeof(err)))
		return defer_error(err, true);
	if (pm_g.resolved.bind && pm_taskenv_plan(sp, &node_s, err, sizeof(err)))
		return defer_error(err, true);
	return 0;
}

/* srun --multi-prog: Slurm hands the plugin the table's file name and its
 * text (argv[0], argv[1]) and picks each task's command after task_init,
 * past procmgr-rank: the commands would run unsupervised. Recognised by
 * that shape: a file that is not executable, then lines of "RANKS CMD". */
static bool multi_prog(int argc, char **argv)
{
	const char *t;

	if (argc != 2 || access(argv[0], X_OK) == 0 || access(argv[0], R_OK) != 0)
		return false;
	for (t = argv[1]; *t == ' ' || *t == '\t' || *t == '\n'; t++)
		;
	return (isdigit((unsigned char)*t) || *t == '*') && strpbrk(t, " \t");
}

int pm_remote_task_init(spank_t sp)
{
	struct pm_node *n = &node_s;
	uint32_t rank = 0;
	int lrank = 0, argc = 0;
	char **argv = NULL, err[PM_ERRLEN];

	if (!active)
		return 0;
	if (pm_g.error[0]) {
		/* Each task runs this in its own process and Slurm already says
		 * for each that it failed: the reason once per node is enough. */
		if (!error_told &&
		    (spank_get_item(sp, S_TASK_ID, &lrank) != ESPANK_SUCCESS || lrank == 0))
			pm_err("%s", pm_g.error);
		return -1;
	}
	if (spank_get_item(sp, S_TASK_GLOBAL_ID, &rank) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_TASK_ID, &lrank) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS || argc < 1) {
		pm_err("cannot read the task's rank and command from Slurm");
		return -1;
	}
	if (multi_prog(argc, argv)) {
		if (rank == 0)
			pm_err("--multi-prog is not supported with procmgr: each task's command "
			       "would run unsupervised. Run one command in every task (a wrapper "
			       "that chooses by $RANK or $SLURM_PROCID), or drop the --procmgr "
			       "options for this step");
		return -1;
	}
	if (pm_g.resolved.verbose && rank == 0)
		fprintf(stderr, PM_NAME ": rank 0 runs with: %s\n", n->opts);
	if (pm_taskenv_set(sp, n, rank, lrank, argv[0], err, sizeof(err))) {
		pm_err("%s", err);
		return -1;
	}
	/* Slurm execs procmgr-rank in the command's place. */
	argv[0] = strdup(n->shim);
	return argv[0] ? 0 : -1;
}

int pm_remote_task_exit(spank_t sp)
{
	struct pm_node *n = &node_s;
	(void)sp;

	if (!active || n->pid <= 0)
		return 0;
	if (++n->tasks_exited >= n->ntasks_local) {
		/* Stopped and reaped here, not in the exit hook: proctrack's
		 * sweep SIGKILLs procmgrd between the two, and a root killed
		 * there never tells a node that joins late how the step ended
		 * (it waited out its connect timeout: health.bats). */
		pm_spawn_stop(n);
		/* Now, before Slurm sweeps the step's processes away. */
		pm_drain_maybe(n);
	}
	return 0;
}

int pm_remote_exit(spank_t sp)
{
	(void)sp;
	if (!active)
		return 0;
	pm_spawn_stop(&node_s);
	pm_drain_maybe(&node_s);
	if (node_s.plan)
		pm_bind_plan_free(node_s.plan);
	pm_node_free(&node_s);
	return 0;
}
