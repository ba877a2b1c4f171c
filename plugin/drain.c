#include "drain.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

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
	msg.reason_uid = (uint32_t)getuid();
	if (slurm_update_node(&msg) != SLURM_SUCCESS) {
		int e = slurm_get_errno();
		snprintf(err, errlen, "cannot drain node %s: %s", node, slurm_strerror(e));
		return -1;
	}
	return 0;
}
