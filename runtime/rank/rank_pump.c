#include "rank_pump.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

static void on_out(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	(void)l;
	(void)ev;
	pm_rank_pump_flush(w->arg, false);
}

static void on_err(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	(void)l;
	(void)ev;
	pm_rank_pump_drain(w->arg, false);
}

static void out_wait(struct pm_rank_pump *p, bool wait)
{
	if (wait == p->out_armed)
		return;
	/* Watched only while waiting: a closed reader's HUP would not stop. */
	if (wait) {
		p->out_w = (struct pm_watch){ .fd = p->out_fd, .fn = on_out, .arg = p };
		if (pm_loop_add(p->loop, &p->out_w, EPOLLOUT)) {
			p->out_file = true; /* a file: never waits long; written as it comes */
			return;
		}
	} else {
		pm_loop_del(p->loop, &p->out_w);
	}
	p->out_armed = wait;
	/* With a file the command never waits for Slurm: it may be gone. */
	pm_loop_mod(p->loop, &p->err_w, wait && p->file_fd < 0 ? 0 : EPOLLIN);
}

void pm_rank_pump_flush(struct pm_rank_pump *p, bool block)
{
	while (p->ooff < p->olen) {
		struct pollfd pf = { .fd = p->out_fd, .events = POLLOUT };
		size_t n = p->olen - p->ooff;
		ssize_t k;

		if (!block && !p->out_file && poll(&pf, 1, 0) == 0) {
			out_wait(p, true);
			if (p->out_armed)
				return;
		}
		/* A pipe that polls writable takes PIPE_BUF bytes without blocking. */
		if (!block && n > PIPE_BUF)
			n = PIPE_BUF;
		k = write(p->out_fd, p->ob + p->ooff, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			p->ooff = p->olen; /* our stderr is gone: keep the tail anyway */
			break;
		}
		p->ooff += (size_t)k;
	}
	p->ooff = p->olen = 0;
	out_wait(p, false);
	if (p->dropped) {
		char note[200];
		int n = snprintf(note, sizeof(note), "procmgr: %zu bytes of this rank's output "
				 "were not passed to srun, which did not take them; the output "
				 "file has them\n", p->dropped);
		p->dropped = 0;
		(void)!write(p->out_fd, note, (size_t)n);
	}
}

/* All of it, as a file takes it; a failing file is said once and dropped. */
static void to_file(struct pm_rank_pump *p, const char *b, size_t n)
{
	while (n && p->file_fd >= 0) {
		ssize_t k = write(p->file_fd, b, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			char line[200];
			int m;
			p->file_errno = k < 0 ? errno : EIO;
			m = snprintf(line, sizeof(line), "procmgr: the rank's output file: %s; "
				     "no more is written there\n", strerror(p->file_errno));
			(void)!write(p->out_fd, line, (size_t)m);
			close(p->file_fd);
			p->file_fd = -1;
			return;
		}
		b += k;
		n -= (size_t)k;
	}
}

void pm_rank_pump_set_file(struct pm_rank_pump *p, int fd)
{
	if (p->file_fd >= 0 && p->file_fd != fd)
		close(p->file_fd);
	p->file_fd = fd;
	if (p->err_fd >= 0)
		pm_loop_mod(p->loop, &p->err_w, p->out_armed && fd < 0 ? 0 : EPOLLIN);
}

void pm_rank_pump_drain(struct pm_rank_pump *p, bool final)
{
	ssize_t n;
	unsigned reads = 0;

	if (p->err_fd < 0)
		return;
	for (;;) {
		if (p->olen + 16384 > p->ocap) {
			size_t cap = p->olen + 65536;
			char *b = realloc(p->ob, cap);
			if (!b)
				break;
			p->ob = b;
			p->ocap = cap;
		}
		n = read(p->err_fd, p->ob + p->olen, 16384);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		pm_tail_feed(&p->tail, p->ob + p->olen, (size_t)n);
		to_file(p, p->ob + p->olen, (size_t)n);
		if (p->file_fd >= 0 && p->olen >= PM_PUMP_BACKLOG)
			p->dropped += (size_t)n; /* the file has it; Slurm took nothing */
		else
			p->olen += (size_t)n;
		if (!final && p->file_fd < 0 && p->olen >= 65536)
			break; /* the rest once Slurm took this */
		if (!final && ++reads >= 64)
			break; /* the loop's other sources get their turn */
	}
	pm_rank_pump_flush(p, false);
}

int pm_rank_pump_init(struct pm_rank_pump *p, struct pm_loop *l, int out_fd)
{
	int ep[2];

	memset(p, 0, sizeof(*p));
	p->loop = l;
	p->out_fd = out_fd;
	p->err_fd = p->child_fd = p->file_fd = -1;
	pm_tail_reset(&p->tail);
	if (isatty(out_fd))
		return 0;
	if (pipe2(ep, O_CLOEXEC | O_NONBLOCK))
		return -1;
	p->err_fd = ep[0];
	p->child_fd = ep[1];
	/* The command's end blocks as a pipe does; ours never blocks. */
	if (fcntl(ep[1], F_SETFL, 0))
		return -1;
	p->err_w = (struct pm_watch){ .fd = ep[0], .fn = on_err, .arg = p };
	return pm_loop_add(l, &p->err_w, EPOLLIN);
}

void pm_rank_pump_free(struct pm_rank_pump *p)
{
	free(p->ob);
	p->ob = NULL;
	if (p->file_fd >= 0)
		close(p->file_fd);
	p->file_fd = -1;
	p->olen = p->ooff = p->ocap = 0;
}
