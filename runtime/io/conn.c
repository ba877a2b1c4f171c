#include "conn.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

static void conn_io(struct pm_loop *l, struct pm_watch *w, uint32_t ev);

struct pm_conn *pm_conn_new(struct pm_loop *l, int fd, pm_msg_fn on_msg,
			    pm_close_fn on_close, void *arg)
{
	struct pm_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	c->w.fd = fd;
	c->w.fn = conn_io;
	c->w.arg = arg;
	c->loop = l;
	c->on_msg = on_msg;
	c->on_close = on_close;
	c->id = -1;
	c->last_rx = pm_now_ms();
	if (pm_loop_add(l, &c->w, EPOLLIN | EPOLLRDHUP)) {
		free(c);
		return NULL;
	}
	return c;
}

void pm_conn_free(struct pm_conn *c)
{
	if (!c)
		return;
	if (c->out_len) /* best effort: the peer may still read it */
		(void)!send(c->w.fd, c->out, c->out_len, MSG_NOSIGNAL | MSG_DONTWAIT);
	pm_loop_del(c->loop, &c->w);
	close(c->w.fd);
	free(c->in);
	free(c->out);
	free(c);
}

static int reserve(uint8_t **buf, size_t *cap, size_t need)
{
	uint8_t *n;
	size_t ncap = *cap ? *cap : 256;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	n = realloc(*buf, ncap);
	if (!n)
		return -1;
	*buf = n;
	*cap = ncap;
	return 0;
}

static int flush(struct pm_conn *c)
{
	while (c->out_len) {
		ssize_t n = send(c->w.fd, c->out, c->out_len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return pm_loop_mod(c->loop, &c->w, EPOLLIN | EPOLLRDHUP | EPOLLOUT);
			return -1;
		}
		memmove(c->out, c->out + n, c->out_len - (size_t)n);
		c->out_len -= (size_t)n;
	}
	return pm_loop_mod(c->loop, &c->w, EPOLLIN | EPOLLRDHUP);
}

int pm_conn_send(struct pm_conn *c, const struct pm_msg *m)
{
	int n;

	if (c->dead)
		return -1;
	if (reserve(&c->out, &c->out_cap, c->out_len + PM_WIRE_FRAME_MAX))
		return -1;
	n = pm_msg_encode(m, c->out + c->out_len, c->out_cap - c->out_len);
	if (n < 0)
		return -1;
	c->out_len += (size_t)n;
	return flush(c);
}

void pm_conn_drop(struct pm_conn *c, const char *why)
{
	c->dead = true;
	snprintf(c->drop_why, sizeof(c->drop_why), "%s", why ? why : "");
}

static void die(struct pm_conn *c, const char *why)
{
	c->dead = true;
	c->on_close(c, why);
}

int pm_conn_ping(struct pm_conn *c)
{
	struct pm_msg m;

	pm_msg_init(&m, PM_MSG_PING);
	return pm_conn_send(c, &m);
}

bool pm_conn_silent(const struct pm_conn *c, uint64_t now_ms, unsigned timeout_ms)
{
	return timeout_ms && now_ms > c->last_rx && now_ms - c->last_rx >= timeout_ms;
}

bool pm_conn_keepalive(struct pm_conn *c, uint64_t now_ms, unsigned timeout_ms)
{
	if (pm_live_lost(&c->last_tick, c->last_rx, now_ms, timeout_ms))
		return true;
	pm_conn_ping(c);
	return false;
}

void pm_conn_fail(struct pm_conn *c, const char *why)
{
	if (!c->dead)
		die(c, why);
}

static void conn_io(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct pm_conn *c = (struct pm_conn *)w; /* w is the first member */
	struct pm_msg m;
	const char *err = NULL;
	(void)l;

	if (ev & EPOLLOUT && flush(c)) {
		die(c, strerror(errno));
		return;
	}
	if (!(ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
		return;
	for (;;) {
		ssize_t n;
		if (reserve(&c->in, &c->in_cap, c->in_len + 4096)) {
			die(c, "out of memory");
			return;
		}
		n = recv(c->w.fd, c->in + c->in_len, c->in_cap - c->in_len, MSG_DONTWAIT);
		if (n == 0) {
			die(c, NULL);
			return;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				break;
			die(c, strerror(errno));
			return;
		}
		c->in_len += (size_t)n;
		c->last_rx = pm_now_ms();
		for (;;) {
			int used = pm_msg_decode(c->in, c->in_len, &m, &err);
			if (used < 0) {
				die(c, err);
				return;
			}
			if (used == 0)
				break;
			memmove(c->in, c->in + used, c->in_len - (size_t)used);
			c->in_len -= (size_t)used;
			if (m.type == PM_MSG_PING)
				continue;
			c->on_msg(c, &m);
			if (c->dead) { /* dropped by on_msg: closed here, once */
				/* A copy: on_close may free c and then say why. */
				char why[sizeof(c->drop_why)];
				memcpy(why, c->drop_why, sizeof(why));
				c->on_close(c, why[0] ? why : NULL);
				return;
			}
		}
	}
}
