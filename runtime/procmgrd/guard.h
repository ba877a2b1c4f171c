/* The step's health checks in procmgrd: before launch, between generations
 * (synchronously: no rank runs then) and periodically (in a child process,
 * off the event loop, so that a slow check never delays a decision). */
#ifndef PM_GUARD_H
#define PM_GUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/checkspec.h"
#include "io/loop.h"

struct pm_health;
struct pm_step;

struct pm_guard {
	struct pm_check *checks;
	int n;
	struct pm_health *h;
	char report[4096]; /* file for the plugin: the failure, to drain on */
	const char *node;
	/* periodic */
	struct pm_watch timer_w, pipe_w;
	pid_t child;
	char buf[1024];
	size_t len;
	/* called with "<check>: <reason>" when a periodic run fails */
	void (*on_fail)(void *arg, const char *why);
	void *arg;
};

/* list: the resolved check list ("" for none). */
int pm_guard_init(struct pm_guard *g, const char *list, const char *node,
		  const char *report, unsigned timeout_ms, char *err, size_t errlen);
/* Run every check now; on the first that is not ok, why says which and
 * why, the report file is written, and -1 is returned. */
int pm_guard_run(struct pm_guard *g, char *why, size_t len);
/* Every interval_ms, in a child process. */
int pm_guard_periodic(struct pm_guard *g, struct pm_loop *l, unsigned interval_ms);
void pm_guard_free(struct pm_guard *g, struct pm_loop *l);

#endif
