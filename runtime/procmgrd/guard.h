/* The step's health checks in procmgrd: before launch (synchronously, before
 * the event loop runs), between generations and periodically (both in a
 * child process, off the event loop, so that a slow check never delays a
 * decision or a frame). */
#ifndef PM_GUARD_H
#define PM_GUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/checkspec.h"
#include "io/loop.h"

struct pm_health;
struct pm_step;

/* One run of the checks in a child process, its result read from a pipe. */
struct pm_guard_job {
	struct pm_guard *g;
	struct pm_watch pipe_w;
	pid_t child;
	char buf[1024];
	size_t len;
};

struct pm_guard {
	struct pm_check *checks;
	int n;
	struct pm_health *h;
	char report[4096]; /* file for the plugin: the failure, to drain on */
	const char *node;
	struct pm_loop *loop;
	struct pm_watch timer_w;
	struct pm_guard_job periodic, between;
	/* called with "<check>: <reason>" when a periodic run fails */
	void (*on_fail)(void *arg, const char *why);
	/* called when a run started by pm_guard_start ends (why NULL: passed) */
	void (*on_checked)(void *arg, const char *why);
	void *arg;
};

/* list: the resolved check list ("" for none). */
int pm_guard_init(struct pm_guard *g, const char *list, const char *node,
		  const char *report, unsigned timeout_ms, char *err, size_t errlen);
/* Run every check now, here (before launch, before the loop runs); on the
 * first that is not ok, why says which and why, the report file is
 * written, and -1 is returned. */
int pm_guard_run(struct pm_guard *g, char *why, size_t len);
/* Run them in a child, off the event loop: 1 when there are none, 0 when
 * started (on_checked follows), -1 when no child could be started. */
int pm_guard_start(struct pm_guard *g, struct pm_loop *l, char *why, size_t len);
/* Every interval_ms, in a child process. */
int pm_guard_periodic(struct pm_guard *g, struct pm_loop *l, unsigned interval_ms);
void pm_guard_free(struct pm_guard *g, struct pm_loop *l);

#endif
