/* slurmstepd: what this node's part of the step is, read once in
 * init_post_opt from Slurm and the site's configuration. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/slurm.h>

#include "common/hostlist.h"
#include "plugin.h"

/* slurmstepd's own configuration, for the munge socket (weak: no link to a
 * particular libslurm). */
extern slurm_conf_t slurm_conf __attribute__((weak));

static void munge_socket_from_conf(char *buf, size_t len)
{
	const char *a = &slurm_conf && slurm_conf.authinfo ? slurm_conf.authinfo : NULL;
	const char *p = a ? strstr(a, "socket=") : NULL;
	size_t n;

	buf[0] = '\0';
	if (!p)
		return;
	p += 7;
	n = strcspn(p, ",");
	if (n < len) {
		memcpy(buf, p, n);
		buf[n] = '\0';
	}
}

/* Slurm compresses the list, but a large step on scattered nodes of a big
 * cluster (or one named without a numeric pattern) still makes megabytes:
 * no fixed buffer. */
static char *step_nodelist(spank_t sp)
{
	size_t len = 4096;

	for (;;) {
		char *buf = malloc(len);
		spank_err_t rc;

		if (!buf)
			return NULL;
		rc = spank_getenv(sp, "SLURM_STEP_NODELIST", buf, (int)len);
		if (rc == ESPANK_SUCCESS)
			return buf;
		free(buf);
		if (rc != ESPANK_NOSPACE || len >= PM_NODELIST_MAX)
			return NULL;
		len *= 4;
	}
}

/* The step's ports: Slurm's reserved ones, else the site's range. */
static int pick_ports(spank_t sp, struct pm_node *n)
{
	char buf[256];
	unsigned first, count;

	if (spank_getenv(sp, "SLURM_STEP_RESV_PORTS", buf, sizeof(buf)) == ESPANK_SUCCESS &&
	    pm_ports_parse(buf, &first, &count) == 0 && count >= 2 && first < 65535) {
		n->port = first;
		return 0;
	}
	if (pm_g.site.port_hi) {
		unsigned slots = (pm_g.site.port_hi - pm_g.site.port_lo + 1) / 2;
		n->port = pm_g.site.port_lo + 2 * ((n->job * 7919u + n->step) % slots);
		return 0;
	}
	return -1;
}

/* procmgr-rank sits next to procmgrd (runtime= is an absolute path). */
static int shim_path(struct pm_node *n)
{
	const char *slash = strrchr(pm_g.site.runtime, '/');
	int len = (int)(slash - pm_g.site.runtime);
	int r = snprintf(n->shim, sizeof(n->shim), "%.*s/%s", len, pm_g.site.runtime,
			 PM_RANK_PROGRAM);

	return r < 0 || (size_t)r >= sizeof(n->shim) ? -1 : 0;
}

static int paths(struct pm_node *n, char *err, size_t errlen)
{
	const char *sd = pm_g.site.state_dir;

	if (pm_path_jobdir(n->jobdir, sizeof(n->jobdir), sd, n->job) ||
	    pm_path_rundir(n->rundir, sizeof(n->rundir), sd, n->job, n->step, n->nodeid) ||
	    pm_path_report(n->report, sizeof(n->report), sd, n->job, n->step, n->nodeid)) {
		snprintf(err, errlen, "state_dir %.400s is too long for the step's files", sd);
		return -1;
	}
	return 0;
}

void pm_node_free(struct pm_node *n)
{
	free(n->nodelist);
	n->nodelist = NULL;
}

int pm_node_prepare(spank_t sp, struct pm_node *n, char *err, size_t errlen)
{
	struct pm_opts all = pm_g.resolved;

	n->pid = -1;
	n->pidfd = -1;
	n->ready_fd = -1;
	if (spank_get_item(sp, S_JOB_ID, &n->job) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &n->step) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_NODEID, &n->nodeid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_NNODES, &n->nnodes) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &n->ntasks_local) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &n->ntasks) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_UID, &n->uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_GID, &n->gid) != ESPANK_SUCCESS) {
		snprintf(err, errlen, "cannot read the step's identity from Slurm");
		return -1;
	}
	n->nodelist = step_nodelist(sp);
	if (!n->nodelist) {
		snprintf(err, errlen, "cannot read the step's node list (SLURM_STEP_NODELIST "
			 "unset, or over %u MiB)", PM_NODELIST_MAX >> 20);
		return -1;
	}
	if (pm_hostlist_first(n->nodelist, n->master, sizeof(n->master))) {
		snprintf(err, errlen, "cannot read the step's node list (SLURM_STEP_NODELIST='%.400s')",
			 n->nodelist);
		return -1;
	}
	if (pm_g.resolved.spares) {
		unsigned sp_n = pm_g.resolved.spares;
		/* A spare runs exactly the ranks of the node it replaces. */
		if (sp_n >= n->nnodes) {
			snprintf(err, errlen, "--procmgr-spares=%u needs more than %u nodes; this "
				 "step has %u (srun -N)", sp_n, sp_n, n->nnodes);
			return -1;
		}
		if (n->ntasks % n->nnodes || n->ntasks_local != n->ntasks / n->nnodes) {
			snprintf(err, errlen, "--procmgr-spares needs the same number of tasks on "
				 "every node, so that a spare can take any node's ranks: this step "
				 "has %u tasks on %u nodes (%u on this one); use "
				 "--ntasks-per-node", n->ntasks, n->nnodes, n->ntasks_local);
			return -1;
		}
	}
	/* Only a name: anything else is refused, never passed on. */
	if (spank_getenv(sp, PM_ENV_SRUN_NODE, n->srun_node, sizeof(n->srun_node)) !=
		    ESPANK_SUCCESS || strpbrk(n->srun_node, " \t\n/"))
		n->srun_node[0] = '\0';
	if (pick_ports(sp, n)) {
		snprintf(err, errlen, "no port for the control tree: the site needs "
			 "MpiParams=ports=LO-HI in slurm.conf or ports=LO-HI on procmgr's "
			 "line in %.300s", pm_g.plugstack);
		return -1;
	}
	munge_socket_from_conf(n->munge_socket, sizeof(n->munge_socket));
	if (shim_path(n)) {
		snprintf(err, errlen, "runtime=%.400s is too long", pm_g.site.runtime);
		return -1;
	}
	/* Every field, so that procmgrd and the ranks need not know the
	 * layers or the site's defaults. */
	all.set = ~0u;
	if (pm_opts_format(&all, n->opts, sizeof(n->opts))) {
		snprintf(err, errlen, "options too long to pass to procmgrd");
		return -1;
	}
	return paths(n, err, errlen);
}
