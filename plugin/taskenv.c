#include "taskenv.h"

#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "affinity/bind.h"
#include "affinity/gpumap.h"
#include "common/torchenv.h"
#include "plugin.h"
#include "topocache.h"

/* The CPUs Slurm gave the step on this node, as a list ("0-3,8"). */
static void allowed_cpus(char *buf, size_t len)
{
	cpu_set_t set;
	size_t off = 0;
	int cpu, start = -1;

	buf[0] = '\0';
	if (sched_getaffinity(0, sizeof(set), &set))
		return;
	for (cpu = 0; cpu <= CPU_SETSIZE; cpu++) {
		bool in = cpu < CPU_SETSIZE && CPU_ISSET(cpu, &set);
		if (in && start < 0)
			start = cpu;
		if (!in && start >= 0 && off + 24 < len) {
			off += (size_t)snprintf(buf + off, len - off, "%s%d", off ? "," : "",
						start);
			if (cpu - 1 > start)
				off += (size_t)snprintf(buf + off, len - off, "-%d", cpu - 1);
			start = -1;
		}
	}
}

int pm_taskenv_plan(spank_t sp, struct pm_node *n, char *err, size_t errlen)
{
	char allowed[4096], gpus[1024], why[PM_ERRLEN], xml[PATH_MAX];

	allowed_cpus(allowed, sizeof(allowed));
	if (spank_getenv(sp, "SLURM_STEP_GPUS", gpus, sizeof(gpus)) == ESPANK_SUCCESS) {
		char cvd[1024];
		/* ConstrainDevices=yes: the task will see these as 0..n-1. */
		if (spank_getenv(sp, "CUDA_VISIBLE_DEVICES", cvd, sizeof(cvd)) == ESPANK_SUCCESS &&
		    pm_gpus_renumbered(gpus, cvd))
			snprintf(n->step_gpus, sizeof(n->step_gpus), "%s", gpus);
	} else if (spank_getenv(sp, "CUDA_VISIBLE_DEVICES", gpus, sizeof(gpus)) != ESPANK_SUCCESS) {
		gpus[0] = '\0';
	}
	if (pm_bind_plan_node(pm_topocache_xml(xml, sizeof(xml)), pm_g.resolved.bind, (int)n->ntasks_local,
			      allowed[0] ? allowed : NULL, gpus[0] ? gpus : NULL, &n->plan,
			      why, sizeof(why))) {
		snprintf(err, errlen, "cannot plan the binding of node %u's ranks: %s",
			 n->nodeid, why);
		return -1;
	}
	return 0;
}

static int bind_setenv(void *ctx, const char *name, const char *value)
{
	return spank_setenv(ctx, name, value, 1) == ESPANK_SUCCESS ? 0 : -1;
}

static int bind_getenv(void *ctx, const char *name, char *buf, size_t len)
{
	return spank_getenv(ctx, name, buf, (int)len) == ESPANK_SUCCESS ? 0 : -1;
}

