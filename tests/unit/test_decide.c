/* Unit tests of the root's decisions as verdicts (runtime/procmgrd/decide.c,
 * decide.h): a machine's state and what happened in, a verdict out, case by
 * case as tables (like test_policy.c). Nothing is applied: decide.c calls
 * no action, so no transport is needed; test_gen.c checks the same cases
 * applied, message by message.
 *
 * Expected values are worked out from the policy (never / on-failure:N /
 * always:N, the delay doubling per restart), the slot table (4 nodes, the
 * last a spare) and the printer rule (the root's lowest live rank). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/blame.h"
#include "procmgrd/decide.h"
#include "procmgrd/gen_int.h"

#define CHECK(cond, ...) do { if (!(cond)) fail_msg(__VA_ARGS__); } while (0)

static const struct pm_gen_ops no_ops;
static const char *const names[] = { "n0", "n1", "n2", "n3", "n4", "n5" };

/* The root (node id) of nnodes with 2 ranks each, spares of them spare,
 * in generation 2 running, its ranks' supervisors connected. */
static void machine(struct pm_gen *g, int id, int nnodes, int spares,
		    enum pm_restart_mode mode, int max, int restarts)
{
	struct pm_gen_config cf = {
		.node = id, .nnodes = nnodes, .fanout = 2, .ntasks = 2 * nnodes,
		.ntasks_local = 2, .spares = spares, .names = names, .ops = &no_ops,
		.policy = { .mode = mode, .max_restarts = max, .delay_ms = 1000,
			    .max_delay_ms = 60000 },
	};
	int i;

	assert_int_equal(pm_gen_init(g, &cf), 0);
	g->root = true;
	g->gen = 2;
	g->phase = PM_PHASE_RUNNING;
	g->restarts = restarts;
	for (i = 0; i < 2; i++) {
		g->ranks[i].st = PM_RANK_IDLE;
		g->ranks[i].grank = pm_gen_slot(g, id) < 0 ? -1 : pm_gen_slot(g, id) * 2 + i;
	}
}

#define EXITED(c) ((c) << 8)
#define ON PM_RESTART_ON_FAILURE
#define NEVER PM_RESTART_NEVER
#define ALWAYS PM_RESTART_ALWAYS

/* ---- a failure at the root ---- */

struct fail_case {
	const char *name;
	enum pm_restart_mode mode;
	int max, restarts;
	enum pm_phase phase;
	bool hang_pending;
	int gen, rank, node; /* of the FAIL */
	uint32_t flags;
	int status;
	const char *text;
	/* expected */
	enum pm_verdict_kind kind;
	const char *event;   /* NULL: none */
	const char *field;   /* in the event's fields */
	unsigned delay;
	int code, vrank;     /* GIVE_UP */
	bool blame;
	const char *words;   /* in the tell (RESTART) or the text (GIVE_UP) */
};

