/* Unit tests of procmgr-rank's machine (runtime/rank/rank_machine.c) with
 * --procmgr-warm=python:MODS, whose standby is a fork server that outlives
 * the generations: server ready, fork requested (START), pid reported
 * (FORKED), server lost or refusing, and a STOP, a FINISH or a hang while
 * the pid is awaited. Ops record every effect, as in test_rank_machine.c. */
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/warm.h"
#include "rank/rank_machine.h"

enum act { A_SPAWN, A_SEND, A_KILL, A_TIMER, A_CAPTURE, A_SAY, A_DONE, A_STANDBY, A_RELEASE };

struct rec {
	enum act kind;
	int a, b; /* SEND: type, status; KILL: pgid, sig; RELEASE: standby, sb */
	unsigned flags;
	char text[1100];
};

struct world {
	struct rec r[64];
	int n;
	pid_t next_pid, next_sb;
	int release_rc;
	struct pm_rank_m m;
};

static struct rec *add(struct world *w, enum act kind)
{
	struct rec *r;

	assert_true(w->n < (int)(sizeof(w->r) / sizeof(w->r[0])));
	r = &w->r[w->n++];
	memset(r, 0, sizeof(*r));
	r->kind = kind;
	return r;
}

static pid_t op_spawn(void *ctx, const struct pm_rank_m *m, bool *noexec)
{
	(void)m;
	*noexec = false;
	add(ctx, A_SPAWN);
	return ((struct world *)ctx)->next_pid;
}

static void op_send(void *ctx, enum pm_msg_type t, uint32_t gen, int status, unsigned flags,
		    const char *text)
{
	struct rec *r = add(ctx, A_SEND);

	(void)gen;
	r->a = (int)t;
	r->b = status;
	r->flags = flags;
	snprintf(r->text, sizeof(r->text), "%s", text ? text : "");
}

static void op_kill(void *ctx, pid_t pgid, int sig)
{
	struct rec *r = add(ctx, A_KILL);

	r->a = (int)pgid;
	r->b = sig;
}

static void op_timer(void *ctx, enum pm_rank_timer t, unsigned ms)
{
	struct rec *r = add(ctx, A_TIMER);

	r->a = (int)t;
	r->b = (int)ms;
}

static int op_capture(void *ctx, pid_t pid)
{
	add(ctx, A_CAPTURE)->a = (int)pid;
	return 0;
}

static void op_capture_stop(void *ctx) { (void)ctx; }
static void op_failure(void *ctx, char *text, size_t len)
{
	(void)ctx;
	snprintf(text, len, "boom");
}

static void op_say(void *ctx, const char *line)
{
	snprintf(add(ctx, A_SAY)->text, sizeof(((struct rec *)0)->text), "%s", line);
}

static uint64_t op_wall_ms(void *ctx) { (void)ctx; return 1000; }
static void op_done(void *ctx) { add(ctx, A_DONE); }

static pid_t op_standby(void *ctx, const struct pm_rank_m *m)
{
	(void)m;
	add(ctx, A_STANDBY);
	return ((struct world *)ctx)->next_sb;
}

static int op_release(void *ctx, const struct pm_rank_m *m, bool standby)
{
	struct rec *r = add(ctx, A_RELEASE);

	r->a = standby;
	r->b = (int)m->sb;
	return ((struct world *)ctx)->release_rc;
}

static const struct pm_rank_ops ops = {
	.spawn = op_spawn, .send = op_send, .kill = op_kill, .timer = op_timer,
	.capture = op_capture, .capture_stop = op_capture_stop, .failure = op_failure,
	.say = op_say, .wall_ms = op_wall_ms, .done = op_done,
	.standby = op_standby, .release = op_release,
};

static void ev(struct world *w, enum pm_rank_event t, uint32_t gen, int status)
{
	struct pm_rank_ev e = { .type = t, .gen = gen, .rank = -1, .status = status };

	w->n = 0;
	pm_rank_m_event(&w->m, &e);
}

static int count(struct world *w, enum act kind)
{
	int i, k = 0;

	for (i = 0; i < w->n; i++)
		k += w->r[i].kind == kind;
	return k;
}

static struct rec *sent(struct world *w, enum pm_msg_type t)
{
	int j;

