#include "common/mpi.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Slurm's plugins whose server a task's MPI_Init talks to: pmix (pmix_v3,
 * pmix_v4, ...) and pmi2. "none" leaves wire-up to the MPI library
 * (e.g. torch's own store), which procmgr restarts fine. */
static bool served_by_stepd(const char *t)
{
	return t && (!strncmp(t, "pmix", 4) || !strcmp(t, "pmi2"));
}

static bool restarts(const struct pm_opts *o)
{
	return o->enabled && ((o->restart != PM_RESTART_NEVER && o->restart_max != 0) ||
			      o->spares > 0);
}

int pm_mpi_check(const struct pm_opts *resolved, const char *mpi_type, char *err, size_t errlen)
{
	if (!served_by_stepd(mpi_type) || !restarts(resolved))
		return 0;
	snprintf(err, errlen,
		 "procmgr's restarts (--procmgr-restart or the site's default_restart%s) cannot "
		 "be used with --mpi=%s: Slurm's %s server lives in "
		 "slurmstepd and serves one launch per step, so a restarted rank's MPI_Init "
		 "would fail. Run MPI programs with --procmgr-restart=never (supervision, "
		 "health checks and binding still apply) or without --mpi (torch.distributed "
		 "and other libraries that wire up themselves restart fine)",
		 resolved->spares > 0 ? ", --procmgr-spares" : "", mpi_type,
		 strncmp(mpi_type, "pmix", 4) ? "PMI2" : "PMIx");
	return -1;
}
