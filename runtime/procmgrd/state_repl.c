/* Buddy replication of the ranks' state (issue 23, item 2). Each node
 * sends its ranks' latest versions to its buddy (common/staterepl.h) over
 * a TCP link to the buddy's tree port, authenticated both ways like the
 * tree's own: a BUDDY frame with a munge credential of the job user naming
 * the step, both nodes and a fresh nonce; the buddy answers WELCOME with its
 * own credential for that nonce, and nothing is sent before it is checked.
 * Then the link carries the stream (staterepl.h's lines, a blob's bytes
 * straight from its sealed memfd with sendfile), one blob at a time, at
 * most rate bytes per second; the buddy keeps each as a replica (a sealed
 * memfd of its own) and acknowledges it, and the version becomes safe.
 *
 * When a spare takes a lost node's slot, the lost node's buddy pushes its
 * replicas to the spare the same way, then "end"; the spare's ranks' loads
 * wait for that end (at most PM_REPL_AWAIT_MS) so that they get the
 * buddy's copy instead of nothing. Replacements are read from the
 * machine's list (g->repl) at every request of the state socket and on a
 * tick, so the machine needs no new hook. */
#include "step.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/handshake.h"
#include "common/staterepl.h"
#include "common/topotree.h"
#include "io/auth.h"
#include "io/memblob.h"
#include "io/statesrv.h"
#include "io/sys.h"
#include "io/tcp.h"
#include "state_repl_int.h"




/* ---- replacements: who holds what, who waits ---- */

static void set_buddy(struct pm_state_repl *r)
{
	struct pm_step *s = r->s;
	long b = pm_repl_buddy((uint32_t)s->node, (uint32_t)s->nnodes, r->lost, r->dom);

	if (b == r->buddy)
		return;
	if (r->buddy >= 0)
		pm_log(s, "state replication: buddy now node %s (was %s)",
		       b >= 0 ? s->names[b] : "none", s->names[r->buddy]);
	r->buddy = b;
	if (r->buddy_link)
		pm_repl_link_free(r->buddy_link, "another buddy");
	pm_repl_all(&r->track, PM_RE_REBUDDY);
	r->ndrops = 0; /* the new buddy holds nothing of ours to drop */
	r->retry_at = 0;
}

static struct rlink *connect_to(struct pm_state_repl *r, int node, bool push);

static void push_lost(struct pm_state_repl *r, int lost, int spare)
{
	struct rlink *k = connect_to(r, spare, true);
	const struct pm_state_blob *b;

	if (!k)
		return;
	for (size_t i = 0; (b = pm_state_at(r->st, i)); i++) {
		struct pushed *q;
		if (!b->replica || (int)b->owner_node != lost)
			continue;
		if (!(q = realloc(k->q, (k->nq + 1) * sizeof(*q))))
			break;
		k->q = q;
		q[k->nq].meta = *b;
		q[k->nq].fd = fcntl(b->handle, F_DUPFD_CLOEXEC, 0);
		if (q[k->nq].fd >= 0)
			k->nq++;
	}
	k->rl.owner = (uint32_t)lost;
	pm_log(r->s, "state replication: node %s lost, its state (%zu blobs) to the spare %s",
	       r->s->names[lost], k->nq, r->s->names[spare]);
}

void pm_state_repl_sync(struct pm_step *s)
{
	struct pm_state_repl *r = s->repl;

	if (!r)
		return;
	for (; r->nrepl_seen < s->gen.nrepl; r->nrepl_seen++) {
		const struct pm_repl *x = &s->gen.repl[r->nrepl_seen];
		struct pm_repl_plan p;
		if (x->lost < 0 || x->lost >= s->nnodes)
			continue;
		pm_repl_on_replace((uint32_t)s->node, (uint32_t)s->nnodes, r->lost, r->dom, x->lost,
				   x->spare, &p);
		r->lost[x->lost] = true;
		if (p.push_to >= 0)
			push_lost(r, x->lost, (int)p.push_to);
		if (p.local)
			pm_log(s, "state replication: node %s lost; its state is here already",
			       s->names[x->lost]);
		if (p.await_from >= 0 && !r->ended[x->lost]) {
			r->await_from = p.await_from;
			r->await_owner = x->lost;
			r->await_until = pm_now_ms() + PM_REPL_AWAIT_MS;
			pm_log(s, "state replication: node %s lost; its state comes from node %s",
			       s->names[x->lost], s->names[p.await_from]);
		}
		if (r->await_from == x->lost)
			r->await_from = -1; /* the holder we waited for is gone */
		set_buddy(r);
	}
	if (r->await_from >= 0 && pm_now_ms() >= r->await_until) {
		pm_log(s, "state replication: node %s's state did not come from node %s in %d s; "
		       "loads go on without it", s->names[r->await_owner], s->names[r->await_from],
		       PM_REPL_AWAIT_MS / 1000);
		r->await_from = -1;
	}
	if (r->await_from < 0 && PM_HOOK(s, state_resume))
		PM_HOOK(s, state_resume)(s); /* state_link.c */
}