static const struct fail_case fails[] = {
	{ "exit 3, first restart", ON, 2, 0, PM_PHASE_RUNNING, false, 2, 5, 1, 0, EXITED(3), "",
	  PM_VERDICT_RESTART, "rank_failed", "\"status\":\"exited with code 3\"", 1000, 0, -1,
	  false, "rank 5 on n1 exited with code 3; restarting all 8 ranks (restart 1 of 2)" },
	{ "exit 3, second restart doubles the delay", ON, 2, 1, PM_PHASE_RUNNING, false, 2, 5, 1,
	  0, EXITED(3), "", PM_VERDICT_RESTART, "rank_failed", "\"rank\":5", 2000, 0, -1, false,
	  "(restart 2 of 2)" },
	{ "exit 3, no restart left", ON, 2, 2, PM_PHASE_RUNNING, false, 2, 5, 1, 0, EXITED(3), "",
	  PM_VERDICT_GIVE_UP, "rank_failed", "\"node\":\"n1\"", 0, 3, 5, true,
	  "giving up after 2 restarts (restart=on-failure:2)" },
	{ "exit 3, never", NEVER, 0, 0, PM_PHASE_RUNNING, false, 2, 5, 1, 0, EXITED(3), "",
	  PM_VERDICT_GIVE_UP, "rank_failed", "\"gen\":2", 0, 3, 5, true,
	  "rank 5 on n1 exited with code 3 in generation 2; not restarting (restart=never)" },
	{ "killed by signal 9: code 137", NEVER, 0, 0, PM_PHASE_RUNNING, false, 2, 5, 1, 0, 9, "",
	  PM_VERDICT_GIVE_UP, "rank_failed", "signal 9", 0, 137, 5, true, "not restarting" },
	{ "the command's words in the status", NEVER, 0, 0, PM_PHASE_RUNNING, false, 2, 5, 1, 0,
	  EXITED(1), "ValueError: bad shape", PM_VERDICT_GIVE_UP, "rank_failed",
	  "\"error\":\"ValueError: bad shape\"", 0, 1, 5, true,
	  "exited with code 1 (ValueError: bad shape)" },
	{ "a lost supervisor is not restarted: the printer says why", ON, 2, 0, PM_PHASE_RUNNING,
	  false, 2, 5, 1, PM_FLAG_LOST, 0, "gone", PM_VERDICT_GIVE_UP, "rank_failed",
	  "lost its supervisor (gone)", 0, 1, 0, false,
	  "rank 5 on n1 lost its supervisor (gone) in generation 2; not restarting" },
	{ "rank 0's supervisor lost: the next live rank prints", ON, 2, 0, PM_PHASE_RUNNING,
	  false, 2, 0, 0, PM_FLAG_LOST, 0, "", PM_VERDICT_GIVE_UP, "rank_failed",
	  "the task was killed", 0, 1, 1, false, "rank 0 on n0 lost its supervisor" },
	{ "a lost supervisor while stopping still ends the step", ON, 2, 0, PM_PHASE_STOPPING,
	  false, 2, 5, 1, PM_FLAG_LOST, 0, "gone", PM_VERDICT_GIVE_UP, "rank_failed",
	  "\"rank\":5", 0, 1, 0, false, "not restarting" },
	{ "cannot run its command: not restarted", ON, 2, 0, PM_PHASE_RUNNING, false, 2, 5, 1,
	  PM_FLAG_EXEC, EXITED(127), "", PM_VERDICT_GIVE_UP, "rank_failed",
	  "\"cannot_run\":true", 0, 127, 5, true, "it would fail the same way (restart=on-failure:2)" },
	{ "an old generation's failure is ignored", ON, 2, 0, PM_PHASE_RUNNING, false, 1, 5, 1, 0,
	  EXITED(3), "", PM_VERDICT_NONE, "rank_failed", "\"ignored\":true", 0, 0, -1, false, NULL },
	{ "a failure while stopping is ignored", ON, 2, 0, PM_PHASE_STOPPING, false, 2, 5, 1, 0,
	  EXITED(3), "", PM_VERDICT_NONE, "rank_failed", "\"ignored\":true", 0, 0, -1, false, NULL },
	{ "hung while running: wait for the stacks", ON, 2, 0, PM_PHASE_RUNNING, false, 2, 5, 1,
	  PM_FLAG_HUNG, 0, "1000 0", PM_VERDICT_WAIT, "rank_failed",
	  "\"hung\":true,\"last_heartbeat_ms\":1000", 0, 0, -1, false, NULL },
	{ "hung, another while the hang stops", ON, 2, 0, PM_PHASE_STOPPING, true, 2, 6, 1,
	  PM_FLAG_HUNG, 0, "900 0", PM_VERDICT_WAIT, "rank_failed", "\"hung\":true", 0, 0, -1,
	  false, NULL },
	{ "hung in an old generation: ignored", ON, 2, 0, PM_PHASE_RUNNING, false, 1, 5, 1,
	  PM_FLAG_HUNG, 0, "1000 0", PM_VERDICT_NONE, "rank_failed", "\"ignored\":true", 0, 0, -1,
	  false, NULL },
	{ "Slurm's cancel: the end, 143", ALWAYS, 5, 0, PM_PHASE_RUNNING, false, 2, -1, 1,
	  PM_FLAG_CANCEL, 0, "rank 5 got SIGTERM from Slurm", PM_VERDICT_GIVE_UP, "cancelled",
	  "\"reason\":\"rank 5 got SIGTERM from Slurm\"", 0, 143, -1, false,
	  "the step was cancelled (rank 5 got SIGTERM from Slurm on n1); not restarting" },
	{ "a check fails while running: restart", ON, 2, 0, PM_PHASE_RUNNING, false, 2, -1, 1,
	  PM_FLAG_HEALTH, 0, "gpu 3 lost", PM_VERDICT_RESTART, "health_failed",
	  "\"when\":\"while running\"", 1000, 0, -1, false,
	  "node n1 failed a health check (gpu 3 lost); restarting all 8 ranks" },
	{ "a check fails before launch: the end", ON, 2, 0, PM_PHASE_STARTING, false, 0, -1, 1,
	  PM_FLAG_HEALTH, 0, "gpu 3 lost", PM_VERDICT_GIVE_UP, "health_failed",
	  "\"when\":\"before launch\"", 0, 1, -1, false,
	  "node n1 failed a health check before launch: gpu 3 lost; ending the step" },
	{ "a check fails before a restart: the end", ON, 2, 1, PM_PHASE_STOPPING, false, 2, -1, 1,
	  PM_FLAG_HEALTH, 0, "disk", PM_VERDICT_GIVE_UP, "health_failed",
	  "\"when\":\"before a restart\"", 0, 1, -1, false, "before a restart: disk" },
	{ "a check fails, no restart left", ON, 1, 1, PM_PHASE_RUNNING, false, 2, -1, 1,
	  PM_FLAG_HEALTH, 0, "disk", PM_VERDICT_GIVE_UP, "health_failed", "disk", 0, 1, -1, false,
	  "(restart=on-failure:1)" },
	{ "the step is over: nothing, not even an event", ON, 2, 0, PM_PHASE_ABORTED, false, 2, 5,
	  1, 0, EXITED(3), "", PM_VERDICT_NONE, NULL, NULL, 0, 0, -1, false, NULL },
};

