/* The state socket's requests carried out: statesrv.h. */
#include "statesrv.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/stateproto.h"
#include "memblob.h"

static void close_handle(int h, void *arg)
{
	(void)arg;
	close(h);
}

static int reply(int sock, int fd, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int reply(int sock, int fd, const char *fmt, ...)
{
	char buf[PM_SP_REPLY_MAX];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(buf))
		n = (int)sizeof(buf) - 1;
	return pm_fd_send(sock, buf, (size_t)n, fd);
}

static int refuse(int sock, struct pm_state_note *note, const char *why)
{
	note->did = PM_STATE_DID_REFUSE;
	snprintf(note->why, sizeof(note->why), "%s", why);
	return reply(sock, -1, "err %s", why);
}

static int list(struct pm_state_store *st, int sock, int32_t grank, uint64_t now_ms)
{
	char buf[PM_SP_REPLY_MAX], line[160];
	size_t off, count = 0;
	const struct pm_state_blob *b;

	/* "ok N" is written last, in front: count first. */
	off = 32;
	for (size_t i = 0; (b = pm_state_at(st, i)); i++) {
		int n;
		/* A spare's rank sees the lost node's replica of a name until it
		 * saved its own (pm_state_find's order). */
		if (b->grank != grank || (b->replica && pm_state_find(st, grank, b->name) != b))
			continue;
		n = pm_sp_format_entry(b, now_ms, line, sizeof(line));
		if (n < 0 || off + (size_t)n + 1 >= sizeof(buf))
			break;
		buf[off++] = '\n';
		memcpy(buf + off, line, (size_t)n);
		off += (size_t)n;
		count++;
	}
	{
		char head[32];
		int n = snprintf(head, sizeof(head), "ok %zu", count);
		memmove(buf + 32 - n, head, (size_t)n);
		return pm_fd_send(sock, buf + 32 - n, off - 32 + (size_t)n, -1);
	}
}

int pm_statesrv_serve(struct pm_state_store *st, int sock, struct pm_state_peer *p,
		      uint64_t now_ms, const struct pm_statesrv_hooks *h, struct pm_state_note *note,
		      char *err, size_t errlen)
{
	char buf[PM_SP_LINE_MAX + 1], why[256];
	struct pm_sp_req r;
	const struct pm_state_blob *b;
	int fd = -1, rc = 0;
	long n;

	memset(note, 0, sizeof(*note));
	n = pm_fd_recv(sock, buf, sizeof(buf), &fd);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 1;
		snprintf(err, errlen, "state socket: %s", strerror(errno));
		return -1;
	}
	if (n == 0) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	if (pm_sp_parse(buf, (size_t)n, fd >= 0, &r, why, sizeof(why))) {
		rc = refuse(sock, note, why);
		goto out;
	}
	switch (r.kind) {
	case PM_SP_BEGIN:
		if (p->ticket) {
			rc = refuse(sock, note,
				    "a save is in flight on this connection: commit or abort it first");
			break;
		}
		p->ticket = pm_state_begin(st, p->grank, r.name, r.size, why, sizeof(why));
		snprintf(note->name, sizeof(note->name), "%s", r.name);
		rc = p->ticket ? reply(sock, -1, "ok %llu", (unsigned long long)p->ticket)
			       : refuse(sock, note, why);
		break;
	case PM_SP_ABORT:
		if (r.ticket == p->ticket) {
			pm_state_abort(st, p->ticket);
			p->ticket = 0;
		}
		rc = reply(sock, -1, "ok");
		break;
	case PM_SP_COMMIT:
	case PM_SP_SWAP: {
		uint64_t want = 0, size = 0;
		int old = -1, back = -1;
		for (size_t i = 0; i < st->np; i++)
			if (st->p[i].ticket == r.ticket) {
				want = st->p[i].size;
				snprintf(note->name, sizeof(note->name), "%s", st->p[i].name);
			}
		if (!p->ticket || r.ticket != p->ticket || !want) {
			rc = refuse(sock, note, "no save with that ticket in flight on this connection");
			break;
		}
		/* Whatever is wrong with the descriptor, the save is over:
		 * the last good version stays. */
		p->ticket = 0;
		if (r.kind == PM_SP_SWAP ? pm_memblob_fix(fd, want, &size, why, sizeof(why))
					 : pm_memblob_seal(fd, want, &size, why, sizeof(why))) {
			pm_state_abort(st, r.ticket);
			rc = refuse(sock, note, why);
			break;
		}
		if (pm_state_commit(st, r.ticket, fd, now_ms, r.step, &old)) {
			pm_state_abort(st, r.ticket);
			rc = refuse(sock, note, "out of memory");
			break;
		}
		fd = -1; /* the store's now */
		/* The version replaced goes back to be written again, when it was
		 * swapped in too (never a sealed one: a load may map it) and
		 * nothing here still reads it (the copy to the buddy). */
		if (old >= 0 && r.kind == PM_SP_SWAP && pm_memblob_writable(old) &&
		    !(h && h->reading && h->reading(old, h->arg)))
			back = old;
		else if (old >= 0)
			close(old);
		/* A lost node's copy of this rank's name, handed to this node
		 * (the spare that runs the rank now): superseded, its memory
		 * goes. */
		pm_state_drop_superseded(st, p->grank, note->name, st->node, close_handle, NULL);
		if ((b = pm_state_find(st, p->grank, note->name))) {
			note->did = PM_STATE_DID_SAVE;
			note->version = b->version;
			note->size = b->size;
			note->step = b->step;
		}
		rc = reply(sock, back, "ok %llu", (unsigned long long)note->version);
		if (back >= 0)
			close(back);
		break;
	}
	case PM_SP_LOAD: {
		b = pm_state_find(st, p->grank, r.name);
		if (!b) {
			rc = reply(sock, -1, "none");
			break;
		}
		if (pm_sp_format_load(b, now_ms, why, sizeof(why)) < 0) {
			rc = refuse(sock, note, "reply too long");
			break;
		}
		note->did = PM_STATE_DID_LOAD;
		snprintf(note->name, sizeof(note->name), "%s", b->name);
		note->version = b->version;
		note->size = b->size;
		note->step = b->step;
		note->age_ms = now_ms > b->saved_ms ? now_ms - b->saved_ms : 0;
		note->replica = b->replica;
		note->owner = b->owner_node;
		{
			const struct pm_state_blob *o;
			uint64_t hw = b->step;
			for (size_t i = 0; (o = pm_state_at(st, i)); i++)
				if (o->grank == p->grank && o->step > hw)
					hw = o->step;
			note->lost_steps = hw - b->step;
		}
		/* A version swapped in is made read-only for good once a load
		 * maps it, as a committed one is: it never comes back to be
		 * written, and no new writable mapping or write() is allowed.
		 * F_SEAL_FUTURE_WRITE, not F_SEAL_WRITE: it takes no time
		 * whatever the size (F_SEAL_WRITE checks every page for pins:
		 * 32 ms for 1 GiB here, on procmgrd's loop, per load), and a
		 * writable mapping made before (the process that swapped it in,
		 * loading what it saved: its module does not write a file it
		 * loaded) does not refuse it. */
		if (pm_memblob_writable(b->handle))
			(void)fcntl(b->handle, F_ADD_SEALS, F_SEAL_FUTURE_WRITE);
		rc = pm_fd_send(sock, why, strlen(why), b->handle);
		break;
	}
	case PM_SP_LIST:
		rc = list(st, sock, p->grank, now_ms);
		break;
	}
