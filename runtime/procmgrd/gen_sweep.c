/* The end of a sweep step, decided by the root's sweep (sweep_run.c) rather
 * than by the restart policy: FINISH, or ABORT with the sweep's code. */
#include "gen_int.h"

#include <stdio.h>

#include "common/text.h"

void pm_gen_sweep_end(struct pm_gen *g, int code, const char *text)
{
	char esc[PM_WIRE_TEXT_MAX * 2], f[sizeof(esc) + 64];
	struct pm_msg m;

	if (pm_gen_terminal(g))
		return;
	pm_json_escape(text ? text : "", esc, sizeof(esc));
	snprintf(f, sizeof(f), code ? "\"gen\":%u,\"exit_code\":%d,\"message\":\"%s\"" :
		 "\"gen\":%u", g->gen, code, esc);
	g->cf.ops->event(g->cf.ctx, code ? "give_up" : "finish", f);
	pm_msg_init(&m, code ? PM_MSG_ABORT : PM_MSG_FINISH);
	m.gen = g->gen;
	m.status = code;
	m.rank = -1;
	m.node = g->cf.node;
	if (text)
		pm_msg_set_text(&m, text);
	pm_gen_end(g, &m);
}
