/* The door of the tree port: connections that have not said HELLO yet are
 * bounded in number (room of their own for each of the step's nodes, a
 * shared room for everyone else: gate_rule.h) and in time (a deadline to
 * say it), refusals are logged in summary, and running out of descriptors
 * pauses accepting instead of spinning. An ordinary user who floods the
 * port is told busy, and the step goes on. */
#include "step.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/tree.h"

static void gate_arm(struct pm_step *s)
{
	if (s->gate_armed || s->gate_w.fd < 0)
		return;
	if (pm_timer_set(s->gate_w.fd, PM_GATE_TICK_MS, PM_GATE_TICK_MS) == 0)
		s->gate_armed = true;
}

/* The window is over: what was only counted is said, and a new one may
 * start (t0 is when it does; 0 until the next refusal). */
static void window_end(struct pm_step *s, uint64_t t0)
{
	if (s->refused_more)
		pm_log(s, "%u more tree connections refused in the last %u s", s->refused_more,
		       PM_GATE_LOG_WINDOW_MS / 1000);
	s->refused_more = 0;
	s->refused_logged = 0;
	s->refused_t0 = t0;
}

/* The first PM_GATE_LOG_BURST refusals of a window in full, the others
 * counted and said in one line when the window ends. */
void pm_gate_refused(struct pm_step *s, const char *why)
{
	uint64_t now = pm_now_ms();

	if (!s->refused_t0 || now - s->refused_t0 >= PM_GATE_LOG_WINDOW_MS)
		window_end(s, now);
	if (s->refused_logged < PM_GATE_LOG_BURST) {
		s->refused_logged++;
		pm_log(s, "refused tree connection: %s", why);
	} else {
		s->refused_more++;
		gate_arm(s);
	}
}