static void test_fail_table(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(fails) / sizeof(fails[0]); i++) {
		const struct fail_case *c = &fails[i];
		struct pm_verdict v;
		struct pm_msg m;
		struct pm_gen g;

		machine(&g, 0, 4, 0, c->mode, c->max, c->restarts);
		g.phase = c->phase;
		g.hang.pending = c->hang_pending;
		pm_msg_init(&m, PM_MSG_FAIL);
		m.gen = (uint32_t)c->gen;
		m.rank = c->rank;
		m.node = c->node;
		m.count = c->flags;
		m.status = c->status;
		pm_msg_set_text(&m, c->text);
		pm_decide_fail(&g, &m, 50000, &v);
		CHECK(v.kind == c->kind, "%s: %s, not %s", c->name, pm_verdict_name(v.kind),
		      pm_verdict_name(c->kind));
		CHECK(c->event ? v.event && !strcmp(v.event, c->event) : !v.event,
		      "%s: event %s", c->name, v.event ? v.event : "(none)");
		CHECK(!c->field || strstr(v.fields, c->field), "%s: fields %s", c->name, v.fields);
		CHECK(v.lost == -1 && !v.repl_set && !v.avoid_set, "%s: a node lost?", c->name);
		if (c->kind == PM_VERDICT_RESTART) {
			CHECK(v.delay_ms == c->delay, "%s: delay %u", c->name, v.delay_ms);
			CHECK(strstr(v.tell, c->words), "%s: tell '%s'", c->name, v.tell);
		}
		if (c->kind == PM_VERDICT_GIVE_UP) {
			CHECK(v.code == c->code && v.rank == c->vrank && v.blame == c->blame &&
			      v.node == c->node, "%s: code %d rank %d blame %d node %d", c->name,
			      v.code, v.rank, v.blame, v.node);
			CHECK(strstr(v.text, c->words), "%s: text '%s'", c->name, v.text);
			CHECK(!v.tell[0], "%s: a give-up is not told", c->name);
		}
		pm_gen_free(&g);
	}
}