	for (j = 0; j < w->n; j++)
		if (w->r[j].kind == A_SEND && w->r[j].a == (int)t)
			return &w->r[j];
	return NULL;
}

static bool killed(struct world *w, pid_t pgid, int sig)
{
	int j;

	for (j = 0; j < w->n; j++)
		if (w->r[j].kind == A_KILL && w->r[j].a == (int)pgid && w->r[j].b == sig)
			return true;
	return false;
}

static bool said(struct world *w, const char *part)
{
	int j;

	for (j = 0; j < w->n; j++)
		if (w->r[j].kind == A_SAY && strstr(w->r[j].text, part))
			return true;
	return false;
}

/* Generation 0 ran cold (pid 100) and ended; the fork server (pid 200),
 * started behind it, said ready. */
static int setup(void **state)
{
	struct world *w = calloc(1, sizeof(*w));
	struct pm_rank_cfg cfg = { .grace_ms = 5000, .hang_ms = 3000, .hang_first_ms = 9000,
				   .peer_timeout_ms = 30000, .heartbeat = true, .node = "n1",
				   .warm = PM_RW_PYTHON };

	assert_non_null(w);
	w->next_pid = 100;
	w->next_sb = 200;
	pm_rank_m_init(&w->m, &cfg, &ops, w, 3);
	ev(w, PM_RE_START, 0, 0);
	assert_int_equal(count(w, A_SPAWN), 1);
	assert_int_equal(count(w, A_STANDBY), 0); /* not before its first heartbeat */
	ev(w, PM_RE_BEAT, 0, 0);
	assert_int_equal(count(w, A_STANDBY), 1);
	ev(w, PM_RE_READY, 0, 1);
	assert_int_equal(w->m.sb_state, PM_SB_READY);
	ev(w, PM_RE_CHILD_EXIT, 0, 1 << 8);
	assert_int_equal(w->m.state, PM_RS_IDLE);
	*state = w;
	return 0;
}

static int teardown(void **state)
{
	free(*state);
	return 0;
}

/* START asks the server to fork; the pid it says is the generation's;
 * the server stays, and forks the generation after too. */
static void test_fork_each_generation(void **state)
{
	struct world *w = *state;
	uint32_t g;

	for (g = 1; g <= 2; g++) {
		ev(w, PM_RE_START, g, 0);
		assert_int_equal(count(w, A_RELEASE), 1);
		assert_int_equal(count(w, A_SPAWN), 0);
		assert_int_equal(count(w, A_STANDBY), 0);
		assert_null(sent(w, PM_MSG_RANK_RUN)); /* no pid yet */
		assert_null(sent(w, PM_MSG_RANK_STANDBY)); /* forking is still ready */
		assert_int_equal(w->m.state, PM_RS_RUNNING);
		assert_int_equal(w->m.sb_state, PM_SB_FORKING);
		assert_int_equal(w->m.child, 0);
		assert_true(w->m.warm_start);
		ev(w, PM_RE_FORKED, g, 300 + (int)g);
		assert_non_null(sent(w, PM_MSG_RANK_RUN));
		assert_int_equal(sent(w, PM_MSG_RANK_RUN)->b, 300 + (int)g);
		assert_int_equal(w->m.child, 300 + (int)g);
		assert_int_equal(w->m.sb_state, PM_SB_READY);
		assert_int_equal(w->m.sb, 200);
		assert_int_equal(count(w, A_KILL), 0);
		ev(w, PM_RE_BEAT, g, 0);
		assert_int_equal(count(w, A_STANDBY), 0); /* the same server */
		ev(w, PM_RE_CHILD_EXIT, g, 1 << 8);
		assert_non_null(sent(w, PM_MSG_RANK_EXIT));
		assert_string_equal(sent(w, PM_MSG_RANK_EXIT)->text, "boom");
	}
}

/* A pid said when no fork was asked for is not taken. */
static void test_forked_unasked(void **state)
{
	struct world *w = *state;

	ev(w, PM_RE_START, 1, 0);
	ev(w, PM_RE_FORKED, 1, 301);
	ev(w, PM_RE_FORKED, 1, 999);
	assert_int_equal(w->m.child, 301);
	assert_int_equal(w->n, 0);
	ev(w, PM_RE_CHILD_EXIT, 1, 0);
	ev(w, PM_RE_FORKED, 1, 998); /* idle */
	assert_int_equal(w->m.child, 0);
	assert_int_equal(w->m.state, PM_RS_IDLE);
}

