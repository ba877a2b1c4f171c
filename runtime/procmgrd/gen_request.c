/* What the procmgr command asks of the root (procmgrd/query.c): restart
 * every rank now, counted as a restart; or end the step, every supervisor
 * ending its command with the grace period and exiting 0. */
#include "gen_int.h"

#include <stdio.h>

#include "common/text.h"

static int not_now(const struct pm_gen *g, char *err, size_t len)
{
	if (!pm_gen_is_root(g))
		snprintf(err, len, "only the root node decides");
	else if (pm_gen_terminal(g))
		snprintf(err, len, "the step has already ended");
	else if (g->phase == PM_PHASE_STARTING)
		snprintf(err, len, "the step has not started its ranks yet");
	else if (g->phase != PM_PHASE_RUNNING)
		snprintf(err, len, "generation %u is already being stopped or restarted", g->gen);
	else
		return 0;
	return -1;
}

int pm_gen_request_restart(struct pm_gen *g, const char *who, char *err, size_t len)
{
	char esc[256], text[512];

	if (not_now(g, err, len))
		return -1;
	pm_json_escape(who, esc, sizeof(esc));
	pm_gen_event(g, "restart_requested", "\"gen\":%u,\"by\":\"%s\"", g->gen, esc);
	snprintf(text, sizeof(text), "procmgr: generation %u: %s asked for a restart; "
		 "restarting %s (restart %d)", g->gen, who, pm_gen_all_ranks(g),
		 g->restarts + 1);
	/* Whatever --procmgr-verbose says: someone asked. */
	pm_gen_tell(g, "%s", text);
	pm_gen_root_restart(g, 0);
	pm_gen_progress(g);
	return 0;
}

int pm_gen_request_stop(struct pm_gen *g, const char *who, char *err, size_t len)
{
	char esc[256], text[512];
	struct pm_msg m;

	/* Whatever the phase: a step that is restarting can still be ended. */
	if (!pm_gen_is_root(g) || pm_gen_terminal(g))
		return not_now(g, err, len);
	pm_json_escape(who, esc, sizeof(esc));
	pm_gen_event(g, "stop_requested", "\"gen\":%u,\"by\":\"%s\"", g->gen, esc);
	snprintf(text, sizeof(text), "procmgr: %s asked to stop the step; ending it in "
		 "generation %u", who, g->gen);
	/* Every rank's supervisor ends its command with the grace period and
	 * exits 0: the step was ended on purpose, not failed. */
	pm_msg_init(&m, PM_MSG_ABORT);
	m.gen = g->gen;
	m.status = 0;
	m.rank = pm_gen_printer(g, -1);
	pm_msg_set_text(&m, text);
	pm_gen_end(g, &m);
	pm_gen_progress(g);
	return 0;
}
