/* srun, sbatch and salloc: options are checked and resolved here, before a
 * job or step exists, so that bad input launches nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin.h"
#include "common/mpi.h"
#include "io/outdir.h"

/* --procmgr-output-dir here, as the user, before anything starts: made if
 * missing (on this node; each node makes its own), a directory of the
 * user's that they can write. */
static int check_output_dir(const char *dir)
{
	char err[PM_ERRLEN];
	int fd;

	if (!dir[0])
		return 0;
	fd = pm_outdir_open(dir, err, sizeof(err));
	if (fd < 0) {
		pm_err("--procmgr-output-dir=%s: %s", dir, err);
		return -1;
	}
	close(fd);
	return 0;
}
#include "sweep/sweep_file.h"

/* The job script's policy (exported by the batch step, or by salloc) is the
 * layer between the site's defaults and this command's flags. */
static int job_layer(struct pm_opts *job, char *err, size_t errlen)
{
	const char *s = getenv(PM_ENV_JOB_OPTS);

	pm_opts_init(job);
	if (!s || !*s)
		return 0;
	return pm_opts_parse_str(job, s, PM_ENV_JOB_OPTS, err, errlen);
}

/* srun resolves --mpi (or MpiDefault) into SLURM_MPI_TYPE in its own
 * environment: before init_post_opt up to 23.x, after it since 24.x, so
 * this runs in both init_post_opt and local_user_init (still before any
 * task starts). */
int pm_local_mpi(void)
{
	char err[PM_ERRLEN];

	if (spank_context() != S_CTX_LOCAL || !pm_g.resolved.enabled)
		return 0;
	if (pm_mpi_check(&pm_g.resolved, getenv("SLURM_MPI_TYPE"), err, sizeof(err))) {
		pm_err("%s", err);
		return -1;
	}
	return 0;
}

/* The trials file is read here, as the user, before a step exists: a
 * mistake in it launches nothing. Its path goes on absolute (the nodes'
 * working directory may differ). The root reads it again, knowing the
 * step's size: a trial larger than the step is refused there. */
static int sweep_check(struct pm_opts *o)
{
	char err[PM_ERRLEN], abs[PATH_MAX];
	struct pm_sweep sw;

	if (!o->sweep[0])
		return 0;
	if (!realpath(o->sweep, abs)) {
		pm_err("--procmgr-sweep=%s: cannot read the trials file: %m", o->sweep);
		return -1;
	}
	if (strlen(abs) >= sizeof(o->sweep) || strpbrk(abs, " \t\n")) {
		pm_err("--procmgr-sweep=%s: the file's full path %s must have no blanks",
		       o->sweep, abs);
		return -1;
	}
	if (pm_sweep_read(abs, o->trial_ranks ? (int)o->trial_ranks : 1, PM_MAX_TRIAL_RANKS,
			  &sw, err, sizeof(err))) {
		pm_err("--procmgr-sweep: %s", err);
		return -1;
	}
	pm_sweep_free(&sw);
	strcpy(o->sweep, abs);
	return 0;
}

/* srun, once the step exists and before any task starts: the step's size
 * is known, and a trial larger than the step, or tasks the nodes do not
 * share evenly, fail here rather than on the root's node alone (the other
 * nodes would wait for it until their connect deadline). */
int pm_local_sweep(spank_t sp)
{
	char err[PM_ERRLEN];
	uint32_t ntasks = 0, nnodes = 0;
	const struct pm_opts *o = &pm_g.resolved;
	struct pm_sweep sw;

	if (!o->enabled || !o->sweep[0])
		return 0;
	if (spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &ntasks) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_NNODES, &nnodes) != ESPANK_SUCCESS || !ntasks || !nnodes)
		return 0; /* the root checks it again */
	if (ntasks % nnodes) {
		pm_err("--procmgr-sweep needs the same number of tasks on every node (%u tasks on "
		       "%u nodes): use --ntasks-per-node=N", ntasks, nnodes);
		return -1;
	}
	if (pm_sweep_read(o->sweep, o->trial_ranks ? (int)o->trial_ranks : 1, (int)ntasks, &sw,
			  err, sizeof(err))) {
		pm_err("--procmgr-sweep: %s", err);
		return -1;
	}
	pm_sweep_free(&sw);
	return 0;
}

int pm_local_post_opt(spank_t sp)
{
	char err[PM_ERRLEN], buf[4096];
	struct pm_opts job;
	bool allocator = spank_context() == S_CTX_ALLOCATOR;

	(void)sp;
	if (job_layer(&job, err, sizeof(err))) {
		pm_err("%s", err);
		return -1;
	}
	if (pm_opts_resolve(&pm_g.resolved, &pm_g.site, allocator ? NULL : &job,
			    &pm_g.flags, err, sizeof(err))) {
		pm_err("%s", err);
		return -1;
	}

	if (check_output_dir(allocator ? pm_g.flags.output_dir : pm_g.resolved.output_dir))
		return -1;
	if (allocator) {
		/* salloc's shell inherits this; a batch script gets it from the
		 * batch step (Slurm drops spank options before its sruns). */
		if (pm_g.flags.set) {
			if (pm_opts_format(&pm_g.flags, buf, sizeof(buf)) == 0)
				setenv(PM_ENV_JOB_OPTS, buf, 1);
		}
		return 0;
	}

	if (!pm_g.resolved.enabled) {
		unsetenv(PM_ENV_STEP_REQ);
		return 0;
	}
	if (pm_local_mpi() || sweep_check(&pm_g.resolved))
		return -1;
	/* Every field, so that slurmstepd need not know the layers. */
	pm_g.resolved.set = ~0u;
	if (pm_opts_format(&pm_g.resolved, buf, sizeof(buf))) {
		pm_err("options too long to pass to the step");
		return -1;
	}
	/* Where srun runs, if on a node (a batch script's srun: the batch
	 * host): a root that finds that node lost knows srun is gone. */
	if (getenv("SLURMD_NODENAME") && *getenv("SLURMD_NODENAME"))
		setenv(PM_ENV_SRUN_NODE, getenv("SLURMD_NODENAME"), 1);
	else
		unsetenv(PM_ENV_SRUN_NODE);
	if (setenv(PM_ENV_STEP_REQ, buf, 1)) {
		pm_err("setenv %s: %m", PM_ENV_STEP_REQ);
		return -1;
	}
	if (pm_g.resolved.verbose)
		fprintf(stderr, PM_NAME ": step options: %s\n", buf);
	return 0;
}
