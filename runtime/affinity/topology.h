/* Fill the planner's node model from hwloc: live discovery, or an hwloc
 * XML export (a site's topology= file, a test fixture). */
#ifndef PM_TOPOLOGY_H
#define PM_TOPOLOGY_H

#include <stddef.h>

#include "affinity.h"

/* xml NULL or "": discover this machine. Returns 0, or -1 with the reason
 * (naming the file) in err. */
int pm_topo_load(struct pm_topo *t, const char *xml, char *err, size_t errlen);

/* Discover this machine as pm_topo_load does and export it as hwloc XML
 * in *xml (malloc'd, len bytes, NUL-terminated beyond them), every CPU and
 * memory node included (allowed or not to this process), so that a later
 * pm_topo_load of the file written from it, by any process, sees what live
 * discovery shows an unrestricted one. 0, or -1 with err. */
int pm_topo_export_xml(char **xml, size_t *len, char *err, size_t errlen);

#endif