/* The server dies at the fork: the generation starts cold, said; a new
 * server is started behind it. */
static void test_server_lost_at_the_fork(void **state)
{
	struct world *w = *state;

	ev(w, PM_RE_START, 1, 0);
	w->next_pid = 150;
	w->next_sb = 250;
	ev(w, PM_RE_SB_EXIT, 1, SIGKILL);
	assert_true(said(w, "rank 3 on n1: generation 1 starts cold: its fork server ended at "
			 "the fork (killed by signal 9)"));
	assert_int_equal(count(w, A_SPAWN), 1);
	assert_int_equal(sent(w, PM_MSG_RANK_RUN)->b, 150);
	assert_int_equal(w->m.child, 150);
	assert_false(w->m.warm_start);
	assert_int_equal(count(w, A_STANDBY), 0); /* not before its first heartbeat */
	ev(w, PM_RE_BEAT, 1, 0);
	assert_int_equal(count(w, A_STANDBY), 1);
	assert_int_equal(w->m.sb, 250);
	assert_int_equal(w->m.sb_state, PM_SB_WARMING);
}

/* The server cannot be sent the generation: killed, cold, said. */
static void test_server_lost_at_the_handover(void **state)
{
	struct world *w = *state;

	w->release_rc = -1;
	ev(w, PM_RE_START, 1, 0);
	assert_true(killed(w, -200, SIGKILL));
	assert_true(said(w, "generation 1 starts cold: its fork server was lost at the hand-over"));
	assert_int_equal(count(w, A_SPAWN), 1);
	assert_int_equal(w->m.child, 100);
	assert_int_equal(w->m.sb_state, PM_SB_NONE);
}

/* A server that refused (a thread, CUDA: PM_WARM_REFUSED_EXIT) is not
 * tried again: every generation cold, said. */
static void test_server_refused(void **state)
{
	struct world *w = *state;

	ev(w, PM_RE_START, 1, 0);
	ev(w, PM_RE_SB_EXIT, 1, PM_WARM_REFUSED_EXIT << 8);
	assert_true(w->m.sb_refused);
	assert_true(said(w, "generation 1 starts cold: its fork server refused to fork"));
	assert_int_equal(count(w, A_SPAWN), 1);
	assert_int_equal(count(w, A_STANDBY), 0);
	ev(w, PM_RE_BEAT, 1, 0);
	ev(w, PM_RE_CHILD_EXIT, 1, 1 << 8);
	ev(w, PM_RE_START, 2, 0);
	assert_int_equal(count(w, A_SAY), 0); /* said once */
	assert_int_equal(count(w, A_SPAWN), 1);
	assert_int_equal(count(w, A_STANDBY), 0);
	assert_int_equal(count(w, A_RELEASE), 0);
}

/* Refused before it said ready: the next START says so, once. */
static void test_server_refused_before_ready(void **state)
{
	struct world *w = *state;

	ev(w, PM_RE_START, 1, 0);
	ev(w, PM_RE_FORKED, 1, 301);
	ev(w, PM_RE_CHILD_EXIT, 1, 1 << 8);
	w->m.sb_state = PM_SB_WARMING; /* as if a new one were starting */
	ev(w, PM_RE_SB_EXIT, 1, PM_WARM_REFUSED_EXIT << 8);
	assert_int_equal(w->n, 1); /* RANK_STANDBY: none now */
	ev(w, PM_RE_START, 2, 0);
	assert_true(said(w, "generation 2 starts cold: its fork server refused to fork (said "
			 "above); every generation starts cold"));
	assert_int_equal(count(w, A_SPAWN), 1);
	assert_int_equal(count(w, A_STANDBY), 0);
	ev(w, PM_RE_CHILD_EXIT, 2, 1 << 8);
	ev(w, PM_RE_START, 3, 0);
	assert_int_equal(count(w, A_SAY), 0);
}

