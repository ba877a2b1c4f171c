/* Fill the planner's node model from hwloc: live discovery, or an hwloc
 * XML export (a site's topology= file, a test fixture). */
#ifndef PM_TOPOLOGY_H
#define PM_TOPOLOGY_H

#include <stddef.h>

#include "affinity.h"

/* xml NULL or "": discover this machine. Returns 0, or -1 with the reason
 * (naming the file) in err. */
int pm_topo_load(struct pm_topo *t, const char *xml, char *err, size_t errlen);

#endif