/* The error file's details follow the give-up line, torchrun's way. */
static void test_fail_root_cause(void **state)
{
	struct pm_verdict v;
	struct pm_msg m;
	struct pm_gen g;

	(void)state;
	machine(&g, 0, 4, 0, NEVER, 0, 0);
	pm_msg_init(&m, PM_MSG_FAIL);
	m.gen = 2;
	m.rank = 5;
	m.node = 1;
	m.status = EXITED(1);
	pm_msg_set_text(&m, "ValueError: bad shape\nTraceback:\n  train.py:3");
	pm_decide_fail(&g, &m, 0, &v);
	assert_int_equal(v.kind, PM_VERDICT_GIVE_UP);
	assert_non_null(strstr(v.text, "\nprocmgr: root cause: rank 5 on n1:\n  Traceback:\n"
				       "    train.py:3"));
	pm_gen_free(&g);
}

static void test_hung_at(void **state)
{
	struct pm_msg m;

	(void)state;
	pm_msg_init(&m, PM_MSG_FAIL);
	pm_msg_set_text(&m, "1000 500");
	assert_int_equal(pm_decide_hung_at(&m, 10000), 9500);
	pm_msg_set_text(&m, "1000 20000"); /* older than the clock: not believed */
	assert_int_equal(pm_decide_hung_at(&m, 10000), 10000);
	pm_msg_set_text(&m, "1000 900001"); /* past any bound: not believed */
	assert_int_equal(pm_decide_hung_at(&m, 2000000), 2000000);
}

/* ---- a generation succeeded ---- */

struct done_case {
	const char *name;
	enum pm_restart_mode mode;
	int max, restarts;
	enum pm_verdict_kind kind;
	unsigned delay;
};

static const struct done_case dones[] = {
	{ "never: finish", NEVER, 0, 0, PM_VERDICT_FINISH, 0 },
	{ "on-failure: finish", ON, 3, 0, PM_VERDICT_FINISH, 0 },
	{ "always:2, first: restart", ALWAYS, 2, 0, PM_VERDICT_RESTART, 1000 },
	{ "always:2, second: restart, doubled", ALWAYS, 2, 1, PM_VERDICT_RESTART, 2000 },
	{ "always:2, done: finish", ALWAYS, 2, 2, PM_VERDICT_FINISH, 0 },
};

static void test_done_table(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(dones) / sizeof(dones[0]); i++) {
		const struct done_case *c = &dones[i];
		struct pm_verdict v;
		struct pm_gen g;

		machine(&g, 0, 4, 0, c->mode, c->max, c->restarts);
		pm_decide_done(&g, &v);
		CHECK(v.kind == c->kind, "%s: %s", c->name, pm_verdict_name(v.kind));
		CHECK(!strcmp(v.event, "generation_succeeded") && !strcmp(v.fields, "\"gen\":2"),
		      "%s: event %s {%s}", c->name, v.event, v.fields);
		if (c->kind == PM_VERDICT_RESTART)
			CHECK(v.delay_ms == c->delay && !v.tell[0], "%s: delay %u, tell '%s'",
			      c->name, v.delay_ms, v.tell);
		else
			CHECK(!strcmp(v.tell, "procmgr: all 8 ranks succeeded in generation 2"),
			      "%s: '%s'", c->name, v.tell);
		pm_gen_free(&g);
	}
}

/* ---- a hang, decided at STOPPED ---- */

struct hang_case {
	const char *name;
	enum pm_restart_mode mode;
	int max;
	int followers;
	uint64_t lead;
	int outlier, onode;  /* the op's answer */
	const char *sw, *smissing; /* its words */
	bool ask;
	enum pm_verdict_kind kind;
	int blamed, blamed_node;
	enum pm_blame_by by;
	const char *words;
};

