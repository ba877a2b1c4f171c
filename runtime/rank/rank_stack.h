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

/* A debugger attaching to a Python process costs about a CPU second, and
 * 4-8 of them at once on a busy node all overran a fixed 10 s together:
 * a node runs at most PM_STACK_TOOLS_MAX (half its CPUs, 2 at least) at once, the
 * others wait their turn within the same bound, the hung rank (taken
 * first) ahead of them. The bound is the step's stack-timeout
 * (PM_DEFAULT_STACK_TIMEOUT_MS, the site's default_stack_timeout). */
#define PM_STACK_TOOLS_MAX 4

struct pm_rank_stack {
	struct pm_loop *loop;
	struct pm_watch pid_w, timer_w, retry_w;
	pid_t pid, target;
	bool running, waiting;
	int slot_fd;        /* the node's tool slot held (flock), -1 none */
	unsigned ms;
	unsigned long long t0;
	char out[4096], tool[4096];
	bool gdb;
	void (*done)(void *arg);
	void *arg;
};

/* 0: started (or waiting for a slot), done(arg) follows once; -1: not
 * started (why), nothing follows. Whenever no stack comes, out says why in
 * a line "procmgr: no stack: ...". */
int pm_rank_stack_start(struct pm_rank_stack *st, struct pm_loop *l, pid_t target,
			const char *out, unsigned ms, void (*done)(void *), void *arg, char *why,
			size_t len);
/* Kills a tool still running; done() is not called. */
void pm_rank_stack_stop(struct pm_rank_stack *st);

#endif
