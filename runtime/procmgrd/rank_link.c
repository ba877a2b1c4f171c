/* The unix-socket links to this node's rank supervisors: who may connect,
 * their HELLO, then their frames, fed to the state machine. */
#include "step.h"

#include <sys/socket.h>
#include <unistd.h>

static void rank_closed(struct pm_conn *c, const char *why)
{
	struct pm_step *s = c->w.arg;

	if (c->id >= 0 && s->ranks[c->id] == c) {
		s->ranks[c->id] = NULL;
		pm_gen_rank_gone(&s->gen, c->id, why);
	} else if (why) {
		pm_log(s, "rank connection closed: %s", why);
	}
	pm_conn_free(c);
	pm_step_over(s);
}

static void rank_msg(struct pm_conn *c, const struct pm_msg *m)
{
	struct pm_step *s = c->w.arg;

	if (c->id >= 0) {
		if (pm_gen_rank_msg(&s->gen, c->id, m))
			pm_conn_drop(c, "unexpected message from a rank");
		return;
	}
	/* HELLO: node is the local rank, rank the global one. */
	if (m->type != PM_MSG_RANK_HELLO || m->node < 0 || m->node >= s->ntasks_local ||
	    s->ranks[m->node]) {
		pm_conn_drop(c, "bad or duplicate rank hello");
		return;
	}
	c->id = m->node;
	s->ranks[c->id] = c;
	if (pm_gen_rank_hello(&s->gen, c->id, m->rank)) {
		s->ranks[c->id] = NULL;
		c->id = -1;
		pm_conn_drop(c, "a second supervisor for the same rank");
	}
}

void pm_step_rank_conn(struct pm_step *s, int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	/* Only the job's user (and root) may talk to procmgrd. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) ||
	    (cred.uid != s->uid && cred.uid != 0)) {
		pm_log(s, "refused a local connection from uid %u",
		       len == sizeof(cred) ? (unsigned)cred.uid : 0u);
		close(fd);
		return;
	}
	if (!pm_conn_new(s->loop, fd, rank_msg, rank_closed, s)) {
		pm_log(s, "cannot watch a rank connection: %m");
		close(fd);
	}
}
