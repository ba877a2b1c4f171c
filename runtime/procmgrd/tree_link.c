/* The control-tree links. Both ends prove themselves with a munge
 * credential of the job's user that names the step, both nodes and the
 * child's nonce (common/handshake.h): a child's HELLO before anything else,
 * the parent's WELCOME before the child obeys anything. Messages for the
 * parent are queued until it proved itself. Frames are fed to the state
 * machine. */
#include "step.h"
#include "sweep_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/random.h>

#include "common/handshake.h"
#include "common/tree.h"
#include "io/auth.h"
#include "query.h"
#include "state_repl.h"

/* ---- children ---- */

static void child_closed(struct pm_conn *c, const char *why)
{
	struct pm_step *s = c->w.arg;
	int idx = c->id >= 0 ? pm_gen_kid_index(&s->gen, c->id) : -1;
	struct pm_conn **slot = idx >= 0 ? pm_step_child(s, idx) : NULL;

	if (slot && *slot == c) {
		*slot = NULL;
		pm_query_child_lost(s, c->id);
		pm_gen_child_lost(&s->gen, c->id, why);
	} else {
		pm_gate_remove(s, c);
		if (why)
			pm_gate_refused(s, why);
	}
	pm_conn_free(c);
}

/* Who it is first: nothing else is told to an unknown peer. */
static int child_hello(struct pm_step *s, const struct pm_conn *c, const struct pm_msg *m,
		       struct pm_hs *h, char *err, size_t len)
{
	char payload[PM_HS_MAX];
	int idx = pm_gen_kid_index(&s->gen, m->node);
	struct pm_conn **slot = idx >= 0 ? pm_step_child(s, idx) : NULL;

	err[0] = '\0';
	if (!pm_gate_may_decode(s, c)) {
		snprintf(err, len, "busy: too many hellos to check at the moment; try again");
	} else if (pm_auth_decode(s->munge_socket, m->text, s->uid, payload, sizeof(payload), err,
				  len)) {
		if (!err[0])
			snprintf(err, len, "credential refused");
	} else if (pm_hs_parse(payload, h) || h->kind != PM_HS_HELLO) {
		snprintf(err, len, "credential is not a procmgr hello ('%.80s')", payload);
	} else if (h->job != s->job || h->step != s->stepid) {
		snprintf(err, len, "credential for another job or step (job %u step %u)", h->job,
			 h->step);
	} else if (h->from != m->node || h->to != s->node) {
		snprintf(err, len, "credential for another link (from node %d to node %d)", h->from,
			 h->to);
	} else if (pm_gen_excluded(&s->gen, m->node)) {
		snprintf(err, len, "node %d is out of the step", m->node);
	} else if (idx < 0 && !(s->opts.spares && m->node > s->node && m->node < s->nnodes)) {
		/* With spares a node whose parent is lost comes to an ancestor. */
		snprintf(err, len, "node %d is not a child of node %d", m->node, s->node);
	} else if (slot && *slot) {
		snprintf(err, len, "node %d is already connected", m->node);
	}
	return err[0] ? -1 : 0;
}

