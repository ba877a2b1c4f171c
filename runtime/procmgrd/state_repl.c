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
#include <unistd.h>

#include "common/handshake.h"
#include "common/staterepl.h"
#include "io/auth.h"
#include "io/memblob.h"
#include "io/statesrv.h"
#include "io/sys.h"
#include "io/tcp.h"
#include "state_repl.h"

#define PM_REPL_TICK_MS 250
#define PM_REPL_RETRY_MS 1000
#define PM_REPL_CHUNK (1u << 20)

/* A blob queued on a push link (holder to spare). */
struct pushed {
	struct pm_state_blob meta;
	int fd; /* a dup of the replica's memfd */
};

struct rlink {
	struct pm_step *s;
	struct pm_state_repl *r;
	struct pm_watch w, tw; /* the socket; the bandwidth timer */
	int peer;
	bool out, push; /* we send blobs: to our buddy, or a lost node's to a spare */
	bool proven;    /* the peer's credential was checked */
	bool connecting;
	char nonce[PM_HS_NONCE_HEX + 1];
	char in[PM_WIRE_FRAME_MAX];
	size_t in_len;
	/* receiving a blob */
	bool rx;
	struct pm_repl_line rl;
	int rx_fd;
	uint64_t rx_got;
	/* sending a blob */
	int tx_fd;
	char hdr[PM_REPL_LINE_MAX + 1];
	size_t hdr_len, hdr_off;
	uint64_t tx_off, tx_size;
	int32_t tx_grank;
	char tx_name[PM_STATE_NAME_MAX + 1];
	uint64_t tx_version;
	bool throttled;
	/* push: the queue, then "end" */
	struct pushed *q;
	size_t nq, iq, acked;
	bool end_sent;
	struct rlink *next;
};

struct pm_state_repl {
	struct pm_step *s;
	struct pm_state_store *st;
	struct pm_repl_track track;
	struct rlink *links, *buddy_link;
	long buddy;
	int nrepl_seen;
	bool *lost;
	bool *ended; /* by owner node: its holder said end */
	long await_from;
	int await_owner;
	uint64_t await_until;
	uint64_t rate, tokens, refill_ms; /* bytes per second */
	uint64_t retry_at;
	struct pm_watch tick;
	uint64_t replicated, received, bytes_out;
	bool said_replicated, said_received, said_fail;
};

static void link_free(struct rlink *k, const char *why);
static void pump(struct rlink *k);

static void linklog(struct rlink *k, const char *what, const char *why)
{
	/* The link to the buddy is retried every PM_REPL_RETRY_MS: its
	 * failures are said once until it works again. */
	if (k->r->buddy_link == k && k->r->said_fail)
		return;
	if (k->r->buddy_link == k)
		k->r->said_fail = true;
	pm_log(k->s, "state replication %s node %s: %s", what, k->s->names[k->peer], why);
}

/* ---- replacements: who holds what, who waits ---- */

