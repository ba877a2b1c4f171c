/* procmgr.so: state shared by the per-context files. */
#ifndef PM_PLUGIN_H
#define PM_PLUGIN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <slurm/spank.h>

#include "common/contract.h"
#include "common/options.h"

#define PM_NAME "procmgr"

struct pm_plugin {
	struct pm_site site;
	struct pm_opts flags;    /* this command's own --procmgr-* flags */
	struct pm_opts resolved; /* what applies to this step */
	char plugstack[PATH_MAX];
	/* A problem found where it cannot be reported yet (remote side): told
	 * to the user from task_init, where srun shows it and fails. */
	char error[PM_ERRLEN];
};

extern struct pm_plugin pm_g;

/* Remote: this node's part of the step. Filled in init_post_opt (as root)
 * and user_init, inherited by every task's process. */
struct pm_node {
	uint32_t job, step, nodeid, nnodes, ntasks_local, ntasks;
	uid_t uid;
	gid_t gid;
	unsigned port; /* control tree; MASTER_PORT is port + 1 */
	char *nodelist; /* SLURM_STEP_NODELIST, as long as it is (malloc) */
	char master[256];
	char opts[4096]; /* the resolved options, as they travel (pm_opts_format) */
	char jobdir[PATH_MAX];
	char rundir[PATH_MAX];
	char report[PATH_MAX]; /* procmgrd's account of a failed check */
	char munge_socket[PATH_MAX];
	char shim[PATH_MAX];   /* procmgr-rank */
	char srun_node[256];   /* PM_ENV_SRUN_NODE, "" if srun is not on a node */
	struct pm_bind_plan *plan;
	char step_gpus[1024]; /* set when Slurm renumbers the task's GPUs */
	pid_t pid;            /* procmgrd */
	int pidfd;
	int ready_fd, ready_ms; /* its ready line, read in user_init; -1: read */
	uint32_t tasks_exited;
};

/* The step's identity, node list, ports and paths, from Slurm and the
 * site's configuration. 0, or -1 with err. */
int pm_node_prepare(spank_t sp, struct pm_node *n, char *err, size_t errlen);
void pm_node_free(struct pm_node *n);

/* Messages to the user, always prefixed with the plugin's name. */
#define pm_err(...) slurm_error(PM_NAME ": " __VA_ARGS__)
#define pm_info(...) slurm_info(PM_NAME ": " __VA_ARGS__)

int pm_slurmd_init(int ac, char **av);
int pm_local_init(spank_t sp);
int pm_local_post_opt(spank_t sp);
int pm_local_mpi(void);
int pm_local_sweep(spank_t sp);
int pm_remote_post_opt(spank_t sp);
int pm_remote_user_init(spank_t sp);
int pm_remote_task_init(spank_t sp);
int pm_remote_task_exit(spank_t sp);
int pm_remote_exit(spank_t sp);

#endif