static const struct hang_case hangs[] = {
	{ "one rank hung, nobody followed", ON, 2, 0, 0, -1, -1, "", "", false,
	  PM_VERDICT_RESTART, 3, 1, PM_BLAME_HEARTBEAT, "rank 3 on n1" },
	{ "the oldest heartbeat leads, the stacks name nobody: it is blamed", ON, 2, 1, 5000, -1,
	  -1, "", "", true,
	  PM_VERDICT_RESTART, 3, 1, PM_BLAME_HEARTBEAT, "restarting all 8 ranks (restart 1 of 2)" },
	{ "a tie, the stacks name rank 6", ON, 2, 1, 50, 6, 2, "the only rank not waiting in a "
	  "collective (it is in spin; rank 3 waits in all_reduce)", "", true, PM_VERDICT_RESTART,
	  6, 2, PM_BLAME_STACK, ": rank 6 on n2, the only rank not waiting in a collective (it is "
	  "in spin; rank 3 waits in all_reduce), is the likely cause; restarting" },
	{ "a tie, nobody named, never: the end", NEVER, 0, 1, 50, -1, -1, "no single rank stands "
	  "apart (rank 3 in a; rank 6 in b)", "not taken: the stack of rank 7 (gdb did not finish "
	  "within 10.0 s)", true, PM_VERDICT_GIVE_UP, -1, -1, PM_BLAME_NONE, ": inconclusive: no "
	  "single rank stands apart (rank 3 in a; rank 6 in b); not taken: the stack of rank 7 "
	  "(gdb did not finish within 10.0 s); not restarting (restart=never)" },
	{ "the oldest heartbeat leads, the stacks name rank 6: the stacks win", ON, 2, 1, 5000, 6,
	  2, "the only rank not waiting in a collective (it is in spin; rank 3 waits in "
	  "all_reduce)", "", true, PM_VERDICT_RESTART, 6, 2, PM_BLAME_STACK, "generation 2: "
	  "ranks 3,6 hung: rank 6 on n2, the only rank not waiting in a collective (it is in "
	  "spin; rank 3 waits in all_reduce), is the likely cause (rank 3's last heartbeat is the "
	  "oldest, by 5.0 s: the stacks say more); restarting" },
	{ "blamed, no restart left", ON, 0, 1, 5000, -1, -1, "", "", true, PM_VERDICT_GIVE_UP, 3,
	  1, PM_BLAME_HEARTBEAT, "giving up after 0 restarts (restart=on-failure:0)" },
};

static void test_hang_table(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(hangs) / sizeof(hangs[0]); i++) {
		const struct hang_case *c = &hangs[i];
		struct pm_verdict v;
		struct pm_stack_verdict sv = { .rank = c->outlier };
		struct pm_gen g;

		snprintf(sv.words, sizeof(sv.words), "%s", c->sw);
		snprintf(sv.missing_words, sizeof(sv.missing_words), "%s", c->smissing);
		machine(&g, 0, 4, 0, c->mode, c->max, 0);
		g.phase = PM_PHASE_STOPPING;
		g.hang = (struct pm_hang){ .pending = true, .rank = 3, .node = 1, .beat = 1000,
					   .next_beat = 1000 + c->lead, .followers = c->followers,
					   .follower = { 6 } };
		CHECK(pm_decide_hang_ask(&g) == c->ask, "%s: ask the stacks?", c->name);
		pm_decide_hang(&g, c->ask ? &sv : NULL, c->onode, &v);
		CHECK(v.kind == c->kind, "%s: %s", c->name, pm_verdict_name(v.kind));
		CHECK(v.blamed == c->blamed && v.blamed_node == c->blamed_node &&
		      v.blamed_by == (int)c->by, "%s: blamed %d on %d by %d", c->name, v.blamed,
		      v.blamed_node, v.blamed_by);
		CHECK(!strcmp(v.event, "hang") && strstr(v.fields, pm_blame_name(c->by)),
		      "%s: %s {%s}", c->name, v.event, v.fields);
		CHECK(strstr(c->kind == PM_VERDICT_RESTART ? v.tell : v.text, c->words),
		      "%s: '%s' '%s'", c->name, v.tell, v.text);
		if (c->kind == PM_VERDICT_GIVE_UP)
			CHECK(v.code == 1 && v.rank == c->blamed && v.blame == (c->blamed >= 0) &&
			      v.node == c->blamed_node, "%s: code %d rank %d", c->name, v.code,
			      v.rank);
		pm_gen_free(&g);
	}
}

