/* Whose state a sweep's trial sees: statescope.h. */
#include "statescope.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint32_t pm_scope_of_start(struct pm_scope_run *run, int requeues, uint32_t attempt)
{
	/* A requeued trial starts over: its ranks are on other slots now,
	 * and what the lost node held of its state is gone; seeing the rest
	 * would mix two points of one run. */
	if (run->scope && run->requeues == requeues)
		return run->scope;
	run->scope = attempt;
	run->requeues = requeues;
	return attempt;
}

enum pm_scope_act pm_scope_on_start(uint32_t cur, uint32_t start)
{
	return cur && cur == start ? PM_SCOPE_KEEP : PM_SCOPE_DROP;
}

bool pm_scope_on_end(uint32_t cur, uint32_t ended)
{
	return cur && cur == ended;
}

bool pm_scope_may_use(bool sweep, uint32_t conn, uint32_t cur)
{
	return !sweep || (conn && conn == cur);
}

int pm_scope_from_trial_text(const char *text, uint32_t *scope, char *err, unsigned errlen)
{
	const char *nl = strchr(text, '\n'), *sp;
	unsigned long v;
	char *end;

	*scope = 0;
	if (!nl) {
		snprintf(err, errlen, "trial start without a command line");
		return -1;
	}
	for (sp = nl; sp > text && sp[-1] != ' '; sp--)
		;
	if (sp == text || sp == nl || *sp < '0' || *sp > '9') {
		snprintf(err, errlen, "trial start without a state scope");
		return -1;
	}
	v = strtoul(sp, &end, 10);
	if (end != nl || v == 0 || v > UINT32_MAX) {
		snprintf(err, errlen, "trial start with a bad state scope");
		return -1;
	}
	*scope = (uint32_t)v;
	return 0;
}