bool pm_state_repl_waiting(struct pm_step *s)
{
	struct pm_state_repl *r = s->repl;

	pm_state_repl_sync(s);
	return r && r->await_from >= 0;
}

/* ---- the handshake ---- */

static int verify_welcome(struct rlink *k, const struct pm_msg *m, char *err, size_t len)
{
	struct pm_step *s = k->s;
	struct pm_hs h = { .kind = PM_HS_BUDDY_WELCOME, .job = s->job, .step = s->stepid,
			   .from = k->peer, .to = s->node };
	char payload[PM_HS_MAX];

	if (m->type == PM_MSG_REFUSED)
		return snprintf(err, len, "refused: %.200s", m->text), -1;
	if (m->type != PM_MSG_WELCOME)
		return snprintf(err, len, "sent %s before proving itself", pm_msg_name(m->type)), -1;
	snprintf(h.nonce, sizeof(h.nonce), "%s", k->nonce);
	if (pm_hs_format(&h, payload, sizeof(payload)))
		return snprintf(err, len, "no nonce"), -1;
	err[0] = '\0';
	if (pm_auth_verify(s->munge_socket, m->text, s->uid, payload, err, len)) {
		if (!err[0])
			snprintf(err, len, "credential refused");
		return -1;
	}
	return 0;
}

static void on_link(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct rlink *k = w->arg;
	char err[256] = "";
	(void)l;

	if (k->connecting) {
		int e = 0;
		socklen_t el = sizeof(e);
		struct pm_msg m;
		struct pm_hs h = { .kind = PM_HS_BUDDY, .job = k->s->job, .step = k->s->stepid,
				   .from = k->s->node, .to = k->peer };
		char payload[PM_HS_MAX], *cred = NULL;
		getsockopt(w->fd, SOL_SOCKET, SO_ERROR, &e, &el);
		if (e) {
			snprintf(err, sizeof(err), "connect: %s", strerror(e));
			goto fail;
		}
		k->connecting = false;
		snprintf(h.nonce, sizeof(h.nonce), "%s", k->nonce);
		if (pm_hs_format(&h, payload, sizeof(payload)) ||
		    pm_auth_encode(k->s->munge_socket, payload, &cred, err, sizeof(err)))
			goto fail;
		pm_msg_init(&m, PM_MSG_BUDDY);
		m.node = k->s->node;
		pm_msg_set_text(&m, cred);
		free(cred);
		if (pm_repl_send_frame(w->fd, &m)) {
			snprintf(err, sizeof(err), "cannot say hello: %s", strerror(errno));
			goto fail;
		}
		pm_loop_mod(k->s->loop, w, EPOLLIN);
		return;
	}
	if (!k->proven && (ev & EPOLLIN)) {
		struct pm_msg m;
		const char *derr = NULL;
		ssize_t n = recv(w->fd, k->in + k->in_len, sizeof(k->in) - k->in_len, MSG_DONTWAIT);
		int flen;
		if (n <= 0) {
			if (n < 0 && (errno == EAGAIN || errno == EINTR))
				return;
			snprintf(err, sizeof(err), "closed before proving itself");
			goto fail;
		}
		k->in_len += (size_t)n;
		flen = pm_msg_decode((const uint8_t *)k->in, k->in_len, &m, &derr);
		if (flen == 0)
			return;
		if (flen < 0) {
			snprintf(err, sizeof(err), "%s", derr ? derr : "bad frame");
			goto fail;
		}
		if (verify_welcome(k, &m, err, sizeof(err)))
			goto fail;
		memmove(k->in, k->in + flen, k->in_len - (size_t)flen);
		k->in_len -= (size_t)flen;
		k->proven = true;
		k->r->said_fail = false;
		pm_repl_pump(k);
		return;
	}
	if (ev & EPOLLIN) {
		if (pm_repl_read_in(k, err, sizeof(err)))
			goto fail;
		if (k->push && k->end_sent && k->acked >= k->nq) {
			pm_repl_link_free(k, NULL); /* all handed over */
			return;
		}
	}
	if (ev & (EPOLLERR | EPOLLHUP) && !(ev & EPOLLIN)) {
		snprintf(err, sizeof(err), "connection error");
		goto fail;
	}
	if (ev & EPOLLOUT)
		pm_repl_pump(k);
	return;
fail:
	/* A holder closes its push link once all is handed over and
	 * acknowledged: not a failure to say. */
	if (!(k->handed && !strcmp(err, "closed")))
		pm_repl_linklog(k, k->out ? "to" : "from", err);
	pm_repl_link_free(k, err);
}