/* ---- a node lost ---- */

static void test_lost_without_spares(void **state)
{
	struct pm_verdict v;
	struct pm_gen g;

	(void)state;
	machine(&g, 0, 4, 0, ALWAYS, 5, 0);
	pm_decide_lost(&g, 2, "its procmgrd went away", &v);
	assert_int_equal(v.kind, PM_VERDICT_GIVE_UP);
	assert_string_equal(v.event, "node_lost");
	assert_non_null(strstr(v.fields, "\"node\":\"n2\",\"reason\":\"its procmgrd went away\""));
	assert_int_equal(v.lost, 2);
	assert_int_equal(v.code, 1);
	assert_int_equal(v.rank, 0); /* the printer: node 2 cannot say it */
	assert_false(v.blame);
	assert_int_equal(v.node, 2);
	assert_string_equal(v.text, "procmgr: lost node n2 (its procmgrd went away); ending the step");
	g.phase = PM_PHASE_FINISHED;
	pm_decide_lost(&g, 2, "late", &v);
	assert_int_equal(v.kind, PM_VERDICT_NONE);
	assert_null(v.event);
	pm_gen_free(&g);
}

struct replace_case {
	const char *name;
	int id;                 /* the deciding root's node */
	int max, restarts;
	int used;               /* a replacement before: node 1's slot to spare 3; -1 none */
	int out;                /* a node excluded, not yet replaced; -1 none */
	int node;               /* lost */
	enum pm_verdict_kind kind;
	int slot, spare;        /* of the replacement */
	const char *words;      /* in the tell or the text */
	const char *avoid;
	const char *leave;      /* NULL: none */
};

/* 4 nodes, 2 ranks each, node 3 the spare; 5 nodes with two spares for
 * the majority. */
static const struct replace_case replaces[] = {
	{ "a spare takes the slot", 0, 2, 0, -1, -1, 2, PM_VERDICT_REPLACE, 2, 3,
	  "procmgr: generation 2: lost node n2 (why); its ranks 4-5 move to spare n3; "
	  "restarting all 6 ranks (restart 1 of 2, 0 spares left)", "n2", NULL },
	{ "a spare in reserve lost", 0, 2, 0, -1, -1, 3, PM_VERDICT_REPLACE, -1, -1,
	  "procmgr: spare node n3 lost (why); 0 spares left", "n3", NULL },
	{ "no restart left", 0, 2, 2, -1, -1, 2, PM_VERDICT_GIVE_UP, 2, -1,
	  "procmgr: generation 2: lost node n2 (why); no restart left; ending the step "
	  "(restart=on-failure:2). Nodes lost: n2 (why). Next time: --exclude=n2", "n2", NULL },
	{ "no spare left", 0, 2, 0, 1, -1, 2, PM_VERDICT_GIVE_UP, 2, -1,
	  "no spare left; ending the step (restart=on-failure:2). Nodes lost: n1 (before), "
	  "n2 (why). Next time: --exclude=n1,n2", "n1,n2", NULL },
	{ "most of the step gone", 0, 2, 0, -1, 1, 2, PM_VERDICT_GIVE_UP, 2, 3,
	  "lost node n2 (why), and with it most of the step: this side may be the one cut off",
	  "n2", NULL },
	{ "the root itself: it hands over", 0, 2, 0, -1, -1, 0, PM_VERDICT_REPLACE, 0, 3,
	  "its ranks 0-1 move to spare n3", "n0", "procmgr: this node (the root) is out of the step" },
	{ "a spare root in reserve loses itself", 3, 2, 0, -1, -1, 3, PM_VERDICT_REPLACE, -1, -1,
	  "spare node n3 lost", "n3", "procmgr: this spare node is out of the step" },
	{ "said twice: nothing", 0, 2, 0, 1, -1, 1, PM_VERDICT_NONE, 0, 0, NULL, NULL, NULL },
};

