/* procmgr.so entry points: one dispatch per SPANK callback, by context. */
#include <stdio.h>
#include <string.h>

#include <slurm/slurm.h>

#include "jobend.h"
#include "plugin.h"
#include "slurm_compat.h"

SPANK_PLUGIN(procmgr, 1);

#if PM_SPANK_INIT_FAILURE_MODE
/* A failed init is the job's failure, never the node's: on a bad option or
 * plugstack.conf line, 25.05's default would drain every node it ran on. */
int slurm_spank_init_failure_mode = ESPANK_JOB_FAILURE;
#endif

struct pm_plugin pm_g;

/* Slurm's configuration of the host process (srun, sbatch, slurmstepd):
 * weak, so that the plugin needs no link to a particular libslurm. */
extern slurm_conf_t slurm_conf __attribute__((weak));

/* The file our arguments came from, to name it in messages. */
static const char *pm_plugstack_path(void)
{
	if (&slurm_conf && slurm_conf.plugstack)
		return slurm_conf.plugstack;
	return "plugstack.conf";
}

static int opt_cb(int val, const char *optarg, int remote)
{
	char err[PM_ERRLEN];
	const char *name = pm_optdescs[val].name;

	if (pm_opt_parse(&pm_g.flags, name, optarg, err, sizeof(err))) {
		/* Remote, srun already refused it: only a bypass gets here. */
		if (remote)
			snprintf(pm_g.error, sizeof(pm_g.error), "%s", err);
		else
			pm_err("%s", err);
		return -1;
	}
	return 0;
}

static int register_options(spank_t sp)
{
	size_t i;

	for (i = 0; i < pm_noptdescs; i++) {
		char name[SPANK_OPTION_MAXLEN];
		struct spank_option opt = {
			.name = name,
			.arginfo = (char *)pm_optdescs[i].arginfo,
			.usage = (char *)pm_optdescs[i].usage,
			.has_arg = pm_optdescs[i].arginfo ? 1 : 0,
			.val = (int)i,
			.cb = opt_cb,
		};
		snprintf(name, sizeof(name), "procmgr%s%s",
			 pm_optdescs[i].name[0] ? "-" : "", pm_optdescs[i].name);
		if (spank_option_register(sp, &opt) != ESPANK_SUCCESS) {
			pm_err("cannot register option --%s", name);
			return -1;
		}
	}
	return 0;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	char err[PM_ERRLEN];
	spank_context_t ctx = spank_context();

	if (ctx == S_CTX_SLURMD) {
		snprintf(pm_g.plugstack, sizeof(pm_g.plugstack), "%s", pm_plugstack_path());
		return pm_slurmd_init(ac, av);
	}
	if (ctx != S_CTX_LOCAL && ctx != S_CTX_ALLOCATOR && ctx != S_CTX_REMOTE)
		return 0;
	memset(&pm_g, 0, sizeof(pm_g));
	pm_opts_init(&pm_g.flags);
	pm_site_init(&pm_g.site);
	snprintf(pm_g.plugstack, sizeof(pm_g.plugstack), "%s", pm_plugstack_path());

	if (register_options(sp))
		return -1;
	if (pm_site_parse(&pm_g.site, ac, av, pm_g.plugstack, err, sizeof(err))) {
		/* In srun, sbatch and salloc the user sees it and nothing starts;
		 * in slurmstepd it goes to the slurmd log and is told from task_init. */
		pm_err("%s", err);
		if (ctx == S_CTX_REMOTE) {
			snprintf(pm_g.error, sizeof(pm_g.error), "%s", err);
			return 0;
		}
		return -1;
	}
	return 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	switch (spank_context()) {
	case S_CTX_LOCAL:
	case S_CTX_ALLOCATOR:
		return pm_local_post_opt(sp);
	case S_CTX_REMOTE:
		return pm_remote_post_opt(sp);
	default:
		return 0;
	}
}

int slurm_spank_local_user_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (spank_context() != S_CTX_LOCAL)
		return 0;
	if (pm_local_mpi() || pm_local_sweep(sp))
		return -1;
	return pm_local_init(sp);
}

int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	return spank_remote(sp) ? pm_remote_user_init(sp) : 0;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	return spank_remote(sp) ? pm_remote_task_init(sp) : 0;
}

int slurm_spank_task_exit(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	return spank_remote(sp) ? pm_remote_task_exit(sp) : 0;
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	return spank_remote(sp) ? pm_remote_exit(sp) : 0;
}

/* slurmd's job epilog, as root, on every node of the job. */
int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	return pm_jobend_epilog(sp, ac, av, pm_plugstack_path());
}
