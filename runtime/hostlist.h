/* Just enough of Slurm's host list syntax for the plugin, which must not
 * link libslurm (slurmstepd has its own copy). Pure. */
#ifndef PM_HOSTLIST_H
#define PM_HOSTLIST_H

#include <stddef.h>

/* The first host of a list such as "node[01-04,7],gpu3" ("node01"). */
int pm_hostlist_first(const char *list, char *buf, size_t len);
/* "20017-20019" or "20017,20019": the first port and how many there are. */
int pm_ports_parse(const char *s, unsigned *first, unsigned *count);

#endif
