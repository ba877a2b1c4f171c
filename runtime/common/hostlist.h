/* Just enough of Slurm's host list syntax for the plugin, which must not
 * link libslurm (slurmstepd has its own copy). Pure. */
#ifndef PM_HOSTLIST_H
#define PM_HOSTLIST_H

#include <stddef.h>

/* The first host of a list such as "node[01-04,7],gpu3" ("node01"). */
int pm_hostlist_first(const char *list, char *buf, size_t len);
/* Every host of a list, in order: "n[01-03,7],gpu3" -> n01 n02 n03 n07 gpu3.
 * One bracket group per name (Slurm's node names). *out is a malloc'ed
 * array of malloc'ed names; returns how many, or -1 for a malformed list
 * or one longer than max hosts. */
int pm_hostlist_expand(const char *list, int max, char ***out);
void pm_hostlist_free(char **names, int n);
/* "20017-20019" or "20017,20019": the first port and how many there are. */
int pm_ports_parse(const char *s, unsigned *first, unsigned *count);

#endif
