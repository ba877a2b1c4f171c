/* Buddy replication's stream (state_repl.c says what it is for): after
 * the handshake, a blob's line and bytes one way (sendfile from the sealed
 * memfd, at most the bandwidth bound, at most PM_REPL_SLICE per callback),
 * its replica written, sealed, kept and acknowledged the other way. */
#include "state_repl_int.h"

#include "io/memblob.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include "io/memblob.h"
#include "io/statesrv.h"
#include "io/sys.h"
/* ---- the link ---- */

void pm_repl_linklog(struct rlink *k, const char *what, const char *why)
{
	/* The link to the buddy is retried every PM_REPL_RETRY_MS: its
	 * failures are said once until it works again. */
	if (k->r->buddy_link == k && k->r->said_fail)
		return;
	if (k->r->buddy_link == k)
		k->r->said_fail = true;
	pm_log(k->s, "state replication %s node %s: %s", what, k->s->names[k->peer], why);
}

void pm_repl_link_free(struct rlink *k, const char *why)
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

/* ---- the link's bytes ---- */

int pm_repl_send_all(int fd, const char *buf, size_t len)
{
	/* Lines and frames are small: a fresh or idle socket takes them. */
	ssize_t n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	return n == (ssize_t)len ? 0 : -1;
}

int pm_repl_send_frame(int fd, const struct pm_msg *m)
{
	uint8_t buf[PM_WIRE_FRAME_MAX];
	int n = pm_msg_encode(m, buf, sizeof(buf));
	return n < 0 ? -1 : pm_repl_send_all(fd, (const char *)buf, (size_t)n);
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

static void close_handle(int h, void *arg)
{
	(void)arg;
	close(h);
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
			/* The saving node is the owner: a holder pushing a lost
			 * node's state to this spare only hands it on. */
			if (meta.owner_node == (uint32_t)k->peer)
				pm_log(k->s, "state replication: holding node %s's rank %d '%s' version %llu",
				       k->s->names[k->peer], meta.grank, meta.name,
				       (unsigned long long)meta.version);
			else
				pm_log(k->s, "state replication: holding node %s's rank %d '%s' version %llu, handed on by node %s",
				       meta.owner_node < (uint32_t)k->s->nnodes ? k->s->names[meta.owner_node] : "?",
				       meta.grank, meta.name, (unsigned long long)meta.version,
				       k->s->names[k->peer]);
		}
		/* The node that runs the rank now (a spare) replicates here: a
		 * lost node's copy of the same rank's name is superseded. */
		if (pm_state_drop_superseded(r->st, meta.grank, meta.name, meta.owner_node,
					     close_handle, NULL))
			pm_log(k->s, "state replication: rank %d's '%s' from node %s is here: the lost node's copy is dropped",
			       meta.grank, meta.name, k->s->names[k->peer]);
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
	if (n < 0 || pm_repl_send_all(k->w.fd, line, (size_t)n)) {
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
		} else if (l.kind == PM_RL_DROP && !k->out && !k->push) {
			/* A node drops only its own ranks' replicas. */
			if (l.owner != (uint32_t)k->peer) {
				snprintf(err, len, "a drop for node %u", l.owner);
				return -1;
			}
			(void)pm_state_drop_rank(k->r->st, l.owner, l.grank, close_handle, NULL);
		} else if (l.kind == PM_RL_END && !k->out) {
			struct pm_state_repl *r = k->r;
			if (l.owner < (uint32_t)k->s->nnodes)
				r->ended[l.owner] = true;
			k->handed = true;
			pm_log(k->s, "state replication: node %s handed us node %s's state (%llu blobs)",
			       k->s->names[k->peer],
			       l.owner < (uint32_t)k->s->nnodes ? k->s->names[l.owner] : "?",
			       (unsigned long long)l.count);
			if (r->await_from >= 0 && (uint32_t)r->await_owner == l.owner)
				r->await_from = -1;
			r->sync(k->s); /* state_repl.c's */
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

int pm_repl_read_in(struct rlink *k, char *err, size_t len)
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
				k->end_sent = n > 0 && !pm_repl_send_all(k->w.fd, k->hdr, (size_t)n);
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
	k->tx_grank = l.grank;
	snprintf(k->tx_name, sizeof(k->tx_name), "%s", l.name);
	k->tx_version = l.version;
	k->tx_copy = pm_memblob_writable(k->tx_fd);
	return true;
}

/* got bytes of the file from tx_off through a buffer: what the socket
 * took, or -1 (errno; 0 and errno 0: the file ended short; *file_err: it
 * was the file that could not be read, not the socket). */
static ssize_t send_copy(struct rlink *k, uint64_t got, bool *file_err)
{
	static char buf[PM_REPL_CHUNK];
	ssize_t n = pread(k->tx_fd, buf, (size_t)got, (off_t)k->tx_off);

	if (n <= 0) {
		if (!n)
			errno = 0;
		*file_err = true;
		return n;
	}
	return send(k->w.fd, buf, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* sendfile's failures that may be the file's rather than the socket's: it
 * cannot be spliced (a hugetlbfs memfd: EINVAL), which a read copy may
 * still do; the copy then tells the file's errors (pread) from the
 * socket's (send). */
static bool splice_unsupported(int e)
{
	return e != EAGAIN && e != EWOULDBLOCK && e != EINTR && e != EPIPE && e != ECONNRESET &&
	       e != ENOTCONN && e != ETIMEDOUT;
}

/* The blob in flight cannot be read: it is left out until its rank saves
 * another version (common/staterepl.h's FAILED), said once here, so that
 * the link taken again next sends the others instead of it for ever. */
static void blob_failed(struct rlink *k, const char *why)
{
	if (k->push) {
		pm_log(k->s, "state replication: a blob of node %u's state cannot be read (%s): "
		       "not handed to node %s", k->rl.owner, why, k->s->names[k->peer]);
		return;
	}
	pm_log(k->s, "state replication: rank %d's '%s' version %llu cannot be copied to the "
	       "buddy (%s): left out until the rank saves it again; the other blobs go on",
	       (int)k->tx_grank, k->tx_name, (unsigned long long)k->tx_version, why);
	pm_repl_all(&k->r->track, PM_RE_FAILED);
}

/* The buddy's link, between two blobs: the "drop" lines waiting. 0: all
 * said, 1: the socket is full (EPOLLOUT), -1: failed (errno). */
static int send_drops(struct rlink *k)
{
	struct pm_state_repl *r = k->r;
	char line[PM_REPL_LINE_MAX + 1];

	if (k->push || k != r->buddy_link)
		return 0;
	while (r->ndrops) {
		struct pm_repl_line l = { .kind = PM_RL_DROP, .owner = (uint32_t)k->s->node,
					  .grank = r->drops[0] };
		int n = pm_repl_line_format(&l, line, sizeof(line));
		ssize_t w;
		if (n < 0)
			return errno = EINVAL, -1;
		/* A line goes whole or not at all (the stream's lines and a
		 * blob's bytes must not interleave). */
		w = send(k->w.fd, line, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 1;
		if (w != n)
			return w < 0 ? -1 : (errno = EPIPE, -1);
		memmove(r->drops, r->drops + 1, (r->ndrops - 1) * sizeof(*r->drops));
		r->ndrops--;
	}
	return 0;
}

/* Send what the socket and the bandwidth allow; EPOLLOUT while there is
 * more. */
void pm_repl_pump(struct rlink *k)
{
	char err[256] = "";

	size_t sent = 0;

	if (!k->proven || k->throttled)
		return;
	for (;;) {
		if (sent >= PM_REPL_SLICE)
			goto wait; /* the rest at the next EPOLLOUT */
		if (k->tx_fd < 0) {
			int d = send_drops(k);
			if (d > 0)
				goto wait;
			if (d < 0) {
				snprintf(err, sizeof(err), "%s", strerror(errno));
				goto fail;
			}
		}
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
			bool file_err = false;
			if (want > PM_REPL_CHUNK)
				want = PM_REPL_CHUNK;
			if (!take_tokens(k, want, &got))
				return;
			n = k->tx_copy ? send_copy(k, got, &file_err)
				       : sendfile(k->w.fd, k->tx_fd, &off, (size_t)got);
			if (n < 0 && !k->tx_copy && splice_unsupported(errno)) {
				k->r->tokens += got;
				k->tx_copy = true; /* the same bytes, read and sent */
				continue;
			}
			if (k->tx_copy && n > 0)
				off += n;
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
			snprintf(err, sizeof(err), "%s: %s", k->tx_copy ? "copy" : "sendfile",
				 n ? strerror(errno) : "short file");
			if (file_err || !n)
				blob_failed(k, err);
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
	pm_repl_linklog(k, "to", err);
	pm_repl_link_free(k, err);
}

void pm_repl_on_throttle(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct rlink *k = w->arg;
	(void)l;
	(void)ev;
	pm_timer_ack(w->fd);
	k->throttled = false;
	pm_repl_pump(k);
}