static void test_replace_table(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(replaces) / sizeof(replaces[0]); i++) {
		const struct replace_case *c = &replaces[i];
		struct pm_repl used = { .lost = 1, .slot = 1, .spare = 3, .why = "before" };
		struct pm_verdict v;
		struct pm_gen g;

		machine(&g, c->id, 4, 1, ON, c->max, c->restarts);
		if (c->used >= 0)
			pm_gen_apply_repl(&g, &used);
		if (c->out >= 0)
			pm_gen_exclude(&g, c->out);
		pm_decide_replace(&g, c->node, "why", &v);
		CHECK(v.kind == c->kind, "%s: %s", c->name, pm_verdict_name(v.kind));
		if (c->kind == PM_VERDICT_NONE) {
			CHECK(!v.event && !v.repl_set, "%s: said again", c->name);
			pm_gen_free(&g);
			continue;
		}
		CHECK(!strcmp(v.event, "node_lost") && v.lost == c->node, "%s: event %s lost %d",
		      c->name, v.event, v.lost);
		CHECK(v.repl_set && v.repl.lost == c->node && v.repl.slot == c->slot &&
		      v.repl.spare == c->spare && !strcmp(v.repl.why, "why"),
		      "%s: repl %d %d %d", c->name, v.repl.lost, v.repl.slot, v.repl.spare);
		CHECK(v.avoid_set && !strcmp(v.avoid, c->avoid), "%s: avoid '%s'", c->name, v.avoid);
		CHECK(strstr(c->kind == PM_VERDICT_REPLACE ? v.tell : v.text, c->words),
		      "%s: tell '%s' text '%s'", c->name, v.tell, v.text);
		CHECK(c->leave ? !strcmp(v.leave, c->leave) : !v.leave[0], "%s: leave '%s'",
		      c->name, v.leave);
		if (c->kind == PM_VERDICT_GIVE_UP)
			CHECK(v.code == 1 && v.rank == pm_gen_printer(&g, -1) && !v.blame &&
			      v.node == -1, "%s: rank %d", c->name, v.rank);
		if (c->kind == PM_VERDICT_REPLACE && c->slot >= 0)
			CHECK(v.delay_ms == 1000 && strstr(v.replaced, "\"replacement\":1,"
							  "\"spares_left\":0"),
			      "%s: delay %u, %s", c->name, v.delay_ms, v.replaced);
		pm_gen_free(&g);
	}
}

/* The words said before the slot table changes count what is left after. */
static void test_replace_counts_after(void **state)
{
	struct pm_verdict v;
	struct pm_gen g;

	(void)state;
	machine(&g, 0, 5, 2, ON, 3, 0); /* slots n0-n2, spares n3, n4 */
	pm_decide_replace(&g, 1, "why", &v);
	assert_int_equal(v.kind, PM_VERDICT_REPLACE);
	assert_non_null(strstr(v.tell, "move to spare n3; restarting all 6 ranks (restart 1 of 3, "
				       "1 spare left)"));
	pm_gen_apply_repl(&g, &v.repl);
	assert_int_equal(pm_gen_spares_left(&g), 1);
	pm_decide_replace(&g, 4, "gone too", &v);
	assert_string_equal(v.tell, "procmgr: spare node n4 lost (gone too); 0 spares left");
	assert_string_equal(v.avoid, "n1,n4");
	pm_gen_free(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fail_table),
		cmocka_unit_test(test_fail_root_cause),
		cmocka_unit_test(test_hung_at),
		cmocka_unit_test(test_done_table),
		cmocka_unit_test(test_hang_table),
		cmocka_unit_test(test_lost_without_spares),
		cmocka_unit_test(test_replace_table),
		cmocka_unit_test(test_replace_counts_after),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
