/* The control-tree links: children that connect to us (each must prove with
 * a munge credential that it runs as the job's user, for this step, before
 * anything else), and our connection to the parent (messages for it are
 * queued until it accepted us). Frames are fed to the state machine. */
#include "step.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/tree.h"
#include "io/auth.h"

/* ---- children ---- */

static void child_closed(struct pm_conn *c, const char *why)
{
	struct pm_step *s = c->w.arg;
	int idx = c->id >= 0 ? c->id - s->child_first : -1;

	if (idx >= 0 && idx < s->nchildren && s->children[idx] == c) {
		s->children[idx] = NULL;
		pm_gen_child_lost(&s->gen, c->id, why);
	} else if (why) {
		pm_log(s, "refused tree connection: %s", why);
	}
	pm_conn_free(c);
}

/* Who it is first: nothing else is told to an unknown peer. */
static int child_hello(struct pm_step *s, const struct pm_msg *m, char *err, size_t len)
{
	char payload[128];
	int idx = m->node - s->child_first;

	err[0] = '\0';
	pm_auth_payload(payload, sizeof(payload), s->job, s->stepid);
	if (pm_auth_verify(s->munge_socket, m->text, s->uid, payload, err, len)) {
		if (!err[0])
			snprintf(err, len, "credential refused");
	} else if (idx < 0 || idx >= s->nchildren) {
		snprintf(err, len, "node %d is not a child of node %d", m->node, s->node);
	} else if (s->children[idx]) {
		snprintf(err, len, "node %d is already connected", m->node);
	}
	return err[0] ? -1 : 0;
}

static void child_msg(struct pm_conn *c, const struct pm_msg *m)
{
	struct pm_step *s = c->w.arg;
	struct pm_msg r;

	if (c->id >= 0) {
		if (pm_gen_child_msg(&s->gen, c->id, m))
			pm_conn_drop(c, "unexpected message from a child");
		return;
	}
	if (m->type != PM_MSG_HELLO) {
		pm_conn_drop(c, "first message is not hello");
		return;
	}
	{
		char err[256];
		if (child_hello(s, m, err, sizeof(err))) {
			/* pm_conn_drop keeps the pointer until on_close. */
			static char why[400];
			pm_msg_init(&r, PM_MSG_REFUSED);
			pm_msg_set_text(&r, err);
			pm_step_send(s, c, &r);
			snprintf(why, sizeof(why), "from node %d: %s", m->node, err);
			pm_conn_drop(c, why);
			return;
		}
	}
	c->id = m->node;
	s->children[m->node - s->child_first] = c;
	pm_msg_init(&r, PM_MSG_WELCOME);
	pm_step_send(s, c, &r);
	pm_gen_child_joined(&s->gen, m->node);
	pm_step_child_seen(s, m->node - s->child_first);
}

void pm_step_tree_conn(struct pm_step *s, int fd)
{
	if (!pm_conn_new(s->loop, fd, child_msg, child_closed, s)) {
		pm_log(s, "cannot watch a tree connection: %m");
		close(fd);
	}
}

/* ---- the parent ---- */

static void parent_closed(struct pm_conn *c, const char *why)
{
	struct pm_step *s = c->w.arg;
	char text[512];

	s->parent = NULL;
	s->parent_ok = false;
	if (!pm_gen_terminal(&s->gen)) {
		snprintf(text, sizeof(text),
			 "procmgr: lost the connection to node %s%s%s; ending the step",
			 pm_gen_node_name(&s->gen, pm_tree_parent(s->node, s->fanout)),
			 why ? ": " : "", why ? why : "");
		pm_step_abort_local(s, text);
	}
	pm_conn_free(c);
}

static void parent_msg(struct pm_conn *c, const struct pm_msg *m)
{
	struct pm_step *s = c->w.arg;
	char text[PM_WIRE_TEXT_MAX + 64];
	int i;

	switch (m->type) {
	case PM_MSG_WELCOME:
		s->parent_ok = true;
		for (i = 0; i < s->upq_len; i++)
			pm_step_send(s, c, &s->upq[i]);
		s->upq_len = 0;
		return;
	case PM_MSG_REFUSED:
		snprintf(text, sizeof(text), "procmgr: the parent node refused us: %s", m->text);
		pm_step_abort_local(s, text);
		return;
	default:
		if (pm_gen_parent_msg(&s->gen, m))
			pm_conn_drop(c, "unexpected message from the parent");
	}
}

int pm_step_parent_up(struct pm_step *s, int fd)
{
	struct pm_msg m;
	char payload[128], err[256], *cred = NULL;

	s->parent = pm_conn_new(s->loop, fd, parent_msg, parent_closed, s);
	if (!s->parent) {
		close(fd);
		return -1;
	}
	pm_auth_payload(payload, sizeof(payload), s->job, s->stepid);
	if (pm_auth_encode(s->munge_socket, payload, &cred, err, sizeof(err))) {
		pm_step_abort_local(s, err);
		return -1;
	}
	pm_msg_init(&m, PM_MSG_HELLO);
	m.node = s->node;
	pm_msg_set_text(&m, cred);
	free(cred);
	return pm_conn_send(s->parent, &m);
}