static void set_buddy(struct pm_state_repl *r)
{
	struct pm_step *s = r->s;
	long b = pm_repl_buddy((uint32_t)s->node, (uint32_t)s->nnodes, r->lost, NULL);

	if (b == r->buddy)
		return;
	if (r->buddy >= 0)
		pm_log(s, "state replication: buddy now node %s (was %s)",
		       b >= 0 ? s->names[b] : "none", s->names[r->buddy]);
	r->buddy = b;
	if (r->buddy_link)
		link_free(r->buddy_link, "another buddy");
	pm_repl_all(&r->track, PM_RE_REBUDDY);
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
	struct pm_state_repl *r = pm_state_link_repl(s);

	if (!r)
		return;
	for (; r->nrepl_seen < s->gen.nrepl; r->nrepl_seen++) {
		const struct pm_repl *x = &s->gen.repl[r->nrepl_seen];
		struct pm_repl_plan p;
		if (x->lost < 0 || x->lost >= s->nnodes)
			continue;
		pm_repl_on_replace((uint32_t)s->node, (uint32_t)s->nnodes, r->lost, NULL, x->lost,
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
	if (r->await_from < 0)
		pm_state_link_resume(s);
}

bool pm_state_repl_waiting(struct pm_step *s)
{
	struct pm_state_repl *r = pm_state_link_repl(s);

	pm_state_repl_sync(s);
	return r && r->await_from >= 0;
}

/* ---- the link's bytes ---- */

static int send_all(int fd, const char *buf, size_t len)
{
	/* Lines and frames are small: a fresh or idle socket takes them. */
	ssize_t n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	return n == (ssize_t)len ? 0 : -1;
}

static int send_frame(int fd, const struct pm_msg *m)
{
	uint8_t buf[PM_WIRE_FRAME_MAX];
	int n = pm_msg_encode(m, buf, sizeof(buf));
	return n < 0 ? -1 : send_all(fd, (const char *)buf, (size_t)n);
}

static void on_ack(struct rlink *k, const struct pm_repl_line *l)
{
	struct pm_state_repl *r = k->r;

	if (k->push) {
		k->acked++;
		return;
	}
	if (pm_repl_acked(&r->track, l->grank, l->name, l->version)) {
		pm_state_mark_safe(r->st, l->grank, l->name, l->version);
		r->replicated++;
		if (!r->said_replicated) {
			r->said_replicated = true;
			pm_log(k->s, "state replication: rank %d's '%s' version %llu is safe on node %s",
			       l->grank, l->name, (unsigned long long)l->version,
			       k->s->names[k->peer]);
			{
				const struct pm_state_blob *b = pm_state_find(r->st, l->grank, l->name);
				struct pm_state_note note = { .did = PM_STATE_DID_SAVE,
							      .version = l->version };
				snprintf(note.name, sizeof(note.name), "%s", l->name);
				if (b) {
					note.size = b->size;
					note.step = b->step;
				}
				pm_step_state_event(k->s, "state_replicated", l->grank, &note);
			}
		}
	}
}

/* A blob's bytes are in: sealed, kept as a replica, acknowledged. */
static int rx_done(struct rlink *k, char *err, size_t len)
{
	struct pm_state_repl *r = k->r;
	struct pm_state_blob meta = { 0 };
	struct pm_repl_line ack = { .kind = PM_RL_ACK };
	char line[PM_REPL_LINE_MAX + 1];
	uint64_t size, now = pm_now_ms();
	int old, fd = k->rx_fd, n;

	k->rx_fd = -1;
	k->rx = false;
	if (pm_memblob_seal(fd, k->rl.size, &size, err, len)) {
		close(fd);
		return -1;
	}
	meta.owner_node = k->rl.owner;
	meta.grank = k->rl.grank;
	snprintf(meta.name, sizeof(meta.name), "%s", k->rl.name);
	meta.version = k->rl.version;
	meta.size = k->rl.size;
	meta.step = k->rl.step;
	meta.saved_ms = now > k->rl.age_ms ? now - k->rl.age_ms : 0;
	if (pm_state_put_replica(r->st, &meta, fd, &old, err, len) == 0) {
		r->received++;
		if (!r->said_received) {
			r->said_received = true;
			pm_log(k->s, "state replication: holding node %s's rank %d '%s' version %llu",
			       k->s->names[k->peer], meta.grank, meta.name,
			       (unsigned long long)meta.version);
		}
	} else {
		/* Refused (an older version, over max_node): said, not acked
		 * as safe; the link goes on. */
		pm_log(k->s, "state replication: %s", err);
		if (old >= 0)
			close(old);
		return 0;
	}
	if (old >= 0)
		close(old);
	ack.grank = meta.grank;
	snprintf(ack.name, sizeof(ack.name), "%s", meta.name);
	ack.version = meta.version;
	n = pm_repl_line_format(&ack, line, sizeof(line));
	if (n < 0 || send_all(k->w.fd, line, (size_t)n)) {
		snprintf(err, len, "cannot acknowledge: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static int rx_begin(struct rlink *k, char *err, size_t len)
{
	struct pm_state_store *st = k->r->st;

	if (st->held + st->pending + k->rl.size > st->cfg.max_node) {
		snprintf(err, len, "a replica of %llu bytes would put this node over its limit "
			 "(state_max_node)", (unsigned long long)k->rl.size);
		return -1;
	}
	/* Written, not mapped: a mapping's fault per 4 KiB page as the bytes
	 * came cost 12 times a plain TCP copy's time (bench/README.md), and
	 * populating it at once blocked the loop for seconds. */
	k->rx_fd = memfd_create("procmgr-replica", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (k->rx_fd < 0 || ftruncate(k->rx_fd, (off_t)k->rl.size)) {
		snprintf(err, len, "a replica of %llu bytes: %s", (unsigned long long)k->rl.size,
			 strerror(errno));
		return -1;
	}
	k->rx = true;
	k->rx_got = 0;
	return 0;
}

static int pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
	const char *p = buf;
	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/* Lines (and, after a blob's line, its bytes) from the buffer. */
static int parse_in(struct rlink *k, char *err, size_t len)
{
	for (;;) {
		if (k->rx) {
			size_t take = k->in_len;
			if (take > k->rl.size - k->rx_got)
				take = (size_t)(k->rl.size - k->rx_got);
			if (take && pwrite_all(k->rx_fd, k->in, take, k->rx_got))
				return snprintf(err, len, "replica: %s", strerror(errno)), -1;
			k->rx_got += take;
			memmove(k->in, k->in + take, k->in_len - take);
			k->in_len -= take;
			if (k->rx_got < k->rl.size)
				return 0;
			if (rx_done(k, err, len))
				return -1;
			continue;
		}
		char *nl = memchr(k->in, '\n', k->in_len);
		struct pm_repl_line l;
		if (!nl) {
			if (k->in_len > PM_REPL_LINE_MAX)
				return snprintf(err, len, "a line too long"), -1;
			return 0;
		}
		*nl = '\0';
		if (pm_repl_line_parse(k->in, &l, err, len))
			return -1;
		memmove(k->in, nl + 1, k->in_len - (size_t)(nl + 1 - k->in));
		k->in_len -= (size_t)(nl + 1 - k->in);
		if (l.kind == PM_RL_ACK && k->out) {
			on_ack(k, &l);
		} else if (l.kind == PM_RL_BLOB && !k->out) {
			/* A peer replicates only its own ranks, or, pushing, one
			 * lost node's. */
			if (l.owner >= (uint32_t)k->s->nnodes || l.owner == (uint32_t)k->s->node) {
				snprintf(err, len, "a blob of node %u", l.owner);
				return -1;
			}
			k->rl = l;
			if (rx_begin(k, err, len))
				return -1;
		} else if (l.kind == PM_RL_END && !k->out) {
			struct pm_state_repl *r = k->r;
			if (l.owner < (uint32_t)k->s->nnodes)
				r->ended[l.owner] = true;
			pm_log(k->s, "state replication: node %s handed us node %s's state (%llu blobs)",
			       k->s->names[k->peer],
			       l.owner < (uint32_t)k->s->nnodes ? k->s->names[l.owner] : "?",
			       (unsigned long long)l.count);
			if (r->await_from >= 0 && (uint32_t)r->await_owner == l.owner)
				r->await_from = -1;
			pm_state_repl_sync(k->s);
		} else {
			snprintf(err, len, "unexpected '%.80s' on this link", k->in);
			return -1;
		}
	}
}

/* At most PM_REPL_SLICE bytes per callback, each way: the loop serves
 * the tree's liveness, the ranks and the rest between slices (a 512 MiB
 * blob read in one go cost a node its links' 5 s liveness under load). */
#define PM_REPL_SLICE (8u << 20)
static uint8_t bounce[1u << 20];

static int read_in(struct rlink *k, char *err, size_t len)
{
	for (size_t done = 0; done < PM_REPL_SLICE;) {
		ssize_t n;
		if (k->rx && k->in_len == 0 && k->rl.size - k->rx_got > 0) {
			uint64_t want = k->rl.size - k->rx_got;
			n = recv(k->w.fd, bounce, want < sizeof(bounce) ? (size_t)want : sizeof(bounce),
				 MSG_DONTWAIT);
			if (n > 0) {
				if (pwrite_all(k->rx_fd, bounce, (size_t)n, k->rx_got))
					return snprintf(err, len, "replica: %s", strerror(errno)), -1;
				k->rx_got += (uint64_t)n;
				done += (size_t)n;
				if (k->rx_got == k->rl.size && rx_done(k, err, len))
					return -1;
				continue;
			}
		} else {
			n = recv(k->w.fd, k->in + k->in_len, sizeof(k->in) - k->in_len, MSG_DONTWAIT);
			if (n > 0) {
				k->in_len += (size_t)n;
				done += (size_t)n;
				if (parse_in(k, err, len))
					return -1;
				continue;
			}
		}
		if (n == 0)
			return snprintf(err, len, "closed"), -1;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		if (errno != EINTR)
			return snprintf(err, len, "%s", strerror(errno)), -1;
	}
	return 0; /* more to read: epoll says so again */
}

/* ---- sending ---- */

static bool take_tokens(struct rlink *k, uint64_t want, uint64_t *got)
{
	struct pm_state_repl *r = k->r;
	uint64_t now = pm_now_ms();

	if (!r->rate) {
		*got = want;
		return true;
	}
	r->tokens += (now - r->refill_ms) * r->rate / 1000;
	r->refill_ms = now;
	if (r->tokens > r->rate / 10 + PM_REPL_CHUNK)
		r->tokens = r->rate / 10 + PM_REPL_CHUNK; /* a burst of 100 ms at most */
	if (!r->tokens) {
		unsigned ms = (unsigned)(PM_REPL_CHUNK * 1000 / r->rate) + 1;
		k->throttled = true;
		pm_loop_mod(k->s->loop, &k->w, EPOLLIN);
		pm_timer_set(k->tw.fd, ms, 0);
		return false;
	}
	*got = want < r->tokens ? want : r->tokens;
	r->tokens -= *got;
	return true;
}

static bool next_blob(struct rlink *k)
{
	struct pm_state_repl *r = k->r;
	struct pm_repl_line l = { .kind = PM_RL_BLOB };
	uint64_t now = pm_now_ms();
	int n;

	if (k->push) {
		if (k->iq >= k->nq) {
			if (!k->end_sent) {
				struct pm_repl_line e = { .kind = PM_RL_END, .owner = k->rl.owner,
							  .count = k->nq };
				n = pm_repl_line_format(&e, k->hdr, sizeof(k->hdr));
				k->end_sent = n > 0 && !send_all(k->w.fd, k->hdr, (size_t)n);
				if (k->end_sent)
					pm_log(k->s, "state replication: node %u's state sent to node %s",
					       k->rl.owner, k->s->names[k->peer]);
			}
			return false;
		}
		struct pushed *p = &k->q[k->iq++];
		l.owner = p->meta.owner_node;
		l.grank = p->meta.grank;
		snprintf(l.name, sizeof(l.name), "%s", p->meta.name);
		l.version = p->meta.version;
		l.size = p->meta.size;
		l.step = p->meta.step;
		l.age_ms = now > p->meta.saved_ms ? now - p->meta.saved_ms : 0;
		k->tx_fd = p->fd;
		p->fd = -1;
	} else {
		struct pm_repl_item *x = pm_repl_take(&r->track);
		const struct pm_state_blob *b;
		if (!x)
			return false;
		b = pm_state_find(r->st, x->grank, x->name);
		if (!b || b->replica || b->version != x->sending ||
		    (k->tx_fd = fcntl(b->handle, F_DUPFD_CLOEXEC, 0)) < 0) {
			pm_repl_all(&r->track, PM_RE_LOST);
			return false;
		}
		l.owner = (uint32_t)k->s->node;
		l.grank = b->grank;
		snprintf(l.name, sizeof(l.name), "%s", b->name);
		l.version = b->version;
		l.size = b->size;
		l.step = b->step;
		l.age_ms = now > b->saved_ms ? now - b->saved_ms : 0;
	}
	n = pm_repl_line_format(&l, k->hdr, sizeof(k->hdr));
	if (n < 0) {
		close(k->tx_fd);
		k->tx_fd = -1;
		return false;
	}
	k->hdr_len = (size_t)n;
	k->hdr_off = 0;
	k->tx_off = 0;
	k->tx_size = l.size;
	return true;
}

/* Send what the socket and the bandwidth allow; EPOLLOUT while there is
 * more. */
static void pump(struct rlink *k)
{
	char err[256] = "";

	size_t sent = 0;

	if (!k->proven || k->throttled)
		return;
	for (;;) {
		if (sent >= PM_REPL_SLICE)
			goto wait; /* the rest at the next EPOLLOUT */
		if (k->tx_fd < 0 && !next_blob(k)) {
			pm_loop_mod(k->s->loop, &k->w, EPOLLIN);
			return;
		}
		while (k->hdr_off < k->hdr_len) {
			ssize_t n = send(k->w.fd, k->hdr + k->hdr_off, k->hdr_len - k->hdr_off,
					 MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				goto wait;
			if (n <= 0) {
				snprintf(err, sizeof(err), "%s", strerror(errno));
				goto fail;
			}
			k->hdr_off += (size_t)n;
		}
		while (k->tx_off < k->tx_size && sent < PM_REPL_SLICE) {
			uint64_t want = k->tx_size - k->tx_off, got;
			off_t off = (off_t)k->tx_off;
			ssize_t n;
			if (want > PM_REPL_CHUNK)
				want = PM_REPL_CHUNK;
			if (!take_tokens(k, want, &got))
				return;
			n = sendfile(k->w.fd, k->tx_fd, &off, (size_t)got);
			if (n > 0) {
				k->r->tokens += got - (uint64_t)n; /* what the socket did not take */
				k->tx_off = (uint64_t)off;
				k->r->bytes_out += (uint64_t)n;
				sent += (size_t)n;
				continue;
			}
			k->r->tokens += got;
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				goto wait;
			snprintf(err, sizeof(err), "sendfile: %s", n ? strerror(errno) : "short file");
			goto fail;
		}
		if (k->tx_off < k->tx_size)
			goto wait;
		close(k->tx_fd);
		k->tx_fd = -1;
	}
wait:
	pm_loop_mod(k->s->loop, &k->w, EPOLLIN | EPOLLOUT);
	return;
fail:
	linklog(k, "to", err);
	link_free(k, err);
}

static void on_throttle(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct rlink *k = w->arg;
	(void)l;
	(void)ev;
	pm_timer_ack(w->fd);
	k->throttled = false;
	pump(k);
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
		if (send_frame(w->fd, &m)) {
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
		pump(k);
		return;
	}
	if (ev & EPOLLIN) {
		if (read_in(k, err, sizeof(err)))
			goto fail;
		if (k->push && k->end_sent && k->acked >= k->nq) {
			link_free(k, NULL); /* all handed over */
			return;
		}
	}
	if (ev & (EPOLLERR | EPOLLHUP) && !(ev & EPOLLIN)) {
		snprintf(err, sizeof(err), "connection error");
		goto fail;
	}
	if (ev & EPOLLOUT)
		pump(k);
	return;
fail:
	linklog(k, k->out ? "to" : "from", err);
	link_free(k, err);
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
	k->tw = (struct pm_watch){ .fd = pm_timer_new(), .fn = on_throttle, .arg = k };
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

static void link_free(struct rlink *k, const char *why)
{
	struct pm_state_repl *r = k->r;
	struct rlink **p;

	for (p = &r->links; *p; p = &(*p)->next)
		if (*p == k) {
			*p = k->next;
			break;
		}
	if (r->buddy_link == k) {
		r->buddy_link = NULL;
		pm_repl_all(&r->track, PM_RE_LOST);
		r->retry_at = pm_now_ms() + PM_REPL_RETRY_MS;
	}
	if (k->push && why)
		pm_log(k->s, "state replication: handing node %u's state to node %s failed: %s",
		       k->rl.owner, k->s->names[k->peer], why);
	pm_loop_del(k->s->loop, &k->w);
	pm_loop_del(k->s->loop, &k->tw);
	close(k->w.fd);
	close(k->tw.fd);
	if (k->tx_fd >= 0)
		close(k->tx_fd);
	if (k->rx_fd >= 0)
		close(k->rx_fd);
	for (size_t i = k->iq; i < k->nq; i++)
		if (k->q[i].fd >= 0)
			close(k->q[i].fd);
	free(k->q);
	free(k);
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
		link_free(k, "cannot watch");
		return NULL;
	}
	return k;
}

/* A node's BUDDY on our tree port, not yet authenticated (tree_link.c
 * hands us every first frame of that type). */
int pm_state_repl_hello(struct pm_step *s, struct pm_conn *c, const struct pm_msg *m)
{
	struct pm_state_repl *r = pm_state_link_repl(s);
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
		static char why[320];
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
	if (fd < 0 || send_frame(fd, &w) || !(k = link_new(r, fd, m->node))) {
		pm_log(s, "state replication from node %d: cannot answer: %s", m->node,
		       strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	k->proven = true;
	if (pm_loop_add(s->loop, &k->w, EPOLLIN)) {
		link_free(k, "cannot watch");
		return 1;
	}
	return 1;
}

/* ---- the ranks' saves ---- */

void pm_state_repl_saved(struct pm_step *s, int32_t grank, const char *name, uint64_t version)
{
	struct pm_state_repl *r = pm_state_link_repl(s);

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
		pump(r->buddy_link);
}

static void on_tick(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct pm_state_repl *r = w->arg;
	(void)l;
	(void)ev;
	pm_timer_ack(w->fd);
	pm_state_repl_sync(r->s);
	if (r->buddy >= 0 && !r->buddy_link && r->track.n && pm_now_ms() >= r->retry_at)
		r->buddy_link = connect_to(r, (int)r->buddy, false);
	if (r->buddy_link)
		pump(r->buddy_link);
}

struct pm_state_repl *pm_state_repl_new(struct pm_step *s, struct pm_state_store *st,
					uint64_t rate)
{
	struct pm_state_repl *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->s = s;
	r->st = st;
	r->rate = rate;
	r->refill_ms = pm_now_ms();
	r->await_from = -1;
	r->lost = calloc((size_t)s->nnodes, sizeof(*r->lost));
	r->ended = calloc((size_t)s->nnodes, sizeof(*r->ended));
	r->buddy = pm_repl_buddy((uint32_t)s->node, (uint32_t)s->nnodes, NULL, NULL);
	r->tick = (struct pm_watch){ .fd = pm_timer_new(), .fn = on_tick, .arg = r };
	if (!r->lost || !r->ended || r->tick.fd < 0 ||
	    pm_timer_set(r->tick.fd, PM_REPL_TICK_MS, PM_REPL_TICK_MS) ||
	    pm_loop_add(s->loop, &r->tick, EPOLLIN)) {
		if (r->tick.fd >= 0)
			close(r->tick.fd);
		free(r->lost);
		free(r->ended);
		free(r);
		return NULL;
	}
	return r;
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
		link_free(r->links, NULL);
	pm_loop_del(r->s->loop, &r->tick);
	close(r->tick.fd);
	pm_repl_track_free(&r->track);
	free(r->lost);
	free(r->ended);
	free(r);
}
