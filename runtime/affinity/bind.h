/* Affinity for the plugin: plan once per node per step, apply in each
 * task. Rules: docs/affinity.md. */
#ifndef PM_BIND_H
#define PM_BIND_H

#include <stddef.h>

struct pm_bind_plan; /* opaque */

/* Once per node per step, in slurmstepd before tasks fork.
 * topology_xml: NULL or "" for live hwloc discovery, else an hwloc XML file.
 * what: PM_BIND_* mask (options.h); PM_BIND_MEM_STRICT: strict memory policy.
 * allowed_cpus: OS cpu list such as "0-7,16-23" (the process's affinity),
 * NULL for every cpu of the node.
 * visible_gpus: the CUDA_VISIBLE_DEVICES-style list Slurm set (GPU indices
 * in PCI bus id order, or PCI bus ids), NULL or "" for every GPU.
 * Returns 0 with *out set, or -1 with the reason in err. */
int pm_bind_plan_node(const char *topology_xml, unsigned what, int local_ntasks,
		      const char *allowed_cpus, const char *visible_gpus,
		      struct pm_bind_plan **out, char *err, size_t errlen);

/* In each task just before exec (task_init, as the user): CPU affinity,
 * memory policy and environment of the calling process for local_rank.
 * Never widens: the plan is intersected with the current cpu affinity and
 * allowed memory nodes; where they are already tighter they are kept and
 * msg says so. set_env returns 0 on success; get_env returns 0 when the
 * variable is set (OMP_NUM_THREADS is then left alone). msg receives
 * remarks for --procmgr-verbose ("" when none). Returns 0, or -1 with the
 * error in msg. */
int pm_bind_apply_rank(const struct pm_bind_plan *p, int local_rank,
		       int (*set_env)(void *ctx, const char *name, const char *value),
		       int (*get_env)(void *ctx, const char *name, char *buf, size_t len),
		       void *ctx, char *msg, size_t msglen);

void pm_bind_plan_free(struct pm_bind_plan *p);

/* For procmgr bind --explain and the tests. */
struct pm_plan;
struct pm_topo;
const struct pm_plan *pm_bind_plan_get(const struct pm_bind_plan *p);
const struct pm_topo *pm_bind_plan_topo(const struct pm_bind_plan *p);
/* The environment variables of local_rank, through set_env, as
 * pm_bind_apply_rank sets them; cpus: the cpu set the rank ends up with
 * (NULL: the plan's), for OMP_NUM_THREADS. */
struct pm_cpuset;
int pm_bind_rank_env(const struct pm_bind_plan *p, int local_rank, const struct pm_cpuset *cpus,
		     int (*set_env)(void *ctx, const char *name, const char *value),
		     int (*get_env)(void *ctx, const char *name, char *buf, size_t len),
		     void *ctx, char *msg, size_t msglen);

#endif
