/* Which MPI launches procmgr can restart. Pure logic. */
#ifndef PM_MPI_H
#define PM_MPI_H

#include <stddef.h>

#include "common/options.h"

/* 0 if a step with the resolved options can run under the srun MPI plugin
 * mpi_type (SLURM_MPI_TYPE as srun resolved it: --mpi, else MpiDefault; NULL
 * or "none" for none); -1 with the reason in err if it cannot: Slurm's PMIx
 * and PMI2 servers live in slurmstepd and serve one launch per step, so a
 * restarted generation's MPI_Init fails. */
int pm_mpi_check(const struct pm_opts *resolved, const char *mpi_type, char *err, size_t errlen);

#endif
