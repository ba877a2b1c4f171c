/* On a hang the supervisor takes its command's stack before stopping it:
 * as the command's parent it may trace it whatever Yama allows, and the
 * command is still there to be seen. Bounded: a tool still running after
 * its time is killed, and the stop goes on. */
#ifndef PM_RANK_STACK_H
#define PM_RANK_STACK_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "io/loop.h"

/* Each node's ranks are taken in parallel; a debugger attaching to a
 * Python process costs about a CPU second. */
#define PM_HANG_STACK_MS 10000

struct pm_rank_stack {
	struct pm_loop *loop;
	struct pm_watch pid_w, timer_w;
	pid_t pid;
	bool running;
	void (*done)(void *arg);
	void *arg;
};

/* 0: started, done(arg) follows once; -1: not started (why), nothing follows. */
int pm_rank_stack_start(struct pm_rank_stack *st, struct pm_loop *l, pid_t target,
			const char *out, unsigned ms, void (*done)(void *), void *arg, char *why,
			size_t len);
/* Kills a tool still running; done() is not called. */
void pm_rank_stack_stop(struct pm_rank_stack *st);

#endif
