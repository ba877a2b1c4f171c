/* What differs between the Slurm releases procmgr.so builds for (22.05 to
 * 26.05), in one place. configure reads the release from
 * slurm/slurm_version.h and tests for the declarations (config.h); the
 * plugin is built once per release anyway (Slurm loads a SPANK plugin only
 * into the major.minor it was built for). */
#ifndef PM_SLURM_COMPAT_H
#define PM_SLURM_COMPAT_H

#include "config.h"

#include <slurm/slurm.h>
#include <slurm/slurm_version.h>

/* 23.11 made hostlist_t a struct, handled by pointer; before, hostlist_t
 * was itself the pointer. */
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0)
typedef hostlist_t *pm_hostlist_t;
#else
typedef hostlist_t pm_hostlist_t;
#endif

/* slurm_get_errno() is gone in 24.11; libslurm has set errno itself in
 * every release since 22.05, so plain errno is right everywhere. */

/* 25.05: a required plugin whose init fails drains the node unless it says
 * a failure is the job's (a user's bad option must never drain a node). */
#if HAVE_DECL_ESPANK_JOB_FAILURE
#define PM_SPANK_INIT_FAILURE_MODE 1
#else
#define PM_SPANK_INIT_FAILURE_MODE 0
#endif

/* Who set a node's reason (sinfo -R's user): up to 25.11 the update
 * request says it (scontrol sends its own uid); 26.05 dropped the field and
 * slurmctld records the request's authenticated sender, which is the same
 * uid for the plugin (root in slurmstepd). */
static inline void pm_node_msg_set_reason_uid(update_node_msg_t *m, uint32_t uid)
{
#if HAVE_UPDATE_NODE_MSG_T_REASON_UID
	m->reason_uid = uid;
#else
	(void)m;
	(void)uid;
#endif
}

/* spank_prepend_task_argv (23.11+) is not used: it gives what writing the
 * task's argv[0] gives (slurmstepd execs procmgr-rank, which finds the
 * command on PATH itself, after TaskProlog either way), but would hand
 * procmgr-rank the command in a second form on some releases only. */

#endif
