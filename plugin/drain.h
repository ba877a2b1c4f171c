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

struct pm_node;
/* At step end, as root: if procmgrd left a health report (contract.h) for
 * one of the site's own checks and the site drains (drain=yes), run that
 * check again here and drain the node if it fails again. The report is
 * removed. Says what it did in slurmd's log. */
void pm_drain_maybe(const struct pm_node *n);

#endif
