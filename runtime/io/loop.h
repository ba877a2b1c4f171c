/* A minimal epoll event loop: every source (sockets, signalfd, timerfd,
 * pidfd, inotify) is a file descriptor with a callback. */
#ifndef PM_LOOP_H
#define PM_LOOP_H

#include <stdbool.h>
#include <sys/epoll.h>
#include <stdint.h>

#include "sys.h" /* the clocks the loop's users measure with */

struct pm_loop;
struct pm_watch;
typedef void (*pm_io_fn)(struct pm_loop *loop, struct pm_watch *w, uint32_t events);

struct pm_watch {
	int fd;
	pm_io_fn fn;
	void *arg;
};

struct pm_loop {
	int epfd;
	bool stop;
	/* The batch being dispatched: a watch deleted (and maybe freed) by an
	 * earlier callback of the batch is taken out of it (pm_loop_del). */
	struct epoll_event *batch;
	int batch_n;
};

int pm_loop_init(struct pm_loop *l);
int pm_loop_add(struct pm_loop *l, struct pm_watch *w, uint32_t events);
int pm_loop_mod(struct pm_loop *l, struct pm_watch *w, uint32_t events);
void pm_loop_del(struct pm_loop *l, struct pm_watch *w);
/* Dispatch events until pm_loop_stop; -1 on an epoll error. */
int pm_loop_run(struct pm_loop *l);
static inline void pm_loop_stop(struct pm_loop *l) { l->stop = true; }

/* A one-shot or periodic timer on CLOCK_MONOTONIC; ms 0 disarms it. */
int pm_timer_new(void);
int pm_timer_set(int fd, unsigned ms, unsigned interval_ms);
/* Consume a timerfd's expiry count (after it became readable). */
void pm_timer_ack(int fd);

#endif
