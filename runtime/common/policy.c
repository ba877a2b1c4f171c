#include "policy.h"

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

void pm_policy_from_opts(struct pm_policy *p, const struct pm_opts *o)
{
	p->mode = o->restart;
	p->max_restarts = o->restart == PM_RESTART_NEVER ? 0 : o->restart_max;
	p->delay_ms = o->restart_delay_ms;
	p->max_delay_ms = PM_MAX_DELAY_MS;
}

static unsigned backoff(const struct pm_policy *p, int restarts)
{
	unsigned long long d = p->delay_ms;
	int i;

	for (i = 0; i < restarts && d < p->max_delay_ms; i++)
		d *= 2;
	return d > p->max_delay_ms ? p->max_delay_ms : (unsigned)d;
}

enum pm_decision pm_policy_decide(const struct pm_policy *p, int restarts,
				  bool failed, unsigned *delay_ms)
{
	bool again;

	switch (p->mode) {
	case PM_RESTART_NEVER:
		return failed ? PM_DECIDE_ABORT : PM_DECIDE_FINISH;
	case PM_RESTART_ON_FAILURE:
		if (!failed)
			return PM_DECIDE_FINISH;
		again = restarts < p->max_restarts;
		break;
	case PM_RESTART_ALWAYS:
		again = restarts < p->max_restarts;
		if (!again)
			return failed ? PM_DECIDE_ABORT : PM_DECIDE_FINISH;
		break;
	default:
		return PM_DECIDE_ABORT;
	}
	if (!again)
		return PM_DECIDE_ABORT;
	*delay_ms = backoff(p, restarts);
	return PM_DECIDE_RESTART;
}

int pm_status_exit_code(int wstatus)
{
	if (WIFEXITED(wstatus))
		return WEXITSTATUS(wstatus);
	if (WIFSIGNALED(wstatus))
		return 128 + WTERMSIG(wstatus);
	return 1;
}

void pm_status_describe(int wstatus, bool hung, char *buf, unsigned len)
{
	if (hung)
		snprintf(buf, len, "hung (no heartbeat)");
	else if (WIFEXITED(wstatus))
		snprintf(buf, len, "exited with code %d", WEXITSTATUS(wstatus));
	else if (WIFSIGNALED(wstatus))
		snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(wstatus),
			 strsignal(WTERMSIG(wstatus)));
	else
		snprintf(buf, len, "ended with status 0x%x", (unsigned)wstatus);
}
