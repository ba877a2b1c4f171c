/* slurmstepd: a per-node cache of the machine's topology for the binding
 * planner. hwloc's discovery of the I/O devices costs tens of milliseconds
 * in every binding step's launch (bench/README.md, Overhead); the machine
 * does not change while it runs, so the first such step after boot writes
 * the topology as root, and later steps load that file instead. */
#ifndef PM_TOPOCACHE_H
#define PM_TOPOCACHE_H

#include <stddef.h>

/* As root (init_post_opt), once state_dir exists: write the cache unless a
 * current one is there. A failure is logged; planning then discovers live. */
void pm_topocache_refresh(void);

/* What the planner loads: the site's topology= file, else the cache if it
 * is current (written since boot, root's, writable by root only), else
 * NULL for live discovery. buf holds the cache's path. */
const char *pm_topocache_xml(char *buf, size_t len);

#endif