static struct rlink *link_new(struct pm_state_repl *r, int fd, int peer)
{
	struct rlink *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	k->s = r->s;
	k->r = r;
	k->peer = peer;
	k->rx_fd = k->tx_fd = -1;
	k->w = (struct pm_watch){ .fd = fd, .fn = on_link, .arg = k };
	k->tw = (struct pm_watch){ .fd = pm_timer_new(), .fn = pm_repl_on_throttle, .arg = k };
	if (k->tw.fd < 0 || pm_loop_add(r->s->loop, &k->tw, EPOLLIN)) {
		if (k->tw.fd >= 0)
			close(k->tw.fd);
		free(k);
		return NULL;
	}
	k->next = r->links;
	r->links = k;
	return k;
}

static struct rlink *connect_to(struct pm_state_repl *r, int node, bool push)
{
	struct pm_step *s = r->s;
	struct sockaddr_storage ss, self;
	socklen_t len, slen;
	char err[256], warn[256];
	unsigned char rnd[16];
	struct rlink *k;
	int fd;

	if (pm_step_resolve(s->names[node], s->port, &ss, &len, err, sizeof(err)) ||
	    pm_step_resolve(s->names[s->node], 0, &self, &slen, err, sizeof(err))) {
		pm_log(s, "state replication to node %s: %s", s->names[node], err);
		return NULL;
	}
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return NULL;
	fd = pm_tcp_connect((struct sockaddr *)&ss, len, (struct sockaddr *)&self, slen,
			    s->peer_timeout_ms, warn, sizeof(warn), err, sizeof(err));
	if (fd < 0) {
		pm_log(s, "state replication to node %s: %s", s->names[node], err);
		return NULL;
	}
	if (!(k = link_new(r, fd, node))) {
		close(fd);
		return NULL;
	}
	pm_hs_nonce_hex(rnd, k->nonce);
	k->out = true;
	k->push = push;
	k->connecting = true;
	if (pm_loop_add(s->loop, &k->w, EPOLLOUT)) {
		pm_repl_link_free(k, "cannot watch");
		return NULL;
	}
	return k;
}

/* A node's BUDDY on our tree port, not yet authenticated (tree_link.c
 * hands us every first frame of that type). */