/* STOP before the pid came: the stop reaches the process once said. */
static void test_stop_while_forking(void **state)
{
	struct world *w = *state;

	ev(w, PM_RE_START, 1, 0);
	ev(w, PM_RE_STOP, 1, 0);
	assert_int_equal(w->m.state, PM_RS_STOPPING);
	assert_int_equal(count(w, A_KILL), 0); /* no pid to signal yet */
	ev(w, PM_RE_FORKED, 1, 301);
	assert_true(killed(w, -301, SIGTERM));
	assert_true(killed(w, -301, SIGCONT));
	assert_non_null(sent(w, PM_MSG_RANK_RUN));
	ev(w, PM_RE_CHILD_EXIT, 1, SIGTERM);
	assert_int_equal(sent(w, PM_MSG_RANK_STOPPED)->b, SIGTERM);
	assert_int_equal(w->m.state, PM_RS_IDLE);
}

/* STOP before the pid came, then the server dies: nothing runs, stopped. */
static void test_stop_while_forking_server_lost(void **state)
{
	struct world *w = *state;

	ev(w, PM_RE_START, 1, 0);
	ev(w, PM_RE_STOP, 1, 0);
	ev(w, PM_RE_SB_EXIT, 1, SIGKILL);
	assert_non_null(sent(w, PM_MSG_RANK_STOPPED));
	assert_int_equal(count(w, A_SPAWN), 0);
	assert_int_equal(w->m.state, PM_RS_IDLE);
}

/* FINISH (or SIGTERM) before the pid came: the server goes, we end. */
static void test_finish_while_forking(void **state)
{
	struct world *w = *state;

	ev(w, PM_RE_START, 1, 0);
	ev(w, PM_RE_FINISH, 1, 0);
	assert_true(killed(w, -200, SIGKILL));
	assert_int_equal(count(w, A_DONE), 1);
	assert_int_equal(w->m.state, PM_RS_DONE);
	assert_int_equal(w->m.sb, 0);
}

static void test_sigterm_while_forking(void **state)
{
	struct world *w = *state;

	ev(w, PM_RE_START, 1, 0);
	ev(w, PM_RE_SIGTERM, 1, SIGTERM);
	assert_int_equal(sent(w, PM_MSG_RANK_EXIT)->flags, PM_FLAG_CANCEL);
	assert_true(killed(w, -200, SIGKILL));
	assert_int_equal(count(w, A_DONE), 1);
	assert_int_equal(w->m.exit_code, 128 + SIGTERM);
}

/* Hung before its pid came (no first heartbeat in time): no capture of
 * pid 0; the stop waits for the pid. */
static void test_hang_while_forking(void **state)
{
	struct world *w = *state;

	ev(w, PM_RE_START, 1, 0);
	ev(w, PM_RE_HANG, 1, 0);
	assert_int_equal(count(w, A_CAPTURE), 0);
	assert_int_equal(w->m.state, PM_RS_STOPPING);
	ev(w, PM_RE_FORKED, 1, 301);
	assert_true(killed(w, -301, SIGTERM));
	ev(w, PM_RE_GRACE, 1, 0);
	assert_true(killed(w, -301, SIGKILL));
}

/* The warm channel's "pid N": what the fork server says. */
static void test_pid_line(void **state)
{
	struct pm_warm_line l;
	char line[64], err[256];
	(void)state;

	snprintf(line, sizeof(line), "pid 4242");
	assert_int_equal(pm_warm_parse(line, strlen(line), &l, err, sizeof(err)), 0);
	assert_int_equal(l.kind, PM_WARM_PID);
	assert_int_equal(l.pid, 4242);
	snprintf(line, sizeof(line), "pid 1");
	assert_int_equal(pm_warm_parse(line, strlen(line), &l, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "pid needs a process id, a whole number from 2 to"));
	snprintf(line, sizeof(line), "pid -3");
	assert_int_equal(pm_warm_parse(line, strlen(line), &l, err, sizeof(err)), -1);
	snprintf(line, sizeof(line), "pid 4294967297");
	assert_int_equal(pm_warm_parse(line, strlen(line), &l, err, sizeof(err)), -1);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_fork_each_generation),
		T(test_forked_unasked),
		T(test_server_lost_at_the_fork),
		T(test_server_lost_at_the_handover),
		T(test_server_refused),
		T(test_server_refused_before_ready),
		T(test_stop_while_forking),
		T(test_stop_while_forking_server_lost),
		T(test_finish_while_forking),
		T(test_sigterm_while_forking),
		T(test_hang_while_forking),
		cmocka_unit_test(test_pid_line),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