out:
	if (rc < 0)
		snprintf(err, errlen, "state socket: cannot answer: %s", strerror(errno));
	if (fd >= 0)
		close(fd);
	return rc < 0 ? -1 : 1;
}

void pm_statesrv_closed(struct pm_state_store *st, struct pm_state_peer *p)
{
	if (p->ticket)
		pm_state_abort(st, p->ticket);
	p->ticket = 0;
}

/* /proc/PID/stat after "PID (COMM)" (COMM may hold anything, ')'
 * included), in buf; NULL if it cannot be read. */
static const char *stat_fields(const char *procroot, pid_t pid, char *buf, size_t len)
{
	char path[128], *rp;
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%d/stat", procroot, (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return NULL;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	rp = strrchr(buf, ')');
	return rp ? rp + 1 : NULL;
}

static pid_t parent_of(const char *procroot, pid_t pid)
{
	char buf[1024];
	const char *f = stat_fields(procroot, pid, buf, sizeof(buf));
	long pp;

	/* "S PPID ..." */
	if (!f || sscanf(f, " %*c %ld", &pp) != 1 || pp < 0)
		return -1;
	return (pid_t)pp;
}

int pm_state_peer_start(const char *procroot, pid_t pid, uint64_t *ticks)
{
	char buf[1024];
	const char *f = stat_fields(procroot, pid, buf, sizeof(buf));
	unsigned long long st;

	/* Field 22, the 20th after "(COMM)". */
	if (!f || sscanf(f, " %*c" " %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u"
			  " %*d %*d %*d %*d %*d %*d %llu", &st) != 1)
		return -1;
	*ticks = st;
	return 0;
}

int pm_state_peer_index(const char *procroot, pid_t pid, const pid_t *sup, int n)
{
	for (int depth = 0; depth < 64 && pid > 1; depth++) {
		for (int i = 0; i < n; i++)
			if (sup[i] > 0 && sup[i] == pid)
				return i;
		pid = parent_of(procroot, pid);
	}
	return -1;
}