static void child_msg(struct pm_conn *c, const struct pm_msg *m)
{
	struct pm_step *s = c->w.arg;
	struct pm_msg r;

	if (c->id >= 0) {
		if (m->type == PM_MSG_EVENT) {
			pm_step_event_msg(s, m);
			return;
		}
		if (pm_query_child_msg(s, c->id, m) || pm_slowlink_child(s, m) ||
		    pm_sweep_node_child_msg(s, m))
			return;
		if (pm_gen_child_msg(&s->gen, c->id, m))
			pm_conn_drop(c, "unexpected message from a child");
		return;
	}
	if (pm_query_client(s, c, m))
		return; /* the procmgr command, not a child */
	if (pm_state_repl_hello(s, c, m))
		return; /* a node's state replication link (state_repl.c) */
	if (m->type != PM_MSG_HELLO) {
		pm_conn_drop(c, "first message is not hello");
		return;
	}
	{
		char err[256], payload[PM_HS_MAX], *cred = NULL;
		struct pm_hs h;
		if (child_hello(s, c, m, &h, err, sizeof(err))) {
			char why[400];
			pm_msg_init(&r, PM_MSG_REFUSED);
			pm_msg_set_text(&r, err);
			pm_step_send(s, c, &r);
			snprintf(why, sizeof(why), "from node %d: %s", m->node, err);
			pm_conn_drop(c, why);
			return;
		}
		/* Our proof, for this child and its nonce only. */
		h.kind = PM_HS_WELCOME;
		h.from = s->node;
		h.to = m->node;
		if (pm_hs_format(&h, payload, sizeof(payload)) ||
		    pm_auth_encode(s->munge_socket, payload, &cred, err, sizeof(err))) {
			char why[400];
			snprintf(why, sizeof(why), "cannot answer node %d: %s", m->node, err);
			pm_conn_drop(c, why);
			return;
		}
		pm_msg_init(&r, PM_MSG_WELCOME);
		pm_msg_set_text(&r, cred);
		free(cred);
	}
	{
		int idx = pm_gen_kid_index(&s->gen, m->node);
		struct pm_conn **slot;
		if (idx < 0)
			idx = pm_gen_adopt(&s->gen, m->node);
		slot = idx >= 0 ? pm_step_child(s, idx) : NULL;
		if (!slot) {
			pm_conn_drop(c, "cannot take another child");
			return;
		}
		pm_gate_remove(s, c);
		c->id = m->node;
		*slot = c;
		pm_step_send(s, c, &r);
		if (idx >= s->nchildren)
			pm_log(s, "node %s came to us: its parent was lost",
			       pm_gen_node_name(&s->gen, m->node));
		pm_gen_child_joined(&s->gen, m->node);
		if (idx < s->nchildren)
			pm_step_child_seen(s, idx);
		else /* a sweep's new root: it may have missed the reclaim */
			pm_sweep_node_adopted(s, m->node);
	}
}

void pm_step_tree_conn(struct pm_step *s, int fd)
{
	pm_gate_accept(s, fd, child_msg, child_closed);
}

/* ---- the parent ---- */

static void parent_closed(struct pm_conn *c, const char *why)
{
	struct pm_step *s = c->w.arg;
	char text[512];

	bool was_ok = s->parent_ok;

	s->parent = NULL;
	s->parent_ok = false;
	if (s->attach.active) {
		/* A candidate that closed before welcoming us. */
		pm_conn_free(c);
		pm_attach_failed(s, why ? why : "closed");
		return;
	}
	if (!pm_gen_terminal(&s->gen) && s->opts.spares && was_ok) {
		snprintf(text, sizeof(text), "node %s %s",
			 pm_gen_node_name(&s->gen, s->parent_node),
			 why ? why : "closed the connection");
		pm_conn_free(c);
		pm_attach_start(s, text);
		return;
	}
	if (!pm_gen_terminal(&s->gen)) {
		snprintf(text, sizeof(text),
			 "procmgr: lost the connection to node %s%s%s; ending the step",
			 pm_gen_node_name(&s->gen, s->parent_node),
			 why ? ": " : "", why ? why : "");
		pm_step_abort_local(s, text);
	}
	pm_conn_free(c);
}

/* Whether the WELCOME's credential is the parent's answer to our HELLO. */
static int parent_proof(struct pm_step *s, const struct pm_msg *m, char *err, size_t len)
{
	struct pm_hs h = { .kind = PM_HS_WELCOME, .job = s->job, .step = s->stepid,
			   .from = s->parent_node, .to = s->node };
	char payload[PM_HS_MAX];

	snprintf(h.nonce, sizeof(h.nonce), "%s", s->nonce);
	err[0] = '\0';
	if (pm_hs_format(&h, payload, sizeof(payload)))
		return snprintf(err, len, "no nonce"), -1;
	if (pm_auth_verify(s->munge_socket, m->text, s->uid, payload, err, len)) {
		if (!err[0])
			snprintf(err, len, "credential refused");
		return -1;
	}
	return 0;
}

