#include "loop.h"

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

int pm_loop_init(struct pm_loop *l)
{
	l->stop = false;
	l->batch = NULL;
	l->batch_n = 0;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	return l->epfd < 0 ? -1 : 0;
}

int pm_loop_add(struct pm_loop *l, struct pm_watch *w, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = w };
	return epoll_ctl(l->epfd, EPOLL_CTL_ADD, w->fd, &ev);
}

int pm_loop_mod(struct pm_loop *l, struct pm_watch *w, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = w };
	return epoll_ctl(l->epfd, EPOLL_CTL_MOD, w->fd, &ev);
}

void pm_loop_del(struct pm_loop *l, struct pm_watch *w)
{
	int i;

	if (w->fd >= 0)
		epoll_ctl(l->epfd, EPOLL_CTL_DEL, w->fd, NULL);
	/* Its event may still wait in this batch, and w be freed after this. */
	for (i = 0; i < l->batch_n; i++)
		if (l->batch[i].data.ptr == w)
			l->batch[i].data.ptr = NULL;
}

int pm_loop_run(struct pm_loop *l)
{
	struct epoll_event evs[32];

	while (!l->stop) {
		int i, n = epoll_wait(l->epfd, evs, 32, -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		l->batch = evs;
		l->batch_n = n;
		for (i = 0; i < n && !l->stop; i++) {
			struct pm_watch *w = evs[i].data.ptr;
			if (w)
				w->fn(l, w, evs[i].events);
		}
		l->batch_n = 0;
	}
	return 0;
}

int pm_timer_new(void)
{
	return timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
}

int pm_timer_set(int fd, unsigned ms, unsigned interval_ms)
{
	struct itimerspec its;

	memset(&its, 0, sizeof(its));
	its.it_value.tv_sec = ms / 1000;
	its.it_value.tv_nsec = (long)(ms % 1000) * 1000000L;
	its.it_interval.tv_sec = interval_ms / 1000;
	its.it_interval.tv_nsec = (long)(interval_ms % 1000) * 1000000L;
	if (ms == 0 && interval_ms == 0)
		memset(&its, 0, sizeof(its));
	else if (ms == 0)
		its.it_value.tv_nsec = 1; /* "now": a zero value would disarm */
	return timerfd_settime(fd, 0, &its, NULL);
}

void pm_timer_ack(int fd)
{
	uint64_t n;
	while (read(fd, &n, sizeof(n)) == (ssize_t)sizeof(n))
		;
}