int pm_state_repl_hello(struct pm_step *s, struct pm_conn *c, const struct pm_msg *m)
{
	struct pm_state_repl *r = s->repl;
	char err[256] = "", payload[PM_HS_MAX], *cred = NULL;
	struct pm_hs h;
	struct pm_msg w;
	struct rlink *k;
	int fd;

	if (m->type != PM_MSG_BUDDY)
		return 0;
	if (!r)
		snprintf(err, sizeof(err), "no state store on this node");
	else if (!pm_gate_may_decode(s, c))
		snprintf(err, sizeof(err), "busy: too many hellos to check at the moment; try again");
	else if (pm_auth_decode(s->munge_socket, m->text, s->uid, payload, sizeof(payload), err,
				sizeof(err)))
		err[0] ? (void)0 : (void)snprintf(err, sizeof(err), "credential refused");
	else if (pm_hs_parse(payload, &h) || h.kind != PM_HS_BUDDY)
		snprintf(err, sizeof(err), "credential is not a procmgr buddy hello");
	else if (h.job != s->job || h.step != s->stepid)
		snprintf(err, sizeof(err), "credential for another job or step");
	else if (h.from != m->node || h.to != s->node || h.from < 0 || h.from >= s->nnodes ||
		 h.from == s->node)
		snprintf(err, sizeof(err), "credential for another link (from node %d to node %d)",
			 h.from, h.to);
	else if (r->lost[h.from] || pm_gen_excluded(&s->gen, h.from))
		snprintf(err, sizeof(err), "node %d is out of the step", h.from);
	if (!err[0]) {
		h.kind = PM_HS_BUDDY_WELCOME;
		h.from = s->node;
		h.to = m->node;
		if (pm_hs_format(&h, payload, sizeof(payload)) ||
		    pm_auth_encode(s->munge_socket, payload, &cred, err, sizeof(err)))
			snprintf(err, sizeof(err), "cannot answer");
	}
	if (err[0]) {
		char why[320];
		pm_msg_init(&w, PM_MSG_REFUSED);
		pm_msg_set_text(&w, err);
		pm_step_send(s, c, &w);
		snprintf(why, sizeof(why), "state replication from node %d: %s", m->node, err);
		pm_conn_drop(c, why);
		return 1;
	}
	pm_msg_init(&w, PM_MSG_WELCOME);
	pm_msg_set_text(&w, cred);
	free(cred);
	/* The socket leaves the framed connection (dropped without a word:
	 * the peer said nothing more before our answer) for the stream. */
	fd = fcntl(c->w.fd, F_DUPFD_CLOEXEC, 0);
	pm_conn_drop(c, NULL);
	if (fd < 0 || pm_repl_send_frame(fd, &w) || !(k = link_new(r, fd, m->node))) {
		pm_log(s, "state replication from node %d: cannot answer: %s", m->node,
		       strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	k->proven = true;
	if (pm_loop_add(s->loop, &k->w, EPOLLIN)) {
		pm_repl_link_free(k, "cannot watch");
		return 1;
	}
	return 1;
}

/* ---- the ranks' saves ---- */

void pm_state_repl_saved(struct pm_step *s, int32_t grank, const char *name, uint64_t version)
{
	struct pm_state_repl *r = s->repl;

	if (!r)
		return;
	pm_state_repl_sync(s);
	if (pm_repl_saved(&r->track, grank, name, version))
		return;
	if (r->buddy < 0)
		return;
	if (!r->buddy_link && pm_now_ms() >= r->retry_at)
		r->buddy_link = connect_to(r, (int)r->buddy, false);
	if (r->buddy_link)
		pm_repl_pump(r->buddy_link);
}

void pm_state_repl_dropped(struct pm_step *s, int32_t grank)
{
	struct pm_state_repl *r = s->repl;
	size_t i;

	if (!r)
		return;
	pm_repl_forget(&r->track, grank);
	if (r->buddy < 0)
		return;
	for (i = 0; i < r->ndrops; i++)
		if (r->drops[i] == grank)
			return;
	if (r->ndrops == r->capdrops) {
		size_t cap = r->capdrops ? 2 * r->capdrops : 8;
		int32_t *d = realloc(r->drops, cap * sizeof(*d));
		if (!d) {
			pm_log(s, "state replication: out of memory: rank %d's replicas stay at node %s",
			       grank, s->names[r->buddy]);
			return;
		}
		r->drops = d;
		r->capdrops = cap;
	}
	r->drops[r->ndrops++] = grank;
	if (!r->buddy_link && pm_now_ms() >= r->retry_at)
		r->buddy_link = connect_to(r, (int)r->buddy, false);
	if (r->buddy_link)
		pm_repl_pump(r->buddy_link);
}

long pm_state_repl_buddy_of(struct pm_step *s, int node)
{
	struct pm_state_repl *r = s->repl;

	if (node < 0 || node >= s->nnodes)
		return -1;
	return pm_repl_buddy((uint32_t)node, (uint32_t)s->nnodes, r ? r->lost : NULL,
			     r ? r->dom : NULL);
}

static void on_tick(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct pm_state_repl *r = w->arg;
	(void)l;
	(void)ev;
	pm_timer_ack(w->fd);
	pm_state_repl_sync(r->s);
	if (r->buddy >= 0 && !r->buddy_link && (r->track.n || r->ndrops) &&
	    pm_now_ms() >= r->retry_at)
		r->buddy_link = connect_to(r, (int)r->buddy, false);
	if (r->buddy_link)
		pm_repl_pump(r->buddy_link);
}

void pm_state_repl_set_rate(struct pm_state_repl *r, uint64_t rate)
{
	r->rate = rate;
	r->tokens = 0;
	r->refill_ms = pm_now_ms();
}

/* The nodes' leaf switches from Slurm's topology.conf (topology/tree),
 * beside the slurm.conf that slurmstepd reads (SLURM_CONF, set by the
 * plugin from slurmstepd's own: not the user's): each node's buddy on
 * another switch. Every node reads the same file (Slurm wants it the same
 * everywhere), so all agree on every buddy. Without it, or with a node it
 * does not place, the ring order (r->dom NULL). A task's
 * SLURM_TOPOLOGY_ADDR names only its own node's switches: not enough. */
static void topology(struct pm_state_repl *r)
{
	struct pm_step *s = r->s;
	const char *conf = getenv("SLURM_CONF"), *slash;
	char path[4096], err[256] = "", *text = NULL;
	size_t len = 0, cap = 0;
	FILE *f;
	int rc;

	if (!conf || conf[0] != '/' || !(slash = strrchr(conf, '/')))
		conf = "/etc/slurm/slurm.conf", slash = conf + strlen("/etc/slurm");
	if (snprintf(path, sizeof(path), "%.*s/topology.conf", (int)(slash - conf), conf) >=
	    (int)sizeof(path))
		return;
	if (!(f = fopen(path, "re")))
		return; /* no topology/tree: the ring */
	while (!feof(f) && !ferror(f)) {
		if (cap - len < 4097) {
			size_t want = cap * 2 + 8192;
			char *t = want <= (1u << 24) ? realloc(text, want) : NULL;
			if (!t)
				break; /* larger than any topology.conf: what was read */
			text = t;
			cap = want;
		}
		len += fread(text + len, 1, cap - len - 1, f);
	}
	fclose(f);
	if (!text)
		return;
	text[len] = '\0';
	if (!(r->dom = calloc((size_t)s->nnodes, sizeof(*r->dom)))) {
		free(text);
		return;
	}
	rc = pm_topotree_domains(text, s->names, (uint32_t)s->nnodes, r->dom, err, sizeof(err));
	free(text);
	if (rc < 2) {
		if (rc < 0)
			pm_log(s, "state replication: %s (%s); buddies in ring order", err, path);
		free(r->dom);
		r->dom = NULL;
		return;
	}
	pm_log(s, "state replication: buddies on another leaf switch (%s: the step on %d)", path,
	       rc);
}

struct pm_state_repl *pm_state_repl_new(struct pm_step *s, struct pm_state_store *st,
					uint64_t rate)
{
	struct pm_state_repl *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->s = s;
	r->sync = pm_state_repl_sync;
	r->st = st;
	r->rate = rate;
	r->refill_ms = pm_now_ms();
	r->await_from = -1;
	r->lost = calloc((size_t)s->nnodes, sizeof(*r->lost));
	r->ended = calloc((size_t)s->nnodes, sizeof(*r->ended));
	topology(r);
	r->buddy = pm_repl_buddy((uint32_t)s->node, (uint32_t)s->nnodes, NULL, r->dom);
	r->tick = (struct pm_watch){ .fd = pm_timer_new(), .fn = on_tick, .arg = r };
	if (!r->lost || !r->ended || r->tick.fd < 0 ||
	    pm_timer_set(r->tick.fd, PM_REPL_TICK_MS, PM_REPL_TICK_MS) ||
	    pm_loop_add(s->loop, &r->tick, EPOLLIN)) {
		if (r->tick.fd >= 0)
			close(r->tick.fd);
		free(r->lost);
		free(r->ended);
		free(r->dom);
		free(r);
		return NULL;
	}
	return r;
}

static bool same_file(int a, const struct stat *sb)
{
	struct stat sa;

	return a >= 0 && !fstat(a, &sa) && sa.st_dev == sb->st_dev && sa.st_ino == sb->st_ino;
}

bool pm_state_repl_reading(struct pm_step *s, int handle)
{
	struct pm_state_repl *r = s->repl;
	struct stat sb;

	if (!r)
		return false;
	if (fstat(handle, &sb))
		return true; /* cannot tell: kept from the rank */
	for (struct rlink *k = r->links; k; k = k->next) {
		if (same_file(k->tx_fd, &sb))
			return true;
		for (size_t i = k->iq; i < k->nq; i++)
			if (same_file(k->q[i].fd, &sb))
				return true;
	}
	return false;
}

void pm_state_repl_counts(const struct pm_state_repl *r, uint64_t *replicated,
			  uint64_t *received, long *buddy)
{
	*replicated = r ? r->replicated : 0;
	*received = r ? r->received : 0;
	*buddy = r ? r->buddy : -1;
}

void pm_state_repl_free(struct pm_state_repl *r)
{
	if (!r)
		return;
	while (r->links)
		pm_repl_link_free(r->links, NULL);
	pm_loop_del(r->s->loop, &r->tick);
	close(r->tick.fd);
	pm_repl_track_free(&r->track);
	free(r->drops);
	free(r->lost);
	free(r->ended);
	free(r->dom);
	free(r);
}
