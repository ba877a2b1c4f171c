/* slurmd's context: slurmd loads the plugin once when it starts and calls
 * only slurm_spank_init there. procmgr does nothing in slurmd, but says
 * which version the node loaded, and checks the site's arguments early, in
 * the slurmd log, instead of at the first supervised step. */
#include <stdio.h>

#include "config.h"
#include "plugin.h"

int pm_slurmd_init(int ac, char **av)
{
	struct pm_site site;
	char err[PM_ERRLEN];

	pm_info("procmgr %s loaded", PACKAGE_VERSION);
	pm_site_init(&site);
	/* Only logged: slurmd treats a failing init as fatal, and a node
	 * that runs no procmgr step must still start. Each step checks again. */
	if (pm_site_parse(&site, ac, av, pm_g.plugstack, err, sizeof(err)))
		pm_err("%s", err);
	return 0;
}