/* The address of a peer as 16 bytes, IPv4 mapped: one key for both. */
static int addr_key(const struct sockaddr_storage *ss, uint8_t key[16])
{
	memset(key, 0, 16);
	if (ss->ss_family == AF_INET) {
		key[10] = key[11] = 0xff;
		memcpy(key + 12, &((const struct sockaddr_in *)ss)->sin_addr, 4);
		return 0;
	}
	if (ss->ss_family == AF_INET6) {
		memcpy(key, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
		return 0;
	}
	return -1;
}

static int key_cmp(const void *a, const void *b)
{
	return memcmp(a, b, 16);
}

static bool from_node(const struct pm_step *s, const uint8_t key[16])
{
	return s->nnode_addrs &&
	       bsearch(key, s->node_addrs, (size_t)s->nnode_addrs, 16, key_cmp) != NULL;
}

/* The nodes that may come to this port: its children, and with spares
 * any node of the step (a lost node's children come to an ancestor, or
 * the root's to its lowest child), up to PM_GATE_NODES_MAX names resolved
 * at start; beyond that the others share the strangers' room. */
#define PM_GATE_NODES_MAX 1024
static int node_addrs_init(struct pm_step *s)
{
	int first, n = 0, i, last;
	char err[256];

	if (s->opts.spares) {
		first = 0;
		last = s->nnodes < PM_GATE_NODES_MAX ? s->nnodes : PM_GATE_NODES_MAX;
	} else {
		last = pm_tree_children(s->node, s->fanout, s->nnodes, &first);
		last += first;
	}
	if (last <= first)
		return 0;
	s->node_addrs = calloc((size_t)(last - first), 16);
	if (!s->node_addrs)
		return -1;
	for (i = first; i < last; i++) {
		struct sockaddr_storage ss;
		socklen_t len;
		if (i == s->node || !s->names || !s->names[i])
			continue;
		if (pm_step_resolve(s->names[i], 0, &ss, &len, err, sizeof(err)) == 0 &&
		    addr_key(&ss, s->node_addrs[n]) == 0)
			n++;
	}
	qsort(s->node_addrs, (size_t)n, 16, key_cmp);
	s->nnode_addrs = n;
	return 0;
}

/* Said to a connection refused at the door, so that the procmgr command
 * (and an orphan asking for a parent) knows it was not the step's end.
 * One small frame on a fresh socket: it fits, or it is not said. */
static void say_busy(int fd)
{
	uint8_t frame[256];
	struct pm_msg m;
	int n;

	pm_msg_init(&m, PM_MSG_REFUSED);
	pm_msg_set_text(&m, "busy: too many connections at the moment; try again");
	n = pm_msg_encode(&m, frame, sizeof(frame));
	if (n > 0 && send(fd, frame, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		return;
}

static int gate_add(struct pm_step *s, struct pm_conn *c, const uint8_t key[16], bool node,
		    bool spoke)
{
	if (s->npending == s->pending_cap) {
		int n = s->pending_cap ? s->pending_cap * 2 : 8;
		struct pm_pending *p = realloc(s->pending, (size_t)n * sizeof(*p));
		if (!p)
			return -1;
		s->pending = p;
		s->pending_cap = n;
	}
	s->pending[s->npending] = (struct pm_pending){ .c = c, .t0 = pm_now_ms(), .node = node,
						       .spoke = spoke };
	memcpy(s->pending[s->npending++].src, key, 16);
	gate_arm(s);
	return 0;
}

void pm_gate_accept(struct pm_step *s, int fd, pm_msg_fn on_msg, pm_close_fn on_close)
{
	int room = PM_GATE_EXTRA;
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	uint8_t key[16];
	int i, same = 0, spoke_held = 0, silent_held = 0, oldest = -1, oldest_room = -1;
	bool node, spoke = false;
	struct pm_conn *c;
	char b;

	memset(&ss, 0, sizeof(ss));
	if (getpeername(fd, (struct sockaddr *)&ss, &len) || addr_key(&ss, key))
		memset(key, 0, sizeof(key));
	node = from_node(s, key);
	/* Read early: a stranger's request already there (the procmgr
	 * command sends it at once) is not one of a silent flood. */
	if (!node)
		spoke = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 1;
	for (i = 0; i < s->npending; i++) {
		const struct pm_pending *p = &s->pending[i];
		if (!memcmp(p->src, key, 16)) {
			same++;
			if (oldest < 0 || p->t0 < s->pending[oldest].t0)
				oldest = i;
		}
		if (p->node)
			continue;
		if (p->spoke)
			spoke_held++;
		else
			silent_held++;
		if (p->spoke == spoke && (oldest_room < 0 || p->t0 < s->pending[oldest_room].t0))
			oldest_room = i;
	}
	switch (pm_gate_decide(node, same, spoke, spoke_held, silent_held, room)) {
	case PM_GATE_OLDEST_BUSY:
		/* The oldest of its room goes, told busy; the newcomer (maybe a
		 * request a moment behind its connect) is taken. */
		if (oldest_room >= 0) {
			say_busy(s->pending[oldest_room].c->w.fd);
			pm_conn_fail(s->pending[oldest_room].c,
				     spoke ? "too many connections that have not said hello, with a "
					     "request begun (the oldest told busy)"
					   : "too many connections that have not said hello (the "
					     "oldest told busy)");
		}
		break;
	case PM_GATE_MAKE_WAY:
		pm_conn_fail(s->pending[oldest].c, "made way for a newer connection from its "
			     "node's address (no hello yet)");
		break;
	case PM_GATE_TAKE:
		break;
	}
	c = pm_conn_new(s->loop, fd, on_msg, on_close, s);
	if (!c) {
		pm_log(s, "cannot watch a tree connection: %m");
		close(fd);
		return;
	}
	if (gate_add(s, c, key, node, spoke)) {
		pm_conn_free(c);
		pm_gate_refused(s, "out of memory for a tree connection");
	}
}

bool pm_gate_may_decode(struct pm_step *s, const struct pm_conn *c)
{
	int i;

	for (i = 0; i < s->npending; i++)
		if (s->pending[i].c == c && s->pending[i].node)
			return true;
	return pm_bucket_take(&s->cred_bucket, pm_now_ms(), PM_GATE_CRED_RATE,
			      PM_GATE_CRED_BURST);
}

void pm_gate_remove(struct pm_step *s, struct pm_conn *c)
{
	int i;

	for (i = 0; i < s->npending; i++)
		if (s->pending[i].c == c) {
			s->pending[i] = s->pending[--s->npending];
			return;
		}
}

void pm_gate_pause(struct pm_step *s, int err)
{
	if (s->accept_paused || !s->listen_w)
		return;
	pm_loop_mod(s->loop, s->listen_w, 0);
	s->accept_paused = true;
	pm_gate_refused(s, err == EMFILE || err == ENFILE ?
		      "out of file descriptors: not accepting for a moment" :
		      "accept failed: not accepting for a moment");
	gate_arm(s);
}

static void gate_tick(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct pm_step *s = w->arg;
	uint64_t now = pm_now_ms();
	int i;
	(void)l;
	(void)ev;

	pm_timer_ack(w->fd);
	if (s->accept_paused && s->listen_w && pm_loop_mod(s->loop, s->listen_w, EPOLLIN) == 0)
		s->accept_paused = false;
	/* From the end: pm_conn_fail takes the entry out (child_closed). */
	for (i = s->npending - 1; i >= 0; i--)
		if (i < s->npending && now - s->pending[i].t0 >= PM_GATE_HELLO_MS)
			pm_conn_fail(s->pending[i].c, "no hello within the handshake deadline");
	if (s->refused_more && now - s->refused_t0 >= PM_GATE_LOG_WINDOW_MS)
		window_end(s, 0);
	if (!s->npending && !s->accept_paused && !s->refused_more) {
		pm_timer_set(w->fd, 0, 0);
		s->gate_armed = false;
	}
}

int pm_gate_init(struct pm_step *s)
{
	if (node_addrs_init(s))
		return -1;
	s->gate_w = (struct pm_watch){ .fd = pm_timer_new(), .fn = gate_tick, .arg = s };
	return s->gate_w.fd < 0 || pm_loop_add(s->loop, &s->gate_w, EPOLLIN) ? -1 : 0;
}

void pm_gate_free(struct pm_step *s)
{
	int i;

	/* Connections still without HELLO are the door's alone. */
	for (i = 0; i < s->npending; i++)
		pm_conn_free(s->pending[i].c);
	s->npending = 0;
	if (s->gate_w.fd >= 0)
		close(s->gate_w.fd);
	free(s->pending);
	s->pending = NULL;
	free(s->node_addrs);
	s->node_addrs = NULL;
}
