#include "drain.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "health/health.h"
#include "plugin.h"
#include "slurm_compat.h"

#define PM_DRAIN_PREFIX "procmgr: "

int pm_drain_node(const char *node, const char *reason, char *err, size_t errlen)
{
	update_node_msg_t msg;
	char text[512];
	char *p;

	if (!node || !*node) {
		snprintf(err, errlen, "cannot drain: no node name");
		return -1;
	}
	if (!reason || !*reason)
		reason = "health check failed";
	/* Admins grep sinfo -R for who drained a node: always say procmgr. */
	snprintf(text, sizeof(text), "%s%s",
		 strncmp(reason, PM_DRAIN_PREFIX, strlen(PM_DRAIN_PREFIX)) ? PM_DRAIN_PREFIX : "",
		 reason);
	/* One line: sinfo -R and scontrol show node print it as is. */
	for (p = text; *p; p++)
		if (iscntrl((unsigned char)*p))
			*p = ' ';
	slurm_init_update_node_msg(&msg);
	msg.node_names = (char *)node;
	msg.node_state = NODE_STATE_DRAIN;
	msg.reason = text;
	/* The request comes from root: record root as who set the reason, as
	 * scontrol does, rather than leave slurmctld to guess. */
	pm_node_msg_set_reason_uid(&msg, (uint32_t)getuid());
	if (slurm_update_node(&msg) != SLURM_SUCCESS) {
		int e = errno;
		snprintf(err, errlen, "cannot drain node %s: %s", node, slurm_strerror(e));
		return -1;
	}
	return 0;
}

/* Our node's Slurm name: the step's node list at our index.
 * slurm_hostlist_* come from the Slurm library slurmstepd has loaded. */
static void this_node_name(const struct pm_node *n, char *buf, size_t len)
{
	pm_hostlist_t hl = slurm_hostlist_create(n->nodelist);
	char *h = NULL;
	uint32_t i;

	buf[0] = '\0';
	if (!hl)
		return;
	for (i = 0; i <= n->nodeid; i++) {
		free(h);
		h = slurm_hostlist_shift(hl);
		if (!h)
			break;
	}
	if (h)
		snprintf(buf, len, "%s", h);
	free(h);
	slurm_hostlist_destroy(hl);
}

/* procmgrd is the user's: a job's user must not be able to drain a node at
 * will. Only a check of the site's own list counts. */
static bool site_check(const char *item)
{
	char list[PM_LIST_MAX], *save = NULL, *tok;

	snprintf(list, sizeof(list), "%s", pm_g.site.health);
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (!strcmp(tok, item))
			return true;
	return false;
}

/* The report's line; removed once read. -1 if there is none. The file is
 * in the user's directory and we are root: never follow a link, never
 * block (a FIFO planted under its name would hold slurmstepd in open() for
 * ever), take only a regular file of the job's user with one link, read a
 * bounded line. */
static int take_report(const char *path, uid_t uid, struct pm_report *r)
{
	char line[sizeof(r->check) + sizeof(r->reason) + 4];
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	struct stat st;
	ssize_t n;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
	    (st.st_uid != uid && st.st_uid != 0)) {
		pm_err("ignoring %s: not a regular file of the job's user", path);
		close(fd);
		return -1;
	}
	n = read(fd, line, sizeof(line) - 1);
	close(fd);
	line[n > 0 ? n : 0] = '\0';
	line[strcspn(line, "\n")] = '\0';
	unlink(path);
	return pm_report_parse(line, r);
}

/* Runs check as root; 0 if it passes, else why in reason. */
static int recheck(const char *item, char *reason, size_t len)
{
	struct pm_check check;
	struct pm_health *h = NULL;
	struct pm_health_result res;
	struct pm_health_ctx ctx = { .timeout_ms = pm_g.site.health_timeout_ms };
	char err[PM_ERRLEN];
	int rc = -1;

	if (pm_check_parse(item, &check, err, sizeof(err)) ||
	    pm_health_open(&h, &ctx, err, sizeof(err))) {
		pm_err("cannot re-run '%s' before draining: %s", item, err);
		goto out;
	}
	rc = pm_health_run(h, &check, 1, &res) == 0 ? 0 : 1;
	/* sinfo -R shows what comes first: the check by a short name, then
	 * what is wrong; the whole item is in slurmd's log. */
	if (rc)
		snprintf(reason, len, "%s: %s", pm_check_short(item), res.reason);
out:
	if (h)
		pm_health_close(h);
	return rc;
}

void pm_drain_maybe(const struct pm_node *n)
{
	struct pm_report r;
	char node[256], reason[512], err[PM_ERRLEN];

	if (take_report(n->report, n->uid, &r) || !pm_g.site.drain)
		return;
	if (!site_check(r.check)) {
		pm_info("not draining for '%s': not one of the site's checks", r.check);
		return;
	}
	this_node_name(n, node, sizeof(node));
	if (!node[0]) {
		pm_err("cannot drain for '%s': this node's name is unknown", r.check);
		return;
	}
	/* As procmgrd ran it: site scripts learn where they run. */
	setenv("SLURMD_NODENAME", node, 1);
	switch (recheck(r.check, reason, sizeof(reason))) {
	case 0:
		pm_info("not draining %s: '%s' passes when run as root", node, r.check);
		break;
	case 1:
		if (pm_drain_node(node, reason, err, sizeof(err)))
			pm_err("%s", err);
		else
			pm_info("drained node %s: %s", node, reason);
		break;
	default:
		break;
	}
}
