/* Draining a node whose health check failed, through Slurm's API. Done by
 * the plugin as root inside slurmstepd (site policy drain=yes), never by
 * procmgrd, which runs as the job's user and has no right to. */
#ifndef PM_DRAIN_H
#define PM_DRAIN_H

#include <stddef.h>

/* Sets node (a Slurm node name, e.g. $SLURMD_NODENAME) to DRAIN with the
 * reason "procmgr: REASON" (the prefix is added unless reason already has
 * it; callers pass "<check>: <reason>"). Returns 0, or -1 with err naming
 * the node and Slurm's error text.
 *
 * Uses slurm_init_update_node_msg and slurm_update_node without linking
 * libslurm: inside slurmstepd they resolve from libslurmfull.so, which the
 * daemon already has loaded (a second libslurm would clash with it). */
int pm_drain_node(const char *node, const char *reason, char *err, size_t errlen);

#endif
