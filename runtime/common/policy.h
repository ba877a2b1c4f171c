/* The restart policy, decided at the root when a generation ends. Pure. */
#ifndef PM_POLICY_H
#define PM_POLICY_H

#include <stdbool.h>

#include "options.h"

enum pm_decision {
	PM_DECIDE_RESTART, /* stop everything, start generation g+1 */
	PM_DECIDE_FINISH,  /* the step succeeded */
	PM_DECIDE_ABORT,   /* give up: end with the failing rank's status */
};

struct pm_policy {
	enum pm_restart_mode mode;
	int max_restarts;
	unsigned delay_ms;     /* first delay */
	unsigned max_delay_ms; /* cap of the doubling */
};

void pm_policy_from_opts(struct pm_policy *p, const struct pm_opts *o);
/* restarts: how many were done already; failed: a rank failed or hung (else
 * every rank succeeded). *delay_ms is set for a restart. */
enum pm_decision pm_policy_decide(const struct pm_policy *p, int restarts,
				  bool failed, unsigned *delay_ms);
/* The exit code a step ends with for a rank's wait status: the exit code,
 * or 128 + the signal, as a shell reports it. */
int pm_status_exit_code(int wstatus);
/* "exit code 3", "signal 9 (Killed)", "hung" into buf. */
void pm_status_describe(int wstatus, bool hung, char *buf, unsigned len);

#endif