/* Until the parent proved itself nothing it says is obeyed, nor shown as
 * its word: an impostor on its port can at most fail the step. */
static void parent_unproven(struct pm_step *s, const struct pm_msg *m)
{
	char text[PM_WIRE_TEXT_MAX + 256], err[256];
	const char *parent = pm_gen_node_name(&s->gen, s->parent_node);

	if (m->type == PM_MSG_WELCOME && parent_proof(s, m, err, sizeof(err)) == 0) {
		int i;
		s->parent_ok = true;
		for (i = 0; i < s->upq_len; i++)
			pm_step_send(s, s->parent, &s->upq[i]);
		s->upq_len = 0;
		if (s->told)
			s->told(s, s->told_arg);
		if (s->attach.active)
			pm_attach_welcomed(s);
		return;
	}
	if (s->attach.active) {
		/* The close tries the next. */
		char why[300];
		snprintf(why, sizeof(why), "%s %.200s", m->type == PM_MSG_REFUSED ? "refused:" :
			 "did not prove itself:", m->type == PM_MSG_REFUSED ? m->text : err);
		pm_conn_drop(s->parent, why);
		return;
	}
	if (m->type == PM_MSG_WELCOME)
		snprintf(text, sizeof(text), "procmgr: the control port of node %s did not prove "
			 "it is this step's procmgrd (%s); ending the step", parent, err);
	else if (m->type == PM_MSG_REFUSED)
		snprintf(text, sizeof(text), "procmgr: the control port of node %s refused us "
			 "(unauthenticated answer: %.200s); ending the step", parent, m->text);
	else
		snprintf(text, sizeof(text), "procmgr: the control port of node %s sent %s before "
			 "proving it is this step's procmgrd; ending the step", parent,
			 pm_msg_name(m->type));
	pm_log(s, "%s", text);
	pm_step_abort_local(s, text);
	/* Nothing more from it: closed after this frame. */
	pm_conn_drop(s->parent, "the parent did not prove itself");
}

static void parent_msg(struct pm_conn *c, const struct pm_msg *m)
{
	struct pm_step *s = c->w.arg;

	if (!s->parent_ok) {
		parent_unproven(s, m);
		return;
	}
	if (pm_query_parent_msg(s, m) || pm_slowlink_parent(s, m) || pm_sweep_node_parent_msg(s, m))
		return;
	if (pm_gen_parent_msg(&s->gen, m))
		pm_conn_drop(c, "unexpected message from the parent");
}

int pm_step_parent_up(struct pm_step *s, int fd)
{
	struct pm_msg m;
	struct pm_hs h = { .kind = PM_HS_HELLO, .job = s->job, .step = s->stepid,
			   .from = s->node, .to = s->parent_node };
	char payload[PM_HS_MAX], err[256], *cred = NULL;
	unsigned char rnd[16];

	s->parent = pm_conn_new(s->loop, fd, parent_msg, parent_closed, s);
	if (!s->parent) {
		close(fd);
		return -1;
	}
	/* A fresh nonce per connection: a WELCOME recorded on another link,
	 * or earlier on this one, does not answer this HELLO. */
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		pm_step_abort_local(s, "procmgr: getrandom failed; ending the step");
		return -1;
	}
	pm_hs_nonce_hex(rnd, s->nonce);
	snprintf(h.nonce, sizeof(h.nonce), "%s", s->nonce);
	if (pm_hs_format(&h, payload, sizeof(payload)) ||
	    pm_auth_encode(s->munge_socket, payload, &cred, err, sizeof(err))) {
		pm_step_abort_local(s, err);
		return -1;
	}
	pm_msg_init(&m, PM_MSG_HELLO);
	m.node = s->node;
	pm_msg_set_text(&m, cred);
	free(cred);
	return pm_conn_send(s->parent, &m);
}
