/* With spares, a node whose parent is lost finds another: its ancestors,
 * nearest first, then the root's children in order (the machine says who:
 * pm_gen_parent_candidates). Each gets the same HELLO as a parent, and has
 * a bounded time to WELCOME us. A child of the root that nobody answers
 * takes the root's place; any other node ends its part (it is the one cut
 * off). */
#include "step.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "common/tree.h"
#include "io/tcp.h"

/* Long enough for a loaded node's procmgrd to answer, short enough that a
 * silent candidate costs little: the peer timeout's third, at least 1 s. */
static unsigned attach_ms(const struct pm_step *s)
{
	unsigned t = s->peer_timeout_ms / 3;

	return t < 1000 ? 1000 : t;
}

static void try_next(struct pm_step *s);

/* Rounds over the candidates go on while one says busy, until the stop's
 * bound since the search began: then this node is the one cut off. */
#define PM_ATTACH_PAUSE_MS 200
static bool again(const struct pm_step *s)
{
	unsigned bound = s->gen.cf.stop_bound_ms ? s->gen.cf.stop_bound_ms : 10000;

	return pm_now_ms() + PM_ATTACH_PAUSE_MS < s->attach.t0 + bound;
}

static void give_up(struct pm_step *s)
{
	struct pm_attach *a = &s->attach;
	char text[512];

	a->active = false;
	pm_timer_set(a->timer_w.fd, 0, 0);
	if (pm_tree_depth(s->node, s->fanout) == 1) {
		snprintf(text, sizeof(text), "the root is lost (%s) and no lower child of it "
			 "answered", a->why);
		pm_gen_take_root(&s->gen, text);
		pm_step_over(s);
		return;
	}
	/* The parent that was lost, not the last candidate asked. */
	snprintf(text, sizeof(text), "procmgr: lost node %s (%s) and no other node above "
		 "answered; this node ends its part", pm_gen_node_name(&s->gen, a->lost),
		 a->why);
	/* The rest of the step goes on without us: not a failure of the job. */
	pm_gen_leave(&s->gen, text);
	pm_step_over(s);
}

static void on_timeout(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct pm_step *s = w->arg;
	(void)l;
	(void)ev;

	pm_timer_ack(w->fd);
	if (!s->attach.active)
		return;
	if (s->attach.pausing) {
		s->attach.pausing = false;
		try_next(s);
		return;
	}
	pm_attach_failed(s, "no answer in time");
}

static void on_connected(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct pm_step *s = w->arg;
	struct pm_attach *a = &s->attach;
	int e = 0, fd = a->fd;
	socklen_t len = sizeof(e);
	(void)ev;

	pm_loop_del(l, w);
	a->fd = -1;
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len);
	if (e) {
		close(fd);
		pm_attach_failed(s, strerror(e));
		return;
	}
	/* HELLO (tree_link.c's, a floor above: through the hook); its
	 * WELCOME or its refusal comes through tree_link.c. */
	if (!PM_HOOK(s, parent_up) || PM_HOOK(s, parent_up)(s, fd))
		pm_attach_failed(s, "cannot say hello");
}

static void try_next(struct pm_step *s)
{
	struct pm_attach *a = &s->attach;
	struct sockaddr_storage ss, self;
	socklen_t len, slen;
	char err[256], warn[256];
	int fd, c;

	if (pm_gen_terminal(&s->gen)) {
		a->active = false;
		return;
	}
	if (a->next >= a->ncand && a->busy && again(s)) {
		/* A candidate was only busy (another user's flood at its port):
		 * another round, within the stop's bound. */
		a->next = 0;
		a->busy = false;
		a->pausing = true;
		pm_timer_set(a->timer_w.fd, PM_ATTACH_PAUSE_MS, 0);
		return;
	}
	if (a->next >= a->ncand) {
		give_up(s);
		return;
	}
	c = a->cand[a->next++];
	s->parent_node = c;
	pm_log(s, "asking node %s to be our parent", s->names[c]);
	if (pm_step_resolve(s->names[c], s->port, &ss, &len, err, sizeof(err)) ||
	    pm_step_resolve(s->names[s->node], 0, &self, &slen, err, sizeof(err))) {
		pm_attach_failed(s, err);
		return;
	}
	pm_timer_set(a->timer_w.fd, attach_ms(s), 0);
	/* The same options as the first link (main.c): TCP_NODELAY, and the
	 * peer timeout as TCP_USER_TIMEOUT. */
	fd = pm_tcp_connect((struct sockaddr *)&ss, len, (struct sockaddr *)&self, slen,
			    s->peer_timeout_ms, warn, sizeof(warn), err, sizeof(err));
	if (warn[0])
		pm_log(s, "%s: %s", s->names[s->node], warn);
	if (fd < 0) {
		pm_attach_failed(s, err);
		return;
	}
	a->fd = fd;
	a->conn_w = (struct pm_watch){ .fd = fd, .fn = on_connected, .arg = s };
	if (pm_loop_add(s->loop, &a->conn_w, EPOLLOUT)) {
		close(fd);
		a->fd = -1;
		pm_attach_failed(s, strerror(errno));
	}
}

void pm_attach_failed(struct pm_step *s, const char *why)
{
	struct pm_attach *a = &s->attach;

	if (!a->active)
		return;
	pm_log(s, "node %s will not be our parent: %s", s->names[s->parent_node], why);
	if (strstr(why, "busy:"))
		a->busy = true;
	if (a->fd >= 0) {
		pm_loop_del(s->loop, &a->conn_w);
		close(a->fd);
		a->fd = -1;
	}
	if (s->parent) {
		/* Its close comes back here; not again. */
		struct pm_conn *c = s->parent;
		s->parent = NULL;
		s->parent_ok = false;
		pm_conn_free(c);
	}
	try_next(s);
}

void pm_attach_welcomed(struct pm_step *s)
{
	struct pm_attach *a = &s->attach;

	a->active = false;
	pm_timer_set(a->timer_w.fd, 0, 0);
	pm_log(s, "node %s is our parent now", s->names[s->parent_node]);
	pm_gen_parent_changed(&s->gen);
}

void pm_attach_start(struct pm_step *s, const char *why)
{
	struct pm_attach *a = &s->attach;

	if (a->active || pm_gen_terminal(&s->gen))
		return;
	pm_log(s, "lost our parent: %s", why);
	snprintf(a->why, sizeof(a->why), "%s", why);
	a->lost = s->parent_node;
	pm_gen_lost(&s->gen, s->parent_node, why);
	a->active = true;
	a->ncand = pm_gen_parent_candidates(&s->gen, a->cand, 64);
	a->next = 0;
	a->busy = a->pausing = false;
	a->t0 = pm_now_ms();
	try_next(s);
}

int pm_attach_init(struct pm_step *s)
{
	s->attach.fd = -1;
	s->attach.timer_w = (struct pm_watch){ .fd = pm_timer_new(), .fn = on_timeout, .arg = s };
	if (s->attach.timer_w.fd < 0)
		return -1;
	return pm_loop_add(s->loop, &s->attach.timer_w, EPOLLIN);
}

void pm_attach_free(struct pm_step *s)
{
	if (s->attach.fd >= 0)
		close(s->attach.fd);
	if (s->attach.timer_w.fd > 0)
		close(s->attach.timer_w.fd);
}
