/* check-config's look at the cluster and this node: the plugin's Slurm
 * release against the running Slurm's (slurmctld, each node), the
 * reserved ports, state_dir, metrics_dir, the site's health scripts,
 * drain. Problems go to stderr as "WHERE: ...", once each. */
#ifndef PM_CHECK_CLUSTER_H
#define PM_CHECK_CLUSTER_H

#include "common/options.h"

/* The number of problems found; notes (what could not be asked) go to
 * stdout. so: the plugin file Slurm would load. */
int pm_check_cluster(const char *where, const char *so, const struct pm_site *s);

#endif