static int set(spank_t sp, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int set(spank_t sp, const char *name, const char *fmt, ...)
{
	char v[PATH_MAX + 64];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(v, sizeof(v), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(v))
		return -1;
	return spank_setenv(sp, name, v, 1) == ESPANK_SUCCESS ? 0 : -1;
}

/* torchrun's contract, so that a script written for it runs as is. */
static int torchrun_env(spank_t sp, const struct pm_node *n, uint32_t rank, int lrank)
{
	char path[PATH_MAX];
	int rc = 0;

	uint32_t nodes = n->nnodes - pm_g.resolved.spares;
	uint32_t world = pm_g.resolved.spares ? nodes * n->ntasks_local : n->ntasks;

	/* With spares, ranks count by node (node i runs i*per-node + local
	 * rank) and only the active nodes are in the world; a spare learns
	 * its numbers from procmgrd when it takes a node's place. */
	if (pm_g.resolved.spares)
		rank = n->nodeid * n->ntasks_local + (uint32_t)lrank;
	rc |= set(sp, PM_ENV_RANK, "%u", rank);
	rc |= set(sp, PM_ENV_LOCAL_RANK, "%d", lrank);
	rc |= set(sp, PM_ENV_WORLD_SIZE, "%u", world);
	rc |= set(sp, PM_ENV_LOCAL_WORLD_SIZE, "%u", n->ntasks_local);
	rc |= set(sp, PM_ENV_GROUP_RANK, "%u", n->nodeid);
	rc |= set(sp, PM_ENV_GROUP_WORLD_SIZE, "%u", pm_g.resolved.spares ? nodes : n->nnodes);
	rc |= set(sp, PM_ENV_ROLE_RANK, "%u", rank);
	rc |= set(sp, PM_ENV_ROLE_WORLD_SIZE, "%u", world);
	rc |= set(sp, PM_ENV_MASTER_ADDR, "%s", n->master);
	rc |= set(sp, PM_ENV_MASTER_PORT, "%u", n->port + 1);
	rc |= set(sp, PM_ENV_TE_RUN_ID, "%u.%u", n->job, n->step);
	rc |= set(sp, PM_ENV_TE_MAX_RESTARTS, "%d", pm_g.resolved.restart_max);
	rc |= set(sp, PM_ENV_TE_USE_AGENT_STORE, "False");
	rc |= set(sp, PM_ENV_RESTART_COUNT, "0");
	rc |= set(sp, PM_ENV_TE_RESTART_COUNT, "0");
	/* Where torch's @record writes the command's error; in the run
	 * directory, so it goes with the step. */
	if (pm_path_error_file(path, sizeof(path), n->rundir, lrank))
		return -1;
	rc |= set(sp, PM_ENV_TE_ERROR_FILE, "%s", path);
	return rc;
}

static int task_isset(void *ctx, const char *name)
{
	char v[8];
	/* A value too long for v is still set. */
	spank_err_t e = spank_getenv(ctx, name, v, sizeof(v));
	return e == ESPANK_SUCCESS || e == ESPANK_NOSPACE;
}

/* What procmgr-rank reads, and the heartbeat file for the command. */
static int supervisor_env(spank_t sp, const struct pm_node *n, int lrank)
{
	char path[PATH_MAX];
	int rc = 0;

	if (pm_path_sock(path, sizeof(path), n->rundir))
		return -1;
	rc |= set(sp, PM_ENV_SOCK, "%s", path);
	if (pm_path_state(path, sizeof(path), n->rundir))
		return -1;
	rc |= set(sp, PM_ENV_STATE_SOCK, "%s", path);
	rc |= set(sp, PM_ENV_STEP_OPTS, "%s", n->opts);
	rc |= set(sp, PM_ENV_PEER_TIMEOUT, "%u", pm_g.site.peer_timeout_ms);
	/* Always: the hang detector's input, the slow-node detector's steps,
	 * and, its first beat after a restart, when training resumed. */
	if (pm_path_heartbeat(path, sizeof(path), n->rundir, lrank))
		return -1;
	rc |= set(sp, PM_ENV_HEARTBEAT, "%s", path);
	return rc;
}

/* The plan names the node's GPUs; under ConstrainDevices the task knows
 * them by their place in the step's list. */
static int renumber_gpus(spank_t sp, const struct pm_node *n, uint32_t rank, char *err,
			 size_t errlen)
{
	char node[1024], task[1024];

	if (spank_getenv(sp, "CUDA_VISIBLE_DEVICES", node, sizeof(node)) != ESPANK_SUCCESS)
		return 0;
	if (pm_gpus_to_task(n->step_gpus, node, task, sizeof(task)) ||
	    spank_setenv(sp, "CUDA_VISIBLE_DEVICES", task, 1) != ESPANK_SUCCESS) {
		snprintf(err, errlen, "rank %u: cannot renumber GPUs %s within the step's %s",
			 rank, node, n->step_gpus);
		return -1;
	}
	return 0;
}

static int binding(spank_t sp, const struct pm_node *n, uint32_t rank, int lrank,
		   char *err, size_t errlen)
{
	char msg[2048];

	if (pm_bind_apply_rank(n->plan, lrank, bind_setenv, bind_getenv, sp, msg,
			       sizeof(msg))) {
		snprintf(err, errlen, "rank %u: binding: %s", rank, msg);
		return -1;
	}
	if (pm_g.resolved.verbose && msg[0])
		fprintf(stderr, PM_NAME ": rank %u: %s\n", rank, msg);
	return n->step_gpus[0] ? renumber_gpus(sp, n, rank, err, errlen) : 0;
}

int pm_taskenv_set(spank_t sp, const struct pm_node *n, uint32_t rank, int lrank,
		   const char *argv0, char *err, size_t errlen)
{
	int rc = torchrun_env(sp, n, rank, lrank) | supervisor_env(sp, n, lrank);

	if (n->plan && binding(sp, n, rank, lrank, err, errlen))
		return -1;
	/* After the binding: its OMP_NUM_THREADS (the rank's cores) wins. */
	rc |= pm_torchenv_defaults(n->ntasks_local, task_isset, bind_setenv, sp);
	/* Slurm execs the supervisor in the command's place, after TaskProlog
	 * and the rest of the task's set-up; it runs the command itself. */
	rc |= set(sp, PM_ENV_ARGV0, "%s", argv0);
	if (rc) {
		snprintf(err, errlen, "cannot set the rank's environment");
		return -1;
	}
	return 0;
}
