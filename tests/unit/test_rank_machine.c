/* Unit tests of procmgr-rank's machine (runtime/rank/rank_machine.c),
 * scenario by scenario, through ops that record every effect: what goes to
 * procmgrd, which signals go to the command's group, which timers are set.
 * The interleavings that have bitten have a test each: a hang's capture of
 * generation g across START of g+1, EXIT racing STOP, SIGTERM during a
 * capture. */
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rank/rank_machine.h"

enum act { A_SPAWN, A_SEND, A_KILL, A_TIMER, A_CAPTURE, A_CAPSTOP, A_SAY, A_DONE, A_STANDBY,
	   A_RELEASE };

struct rec {
	enum act kind;
	int a, b;           /* SEND: type, status; KILL: pgid, sig; TIMER: which, ms */
	unsigned flags;     /* SEND */
	uint32_t gen;       /* SEND, SPAWN */
	char text[1100];    /* SEND, SAY */
};

struct world {
	struct rec r[64];
	int n;
	pid_t next_pid;     /* what spawn answers; <= 0: it fails */
	bool noexec;
	int capture_rc;
	const char *failure;
	uint64_t wall;
	pid_t next_sb;      /* what standby answers */
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
	struct world *w = ctx;
	struct rec *r = add(w, A_SPAWN);

	r->gen = m->gen;
	r->a = m->grank;
	r->b = m->group;
	snprintf(r->text, sizeof(r->text), "%s", m->master);
	*noexec = w->noexec;
	return w->next_pid;
}

static void op_send(void *ctx, enum pm_msg_type t, uint32_t gen, int status, unsigned flags,
		    const char *text)
{
	struct rec *r = add(ctx, A_SEND);

	r->a = (int)t;
	r->b = status;
	r->flags = flags;
	r->gen = gen;
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
	struct world *w = ctx;

	add(w, A_CAPTURE)->a = (int)pid;
	return w->capture_rc;
}

static void op_capture_stop(void *ctx) { add(ctx, A_CAPSTOP); }

static void op_failure(void *ctx, char *text, size_t len)
{
	struct world *w = ctx;

	snprintf(text, len, "%s", w->failure ? w->failure : "");
}

static void op_say(void *ctx, const char *line)
{
	snprintf(add(ctx, A_SAY)->text, sizeof(((struct rec *)0)->text), "%s", line);
}

static uint64_t op_wall_ms(void *ctx) { return ((struct world *)ctx)->wall; }
static void op_done(void *ctx) { add(ctx, A_DONE); }

static pid_t op_standby(void *ctx, const struct pm_rank_m *m)
{
	struct world *w = ctx;

	add(w, A_STANDBY)->gen = m->gen;
	return w->next_sb;
}

static int op_release(void *ctx, const struct pm_rank_m *m, bool standby)
{
	struct world *w = ctx;
	struct rec *r = add(w, A_RELEASE);

	r->a = standby;
	r->b = (int)m->sb;
	r->gen = m->gen;
	return w->release_rc;
}

static const struct pm_rank_ops ops = {
	.spawn = op_spawn, .send = op_send, .kill = op_kill, .timer = op_timer,
	.capture = op_capture, .capture_stop = op_capture_stop, .failure = op_failure,
	.say = op_say, .wall_ms = op_wall_ms, .done = op_done,
	.standby = op_standby, .release = op_release,
};

static struct world *world_new_warm(bool heartbeat, unsigned hang_first_ms,
				    enum pm_rank_warm warm)
{
	struct world *w = calloc(1, sizeof(*w));
	struct pm_rank_cfg cfg = { .grace_ms = 5000, .hang_ms = 3000,
				   .hang_first_ms = hang_first_ms,
				   .peer_timeout_ms = 30000, .heartbeat = heartbeat,
				   .node = "n1", .warm = warm };

	assert_non_null(w);
	w->next_pid = 100;
	w->next_sb = 200;
	w->wall = 1000;
	pm_rank_m_init(&w->m, &cfg, &ops, w, 3);
	return w;
}

static struct world *world_new(bool heartbeat, unsigned hang_first_ms)
{
	return world_new_warm(heartbeat, hang_first_ms, PM_RW_OFF);
}

static int setup(void **state)
{
	*state = world_new(true, 0);
	return 0;
}

static int teardown(void **state)
{
	free(*state);
	return 0;
}

/* ---- feeding events ---- */

static void ev(struct world *w, enum pm_rank_event t, uint32_t gen, int status)
{
	struct pm_rank_ev e = { .type = t, .gen = gen, .rank = -1, .status = status };

	w->n = 0;
	pm_rank_m_event(&w->m, &e);
}

static void start(struct world *w, uint32_t gen)
{
	ev(w, PM_RE_START, gen, 0);
}

/* ---- what came out ---- */

static int count(struct world *w, enum act kind)
{
	int i, k = 0;

	for (i = 0; i < w->n; i++)
		k += w->r[i].kind == kind;
	return k;
}

static struct rec *find(struct world *w, enum act kind, int i)
{
	int j;

	for (j = 0; j < w->n; j++)
		if (w->r[j].kind == kind && i-- == 0)
			return &w->r[j];
	return NULL;
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

static int timer(struct world *w, enum pm_rank_timer t)
{
	int j, ms = -1;

	for (j = 0; j < w->n; j++)
		if (w->r[j].kind == A_TIMER && w->r[j].a == (int)t)
			ms = w->r[j].b;
	return ms;
}

/* ---- scenarios ---- */

static void test_start_and_clean_exit(void **state)
{
	struct world *w = *state;
	struct rec *r;

	assert_int_equal(w->m.state, PM_RS_IDLE);
	start(w, 0);
	assert_int_equal(w->m.state, PM_RS_RUNNING);
	assert_int_equal(count(w, A_SPAWN), 1);
	r = sent(w, PM_MSG_RANK_RUN);
	assert_non_null(r);
	assert_int_equal(r->b, 100);
	assert_int_equal(r->flags, 0);
	/* No first-heartbeat bound configured: the hang timer waits for a beat. */
	assert_int_equal(timer(w, PM_RT_HANG), 0);

	ev(w, PM_RE_CHILD_EXIT, 0, 0);
	assert_int_equal(w->m.state, PM_RS_IDLE);
	r = sent(w, PM_MSG_RANK_EXIT);
	assert_non_null(r);
	assert_int_equal(r->b, 0);
	assert_int_equal(r->flags, 0);
	assert_string_equal(r->text, "");
	assert_int_equal(timer(w, PM_RT_GRACE), 0);
	assert_int_equal(w->m.child, 0);
}

static void test_failure_says_why(void **state)
{
	struct world *w = *state;
	struct rec *r;

	start(w, 0);
	w->failure = "RuntimeError: boom";
	ev(w, PM_RE_CHILD_EXIT, 0, 1 << 8);
	r = sent(w, PM_MSG_RANK_EXIT);
	assert_non_null(r);
	assert_int_equal(r->b, 1 << 8);
	assert_string_equal(r->text, "RuntimeError: boom");
	assert_int_equal(w->m.last_status, 1 << 8);
}

static void test_noexec(void **state)
{
	struct world *w = *state;
	struct rec *r;

	w->noexec = true;
	start(w, 0);
	ev(w, PM_RE_CHILD_EXIT, 0, 127 << 8);
	r = sent(w, PM_MSG_RANK_EXIT);
	assert_non_null(r);
	assert_int_equal(r->flags, PM_FLAG_EXEC);
	assert_string_equal(r->text, "");

	/* The next generation could run: the flag is its own. */
	w->noexec = false;
	w->failure = "x";
	start(w, 1);
	ev(w, PM_RE_CHILD_EXIT, 1, 127 << 8);
	assert_int_equal(sent(w, PM_MSG_RANK_EXIT)->flags, 0);
}

static void test_spawn_fails(void **state)
{
	struct world *w = *state;
	struct rec *r;

	w->next_pid = -1;
	start(w, 2);
	assert_int_equal(w->m.state, PM_RS_IDLE);
	r = sent(w, PM_MSG_RANK_EXIT);
	assert_non_null(r);
	assert_int_equal(r->b, 127 << 8);
	assert_int_equal(r->gen, 2);
	assert_null(sent(w, PM_MSG_RANK_RUN));
	assert_int_equal(timer(w, PM_RT_HANG), 0);
	/* The next START tries again. */
	w->next_pid = 101;
	start(w, 3);
	assert_int_equal(w->m.state, PM_RS_RUNNING);
}

static void test_spares_start_sets_who(void **state)
{
	struct world *w = *state;
	struct pm_rank_ev e = { .type = PM_RE_START, .gen = 4, .rank = 9, .group = 2,
				.master = "node7" };
	struct rec *r;

	w->n = 0;
	pm_rank_m_event(&w->m, &e);
	r = find(w, A_SPAWN, 0);
	assert_non_null(r);
	assert_int_equal(r->a, 9);
	assert_int_equal(r->b, 2);
	assert_string_equal(r->text, "node7");
	assert_int_equal(w->m.grank, 9);
}

static void test_start_while_running_ignored(void **state)
{
	struct world *w = *state;

	start(w, 0);
	start(w, 1);
	assert_int_equal(w->n, 0);
	assert_int_equal(w->m.gen, 0);
}

static void test_stop_grace_kill(void **state)
{
	struct world *w = *state;
	struct rec *r;

	start(w, 0);
	ev(w, PM_RE_STOP, 0, 0);
	assert_int_equal(w->m.state, PM_RS_STOPPING);
	assert_true(killed(w, -100, SIGTERM));
	assert_true(killed(w, -100, SIGCONT));
	assert_int_equal(timer(w, PM_RT_GRACE), 5000);
	/* A second STOP neither signals again nor restarts the grace. */
	ev(w, PM_RE_STOP, 0, 0);
	assert_int_equal(w->n, 0);
	ev(w, PM_RE_GRACE, 0, 0);
	assert_true(killed(w, -100, SIGKILL));
	ev(w, PM_RE_CHILD_EXIT, 0, SIGKILL);
	assert_int_equal(w->m.state, PM_RS_IDLE);
	r = sent(w, PM_MSG_RANK_STOPPED);
	assert_non_null(r);
	assert_int_equal(r->b, SIGKILL);
	assert_null(sent(w, PM_MSG_RANK_EXIT));
	/* A stale grace after the end kills nothing. */
	ev(w, PM_RE_GRACE, 0, 0);
	assert_int_equal(w->n, 0);
}

static void test_stop_other_gen(void **state)
{
	struct world *w = *state;
	struct rec *r;

	/* Nothing ran yet. */
	ev(w, PM_RE_STOP, 0, 0);
	assert_non_null(sent(w, PM_MSG_RANK_STOPPED));
	start(w, 1);
	ev(w, PM_RE_STOP, 0, 0);
	r = sent(w, PM_MSG_RANK_STOPPED);
	assert_non_null(r);
	assert_int_equal(w->m.state, PM_RS_RUNNING);
	assert_int_equal(count(w, A_KILL), 0);
}

/* The command ends on its own while procmgrd's STOP for it is on the
 * way: its EXIT goes up, then the STOP is answered STOPPED with its
 * status; nothing is signalled. */
static void test_exit_racing_stop(void **state)
{
	struct world *w = *state;
	struct rec *r;

	start(w, 0);
	w->failure = "oops";
	ev(w, PM_RE_CHILD_EXIT, 0, 2 << 8);
	assert_non_null(sent(w, PM_MSG_RANK_EXIT));
	ev(w, PM_RE_STOP, 0, 0);
	r = sent(w, PM_MSG_RANK_STOPPED);
	assert_non_null(r);
	assert_int_equal(r->b, 2 << 8);
	assert_int_equal(count(w, A_KILL), 0);
	assert_int_equal(w->m.state, PM_RS_IDLE);
}

/* The other order: STOP first, the command's end (by itself) after: a
 * stopped generation, not a failure. */
static void test_stop_then_exit(void **state)
{
	struct world *w = *state;

	start(w, 0);
	ev(w, PM_RE_STOP, 0, 0);
	ev(w, PM_RE_CHILD_EXIT, 0, 3 << 8);
	assert_non_null(sent(w, PM_MSG_RANK_STOPPED));
	assert_null(sent(w, PM_MSG_RANK_EXIT));
}

static void test_beat_then_hang(void **state)
{
	struct world *w = *state;
	struct rec *r;

	start(w, 0);
	w->wall = 2000;
	ev(w, PM_RE_BEAT, 0, 0);
	r = sent(w, PM_MSG_RANK_RUN);
	assert_non_null(r);
	assert_int_equal(r->flags, PM_FLAG_BEAT);
	assert_int_equal(timer(w, PM_RT_HANG), 3000);
	/* Only the first beat is said. */
	w->wall = 2500;
	ev(w, PM_RE_BEAT, 0, 0);
	assert_null(sent(w, PM_MSG_RANK_RUN));
	assert_int_equal(timer(w, PM_RT_HANG), 3000);

	w->wall = 5500;
	ev(w, PM_RE_HANG, 0, 0);
	assert_int_equal(w->m.state, PM_RS_CAPTURING);
	r = find(w, A_SAY, 0);
	assert_non_null(r);
	assert_string_equal(r->text, "procmgr: rank 3 on n1 hung: no heartbeat for 3 s");
	assert_int_equal(find(w, A_CAPTURE, 0)->a, 100);
	assert_int_equal(count(w, A_KILL), 0); /* not before its stack is taken */

	/* procmgrd's own STOP (hung) meanwhile: the capture ends in the stop. */
	ev(w, PM_RE_STOP_HUNG, 0, 0);
	assert_int_equal(w->n, 0);
	ev(w, PM_RE_STOP, 0, 0);
	assert_int_equal(w->n, 0);

	ev(w, PM_RE_CAPTURED, 0, 0);
	assert_int_equal(w->m.state, PM_RS_STOPPING);
	assert_true(killed(w, -100, SIGTERM));
	w->wall = 9250;
	ev(w, PM_RE_CHILD_EXIT, 0, SIGTERM);
	r = sent(w, PM_MSG_RANK_EXIT);
	assert_non_null(r);
	assert_int_equal(r->flags, PM_FLAG_HUNG);
	/* Its last beat, and how long ago it was judged hung (the stack and
	 * the stop took 3.75 s: the root counts them in the recovery). */
	assert_string_equal(r->text, "2500 3750");
}

static void test_hang_first(void **state)
{
	struct world *w = world_new(true, 7000);
	struct rec *r;

	(void)state;
	start(w, 0);
	assert_int_equal(timer(w, PM_RT_HANG), 7000);
	ev(w, PM_RE_HANG, 0, 0);
	r = find(w, A_SAY, 0);
	assert_non_null(r);
	assert_string_equal(r->text, "procmgr: rank 3 on n1 hung: no first heartbeat within "
				     "7 s of its start");
	assert_int_equal(w->m.state, PM_RS_CAPTURING);
	free(w);
}

/* Without a first-heartbeat bound, a command that never beat is not hung. */
static void test_hang_without_beat_ignored(void **state)
{
	struct world *w = *state;

	start(w, 0);
	ev(w, PM_RE_HANG, 0, 0);
	assert_int_equal(w->n, 0);
	assert_int_equal(w->m.state, PM_RS_RUNNING);
}

static void test_capture_fails_stops_at_once(void **state)
{
	struct world *w = *state;

	w->capture_rc = -1;
	start(w, 0);
	ev(w, PM_RE_BEAT, 0, 0);
	ev(w, PM_RE_HANG, 0, 0);
	assert_int_equal(w->m.state, PM_RS_STOPPING);
	assert_true(killed(w, -100, SIGTERM));
}

/* No heartbeat file: no stack is asked for, the stop is at once. */
static void test_stop_hung_without_heartbeat(void **state)
{
	struct world *w = world_new(false, 0);

	(void)state;
	start(w, 0);
	ev(w, PM_RE_STOP_HUNG, 0, 0);
	assert_int_equal(count(w, A_CAPTURE), 0);
	assert_true(killed(w, -100, SIGTERM));
	ev(w, PM_RE_STOP_HUNG, 1, 0);
	assert_non_null(sent(w, PM_MSG_RANK_STOPPED));
	free(w);
}

/* Another rank hung: this one's stack is taken, its end is a stop. */
static void test_stop_hung_other_rank(void **state)
{
	struct world *w = *state;

	start(w, 0);
	ev(w, PM_RE_STOP_HUNG, 0, 0);
	assert_int_equal(w->m.state, PM_RS_CAPTURING);
	ev(w, PM_RE_CAPTURED, 0, 0);
	ev(w, PM_RE_CHILD_EXIT, 0, SIGTERM);
	assert_non_null(sent(w, PM_MSG_RANK_STOPPED));
	assert_null(sent(w, PM_MSG_RANK_EXIT));
}

/* The bug restart.bats hung on: generation g's command ends during its
 * capture, START of g+1 comes, then the capture's end. It must not stop
 * generation g+1. */
static void test_capture_across_start(void **state)
{
	struct world *w = *state;

	start(w, 0);
	ev(w, PM_RE_STOP_HUNG, 0, 0);
	assert_int_equal(w->m.state, PM_RS_CAPTURING);
	ev(w, PM_RE_CHILD_EXIT, 0, 1 << 8);
	assert_int_equal(w->m.state, PM_RS_IDLE);
	assert_int_equal(count(w, A_CAPSTOP), 1); /* nothing left to trace */
	assert_non_null(sent(w, PM_MSG_RANK_EXIT));
	w->next_pid = 200;
	start(w, 1);
	assert_int_equal(count(w, A_CAPSTOP), 1);
	assert_int_equal(w->m.state, PM_RS_RUNNING);
	ev(w, PM_RE_CAPTURED, 0, 0);
	assert_int_equal(w->n, 0);
	assert_int_equal(w->m.state, PM_RS_RUNNING);
	/* And generation g+1 is stopped by its own STOP only. */
	ev(w, PM_RE_STOP, 0, 0);
	assert_int_equal(count(w, A_KILL), 0);
	ev(w, PM_RE_STOP, 1, 0);
	assert_true(killed(w, -200, SIGTERM));
}

/* scancel during a capture: the cancel is said, the command signalled, and
 * the capture's end changes nothing; we exit once the command ended. */
static void test_sigterm_during_capture(void **state)
{
	struct world *w = *state;
	struct rec *r;

	start(w, 0);
	ev(w, PM_RE_BEAT, 0, 0);
	ev(w, PM_RE_HANG, 0, 0);
	assert_int_equal(w->m.state, PM_RS_CAPTURING);
	ev(w, PM_RE_SIGTERM, 0, SIGTERM);
	r = sent(w, PM_MSG_RANK_EXIT);
	assert_non_null(r);
	assert_int_equal(r->flags, PM_FLAG_CANCEL);
	assert_int_equal(r->b, SIGTERM);
	assert_true(killed(w, -100, SIGTERM));
	assert_int_equal(timer(w, PM_RT_GRACE), 5000);
	assert_int_equal(w->m.state, PM_RS_EXITING);
	ev(w, PM_RE_CAPTURED, 0, 0);
	assert_int_equal(w->n, 0);
	/* A second signal is passed on, not said again. */
	ev(w, PM_RE_SIGTERM, 0, SIGINT);
	assert_null(sent(w, PM_MSG_RANK_EXIT));
	assert_true(killed(w, -100, SIGINT));
	ev(w, PM_RE_CHILD_EXIT, 0, SIGTERM);
	assert_int_equal(count(w, A_SEND), 0);
	assert_int_equal(count(w, A_DONE), 1);
	assert_int_equal(w->m.state, PM_RS_DONE);
	assert_int_equal(w->m.exit_code, 128 + SIGINT);
}

static void test_sigterm_idle(void **state)
{
	struct world *w = *state;

	ev(w, PM_RE_SIGTERM, 0, SIGTERM);
	assert_non_null(sent(w, PM_MSG_RANK_EXIT));
	assert_int_equal(count(w, A_KILL), 0);
	assert_int_equal(count(w, A_DONE), 1);
	assert_int_equal(w->m.exit_code, 128 + SIGTERM);
	/* Done absorbs what comes after. */
	start(w, 1);
	ev(w, PM_RE_CHILD_EXIT, 0, 0);
	ev(w, PM_RE_LINK_LOST, 0, 0);
	assert_int_equal(w->n, 0);
	ev(w, PM_RE_STOP, 0, 0);
	assert_non_null(sent(w, PM_MSG_RANK_STOPPED));
}

static void test_finish_running(void **state)
{
	struct world *w = *state;

	start(w, 0);
	ev(w, PM_RE_FINISH, 0, 7);
	assert_int_equal(w->m.state, PM_RS_EXITING);
	assert_true(killed(w, -100, SIGTERM));
	/* ABORT after FINISH: only the code changes. */
	ev(w, PM_RE_FINISH, 0, 9);
	assert_int_equal(count(w, A_KILL), 0);
	/* Nothing starts while we are ending. */
	start(w, 1);
	assert_int_equal(w->n, 0);
	ev(w, PM_RE_GRACE, 0, 0);
	assert_true(killed(w, -100, SIGKILL));
	ev(w, PM_RE_CHILD_EXIT, 0, SIGKILL);
	assert_int_equal(count(w, A_SEND), 0);
	assert_int_equal(count(w, A_DONE), 1);
	assert_int_equal(w->m.exit_code, 9);
}

/* FINISH while already stopping: no second TERM, and the end is ours. */
static void test_finish_while_stopping(void **state)
{
	struct world *w = *state;

	start(w, 0);
	ev(w, PM_RE_STOP, 0, 0);
	ev(w, PM_RE_FINISH, 0, 0);
	assert_int_equal(w->n, 0);
	assert_int_equal(w->m.state, PM_RS_EXITING);
	ev(w, PM_RE_CHILD_EXIT, 0, SIGTERM);
	assert_int_equal(count(w, A_DONE), 1);
	assert_null(sent(w, PM_MSG_RANK_STOPPED));
}

static void test_finish_idle(void **state)
{
	struct world *w = *state;

	ev(w, PM_RE_FINISH, 0, 0);
	assert_int_equal(count(w, A_DONE), 1);
	assert_int_equal(w->m.state, PM_RS_DONE);
	assert_true(pm_rank_m_exiting(&w->m));
}

static void test_link_lost(void **state)
{
	struct world *w = *state;
	struct pm_rank_ev e = { .type = PM_RE_LINK_LOST, .rank = -1, .why = "reset" };
	struct rec *r;

	start(w, 0);
	w->n = 0;
	pm_rank_m_event(&w->m, &e);
	r = find(w, A_SAY, 0);
	assert_non_null(r);
	assert_string_equal(r->text, "procmgr: rank 3 on n1 lost its node's procmgrd: reset; "
				     "ending");
	assert_true(killed(w, -100, SIGTERM));
	assert_int_equal(w->m.exit_code, 1);
	/* Lost again while ending: nothing more is said. */
	ev(w, PM_RE_LINK_LOST, 0, 0);
	ev(w, PM_RE_PEER_SILENT, 0, 0);
	assert_int_equal(w->n, 0);
}

static void test_peer_silent(void **state)
{
	struct world *w = *state;
	struct rec *r;

	ev(w, PM_RE_PEER_SILENT, 0, 0);
	r = find(w, A_SAY, 0);
	assert_non_null(r);
	assert_string_equal(r->text, "procmgr: rank 3 on n1: its node's procmgrd stopped "
				     "answering (no heartbeat for 30 s); ending");
	assert_int_equal(count(w, A_DONE), 1);
	assert_int_equal(w->m.exit_code, 1);
}

static void test_signal_forwarded(void **state)
{
	struct world *w = *state;

	ev(w, PM_RE_SIGNAL, 0, SIGUSR1);
	assert_int_equal(w->n, 0); /* no command: nobody to tell */
	start(w, 0);
	ev(w, PM_RE_SIGNAL, 0, SIGUSR1);
	assert_true(killed(w, -100, SIGUSR1));
	assert_int_equal(w->m.state, PM_RS_RUNNING);
}

/* Beats count only while the command runs (not once it is being stopped). */
static void test_no_beat_while_stopping(void **state)
{
	struct world *w = *state;

	start(w, 0);
	ev(w, PM_RE_STOP, 0, 0);
	ev(w, PM_RE_BEAT, 0, 0);
	ev(w, PM_RE_HANG, 0, 0);
	assert_int_equal(w->n, 0);
}

/* ---- warm generations ---- */

static bool said(struct world *w, const char *part)
{
	int j;

	for (j = 0; j < w->n; j++)
		if (w->r[j].kind == A_SAY && strstr(w->r[j].text, part))
			return true;
	return false;
}

/* Contract mode, the whole path: generation 0 starts cold; its "ready"
 * earns a standby (released at once itself); the standby's "ready"; the
 * failure; START hands the standby the generation (no fork), a new
 * standby behind it. */
static void test_warm_contract(void **state)
{
	struct world *w = world_new_warm(false, 0, PM_RW_CONTRACT);
	struct rec *r;
	(void)state;

	start(w, 0);
	assert_int_equal(count(w, A_SPAWN), 1);
	assert_int_equal(count(w, A_STANDBY), 0); /* not earned yet */
	assert_int_equal(count(w, A_SAY), 0);
	ev(w, PM_RE_READY, 0, 0);
	r = find(w, A_RELEASE, 0);
	assert_non_null(r);
	assert_int_equal(r->a, 0); /* the running command, nothing handed over */
	assert_int_equal(count(w, A_STANDBY), 1);
	assert_int_equal(w->m.sb_state, PM_SB_WARMING);
	assert_int_equal(w->m.sb, 200);
	ev(w, PM_RE_READY, 0, 1);
	assert_int_equal(w->m.sb_state, PM_SB_READY);
	/* Only procmgrd told (procmgr status shows it): ready, its group. */
	assert_int_equal(w->n, 1);
	r = sent(w, PM_MSG_RANK_STANDBY);
	assert_non_null(r);
	assert_int_equal(r->b, 200);
	assert_int_equal(r->flags, PM_SB_READY);

	w->failure = "boom";
	ev(w, PM_RE_CHILD_EXIT, 0, 1 << 8);
	assert_non_null(sent(w, PM_MSG_RANK_EXIT));
	assert_int_equal(count(w, A_KILL), 0); /* the standby stays */
	w->next_sb = 201;
	start(w, 1);
	assert_int_equal(count(w, A_SPAWN), 0);
	r = find(w, A_RELEASE, 0);
	assert_non_null(r);
	assert_int_equal(r->a, 1);
	assert_int_equal(r->gen, 1);
	assert_int_equal(w->m.child, 200);
	assert_true(w->m.warm_start);
	r = sent(w, PM_MSG_RANK_RUN);
	assert_non_null(r);
	assert_int_equal(r->b, 200);
	assert_int_equal(r->gen, 1);
	assert_int_equal(count(w, A_SAY), 0);
	/* The next one's standby, behind it. */
	assert_int_equal(count(w, A_STANDBY), 1);
	assert_int_equal(w->m.sb, 201);
	assert_int_equal(w->m.sb_state, PM_SB_WARMING);
	assert_int_equal(w->m.state, PM_RS_RUNNING);
	free(w);
}

/* procmgrd learns each change of the standby (PM_MSG_RANK_STANDBY:
 * status its group, count its state) and nothing when none changed; never
 * without warm, never once we ended. */
static void test_warm_tells_standby(void **state)
{
	struct world *w = world_new_warm(false, 0, PM_RW_CONTRACT);
	struct rec *r;
	(void)state;

	start(w, 0);
	assert_null(sent(w, PM_MSG_RANK_STANDBY)); /* not earned yet: nothing changed */
	ev(w, PM_RE_READY, 0, 0);
	r = sent(w, PM_MSG_RANK_STANDBY);
	assert_non_null(r);
	assert_int_equal(r->b, 200);
	assert_int_equal(r->flags, PM_SB_WARMING);
	ev(w, PM_RE_BEAT, 0, 0);
	assert_null(sent(w, PM_MSG_RANK_STANDBY));
	ev(w, PM_RE_READY, 0, 1);
	assert_int_equal(sent(w, PM_MSG_RANK_STANDBY)->flags, PM_SB_READY);
	ev(w, PM_RE_CHILD_EXIT, 0, 1 << 8);
	assert_null(sent(w, PM_MSG_RANK_STANDBY));
	/* The hand-over and the next standby: told as the new one, starting. */
	w->next_sb = 201;
	start(w, 1);
	r = sent(w, PM_MSG_RANK_STANDBY);
	assert_non_null(r);
	assert_int_equal(r->b, 201);
	assert_int_equal(r->flags, PM_SB_WARMING);
	/* The step's end kills it: no word after we are done. */
	ev(w, PM_RE_FINISH, 1, 0);
	ev(w, PM_RE_CHILD_EXIT, 1, SIGTERM);
	assert_int_equal(w->m.state, PM_RS_DONE);
	assert_null(sent(w, PM_MSG_RANK_STANDBY));
	free(w);

	w = world_new(false, 0);
	start(w, 0);
	ev(w, PM_RE_READY, 0, 0);
	assert_null(sent(w, PM_MSG_RANK_STANDBY));
	free(w);
}

/* A spare's supervisor (procmgrd's word) keeps a standby though no
 * command of its own earned one; the slot it is given starts from it,
 * as the slot's rank; a new standby behind. Idle without warm: nothing. */
static void test_warm_spare(void **state)
{
	struct world *w = world_new_warm(false, 0, PM_RW_CONTRACT);
	struct pm_rank_ev e = { .type = PM_RE_START, .gen = 2, .rank = 5, .group = 2,
				.master = "n0" };
	struct rec *r;
	(void)state;

	ev(w, PM_RE_SPARE, 0, 0);
	assert_int_equal(count(w, A_STANDBY), 1);
	assert_int_equal(w->m.sb_state, PM_SB_WARMING);
	assert_non_null(sent(w, PM_MSG_RANK_STANDBY));
	ev(w, PM_RE_SPARE, 0, 0); /* said twice: one standby */
	assert_int_equal(count(w, A_STANDBY), 0);
	ev(w, PM_RE_READY, 0, 1);
	assert_int_equal(w->m.sb_state, PM_SB_READY);
	w->n = 0;
	w->next_sb = 201;
	pm_rank_m_event(&w->m, &e);
	assert_int_equal(count(w, A_SPAWN), 0);
	r = find(w, A_RELEASE, 0);
	assert_non_null(r);
	assert_int_equal(r->a, 1);
	assert_int_equal(w->m.grank, 5);
	assert_true(w->m.warm_start);
	assert_int_equal(w->m.child, 200);
	assert_int_equal(w->m.sb, 201);
	free(w);

	w = world_new(false, 0);
	ev(w, PM_RE_SPARE, 0, 0);
	assert_int_equal(w->n, 0);
	free(w);
}

/* A program that never says ready: every generation cold, said once. */
static void test_warm_never_ready(void **state)
{
	struct world *w = world_new_warm(false, 0, PM_RW_CONTRACT);
	(void)state;

	start(w, 0);
	ev(w, PM_RE_CHILD_EXIT, 0, 1 << 8);
	start(w, 1);
	assert_int_equal(count(w, A_SPAWN), 1);
	assert_int_equal(count(w, A_STANDBY), 0);
	assert_true(said(w, "rank 3 on n1: generation 1 starts cold: the program never said "
			    "ready"));
	assert_false(w->m.warm_start);
	ev(w, PM_RE_CHILD_EXIT, 1, 1 << 8);
	start(w, 2);
	assert_int_equal(count(w, A_SPAWN), 1);
	assert_int_equal(count(w, A_SAY), 0);
	free(w);
}

/* START before the standby is ready: cold, said; the standby is kept for
 * the next generation (not a second one), and serves it once ready. */
static void test_warm_start_before_ready(void **state)
{
	struct world *w = world_new_warm(false, 0, PM_RW_CONTRACT);
	(void)state;

	start(w, 0);
	ev(w, PM_RE_READY, 0, 0);
	ev(w, PM_RE_CHILD_EXIT, 0, 1 << 8);
	w->next_pid = 101;
	start(w, 1);
	assert_int_equal(count(w, A_SPAWN), 1);
	assert_true(said(w, "generation 1 starts cold: its standby is not ready yet"));
	assert_int_equal(count(w, A_KILL), 0);
	assert_int_equal(count(w, A_STANDBY), 0);
	assert_int_equal(w->m.child, 101);
	assert_int_equal(w->m.sb, 200);
	ev(w, PM_RE_READY, 1, 1);
	ev(w, PM_RE_CHILD_EXIT, 1, 1 << 8);
	start(w, 2);
	assert_int_equal(count(w, A_SPAWN), 0);
	assert_int_equal(w->m.child, 200);
	free(w);
}

/* A standby that dies in its start-up: the next START is cold and says
 * how it ended; a new standby is tried behind it. */
static void test_warm_standby_dies(void **state)
{
	struct world *w = world_new_warm(false, 0, PM_RW_CONTRACT);
	(void)state;

	start(w, 0);
	ev(w, PM_RE_READY, 0, 0);
	ev(w, PM_RE_SB_EXIT, 0, 3 << 8);
	assert_int_equal(w->m.sb, 0);
	assert_int_equal(w->m.sb_state, PM_SB_NONE);
	assert_int_equal(w->m.state, PM_RS_RUNNING); /* the generation runs on */
	/* procmgrd is told there is none now; nothing else. */
	assert_int_equal(w->n, 1);
	assert_non_null(sent(w, PM_MSG_RANK_STANDBY));
	assert_int_equal(sent(w, PM_MSG_RANK_STANDBY)->b, 0);
	assert_int_equal(sent(w, PM_MSG_RANK_STANDBY)->flags, PM_SB_NONE);
	ev(w, PM_RE_CHILD_EXIT, 0, 1 << 8);
	w->next_sb = 202;
	start(w, 1);
	assert_int_equal(count(w, A_SPAWN), 1);
	assert_true(said(w, "generation 1 starts cold: its standby ended before it was ready "
			    "(exit 3)"));
	assert_int_equal(count(w, A_STANDBY), 1);
	assert_int_equal(w->m.sb, 202);
	/* Said for that loss only. */
	ev(w, PM_RE_SB_EXIT, 1, SIGKILL);
	ev(w, PM_RE_CHILD_EXIT, 1, 1 << 8);
	start(w, 2);
	assert_true(said(w, "(killed by signal 9)"));
	free(w);
}

/* The standby said ready but is gone when the generation is handed to it
 * (EPIPE): killed for sure, cold start, said. */
static void test_warm_handover_lost(void **state)
{
	struct world *w = world_new_warm(false, 0, PM_RW_CONTRACT);
	(void)state;

	start(w, 0);
	ev(w, PM_RE_READY, 0, 0);
	ev(w, PM_RE_READY, 0, 1);
	ev(w, PM_RE_CHILD_EXIT, 0, 1 << 8);
	w->release_rc = -1;
	w->next_pid = 102;
	w->next_sb = 203;
	start(w, 1);
	assert_true(killed(w, -200, SIGKILL));
	assert_true(said(w, "generation 1 starts cold: its standby was lost at the hand-over"));
	assert_int_equal(count(w, A_SPAWN), 1);
	assert_int_equal(w->m.child, 102);
	assert_false(w->m.warm_start);
	assert_int_equal(w->m.sb, 203);
	free(w);
}

/* STOP right after the hand-over: the released standby is the command,
 * stopped as any; the new standby behind it is left alone. */
static void test_warm_stop_during_handover(void **state)
{
	struct world *w = world_new_warm(false, 0, PM_RW_CONTRACT);
	(void)state;

	start(w, 0);
	ev(w, PM_RE_READY, 0, 0);
	ev(w, PM_RE_READY, 0, 1);
	ev(w, PM_RE_CHILD_EXIT, 0, 1 << 8);
	w->next_sb = 204;
	start(w, 1);
	ev(w, PM_RE_STOP, 1, 0);
	assert_true(killed(w, -200, SIGTERM));
	assert_false(killed(w, -204, SIGTERM));
	assert_int_equal(w->m.state, PM_RS_STOPPING);
	/* The released program's own "ready" (late, or a second call) changes
	 * nothing about the standby. */
	ev(w, PM_RE_READY, 1, 0);
	assert_int_equal(count(w, A_STANDBY), 0);
	ev(w, PM_RE_CHILD_EXIT, 1, SIGTERM);
	assert_non_null(sent(w, PM_MSG_RANK_STOPPED));
	assert_int_equal(w->m.state, PM_RS_IDLE);
	assert_int_equal(w->m.sb, 204);
	assert_int_equal(count(w, A_KILL), 0);
	free(w);
}

/* The step's end, scancel, procmgrd lost: the standby is killed with
 * everything else, whatever state it is in. */
static void test_warm_end_kills_standby(void **state)
{
	struct world *w = world_new_warm(false, 0, PM_RW_CONTRACT);
	(void)state;

	start(w, 0);
	ev(w, PM_RE_READY, 0, 0);
	ev(w, PM_RE_FINISH, 0, 0);
	assert_true(killed(w, -200, SIGKILL));
	assert_true(killed(w, -100, SIGTERM));
	assert_int_equal(w->m.sb, 0);
	ev(w, PM_RE_SB_EXIT, 0, SIGKILL); /* no report, no change */
	assert_int_equal(w->n, 0);
	free(w);

	w = world_new_warm(false, 0, PM_RW_CONTRACT);
	start(w, 0);
	ev(w, PM_RE_READY, 0, 0);
	ev(w, PM_RE_READY, 0, 1);
	ev(w, PM_RE_CHILD_EXIT, 0, 1 << 8);
	ev(w, PM_RE_SIGTERM, 0, SIGTERM); /* idle, between generations */
	assert_true(killed(w, -200, SIGKILL));
	assert_int_equal(count(w, A_DONE), 1);
	free(w);

	w = world_new_warm(false, 0, PM_RW_CONTRACT);
	start(w, 0);
	ev(w, PM_RE_READY, 0, 0);
	ev(w, PM_RE_LINK_LOST, 0, 0);
	assert_true(killed(w, -200, SIGKILL));
	free(w);
}

/* procmgr's python server: earned from the start, a standby behind the
 * first generation; a server that cannot be started ends warm (said by
 * the op) and is not retried at each generation. */
static void test_warm_python(void **state)
{
	struct world *w = world_new_warm(false, 0, PM_RW_PYTHON);
	(void)state;

	start(w, 0);
	assert_int_equal(count(w, A_SPAWN), 1);
	assert_int_equal(count(w, A_STANDBY), 1);
	assert_int_equal(count(w, A_SAY), 0);
	free(w);

	w = world_new_warm(false, 0, PM_RW_PYTHON);
	w->next_sb = -1;
	start(w, 0);
	assert_int_equal(count(w, A_STANDBY), 1);
	assert_int_equal(w->m.sb_state, PM_SB_NONE);
	ev(w, PM_RE_CHILD_EXIT, 0, 1 << 8);
	start(w, 1);
	assert_int_equal(count(w, A_STANDBY), 0);
	assert_int_equal(count(w, A_SPAWN), 1);
	free(w);
}

/* With heartbeats watched, the next standby waits for the generation's
 * first heartbeat: its start-up must not compete with the rendezvous. */
static void test_warm_standby_after_first_beat(void **state)
{
	struct world *w = world_new_warm(true, 0, PM_RW_CONTRACT);
	(void)state;

	start(w, 0);
	ev(w, PM_RE_READY, 0, 0);
	assert_non_null(find(w, A_RELEASE, 0));
	assert_int_equal(count(w, A_STANDBY), 0);
	ev(w, PM_RE_BEAT, 0, 0);
	assert_int_equal(count(w, A_STANDBY), 1);
	ev(w, PM_RE_BEAT, 0, 0);
	assert_int_equal(count(w, A_STANDBY), 0);
	ev(w, PM_RE_READY, 0, 1);
	ev(w, PM_RE_CHILD_EXIT, 0, 1 << 8);
	start(w, 1);
	assert_int_equal(w->m.child, 200);
	assert_int_equal(count(w, A_STANDBY), 0);
	ev(w, PM_RE_BEAT, 1, 0);
	assert_int_equal(count(w, A_STANDBY), 1);
	free(w);

	/* A program that beats before it says ready gets its standby then. */
	w = world_new_warm(true, 0, PM_RW_CONTRACT);
	start(w, 0);
	ev(w, PM_RE_BEAT, 0, 0);
	ev(w, PM_RE_READY, 0, 0);
	assert_int_equal(count(w, A_STANDBY), 1);
	free(w);
}

/* Warm off: "ready" from anyone does nothing but let the program go on
 * (a no-op channel is never even opened, but the machine holds anyway). */
static void test_warm_off(void **state)
{
	struct world *w = *state;

	start(w, 0);
	ev(w, PM_RE_READY, 0, 1);
	assert_int_equal(w->m.sb_state, PM_SB_NONE);
	ev(w, PM_RE_CHILD_EXIT, 0, 1 << 8);
	start(w, 1);
	assert_int_equal(count(w, A_RELEASE), 0);
	assert_int_equal(count(w, A_STANDBY), 0);
	assert_int_equal(count(w, A_SAY), 0);
}

/* Every state takes every event without leaving the table, and the names
 * cover both enums. */
static void test_table_total(void **state)
{
	int s, e;

	(void)state;
	for (s = 0; s < PM_RS_NSTATES; s++) {
		assert_string_not_equal(pm_rank_state_name((enum pm_rank_state)s), "?");
		for (e = 0; e < PM_RE_NEVENTS; e++) {
			struct world *w = world_new(true, 1000);
			w->m.state = (enum pm_rank_state)s;
			w->m.child = s == PM_RS_IDLE || s == PM_RS_DONE ? 0 : 100;
			ev(w, (enum pm_rank_event)e, 0, SIGTERM);
			assert_true(w->m.state < PM_RS_NSTATES);
			/* Only these states have a command to signal. */
			if (s == PM_RS_IDLE || s == PM_RS_DONE)
				assert_int_equal(count(w, A_KILL), 0);
			free(w);
		}
	}
	for (e = 0; e < PM_RE_NEVENTS; e++)
		assert_string_not_equal(pm_rank_event_name((enum pm_rank_event)e), "?");
	assert_string_equal(pm_rank_state_name(PM_RS_NSTATES), "?");
	assert_string_equal(pm_rank_event_name(PM_RE_NEVENTS), "?");
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_start_and_clean_exit),
		T(test_failure_says_why),
		T(test_noexec),
		T(test_spawn_fails),
		T(test_spares_start_sets_who),
		T(test_start_while_running_ignored),
		T(test_stop_grace_kill),
		T(test_stop_other_gen),
		T(test_exit_racing_stop),
		T(test_stop_then_exit),
		T(test_beat_then_hang),
		T(test_hang_first),
		T(test_hang_without_beat_ignored),
		T(test_capture_fails_stops_at_once),
		T(test_stop_hung_without_heartbeat),
		T(test_stop_hung_other_rank),
		T(test_capture_across_start),
		T(test_sigterm_during_capture),
		T(test_sigterm_idle),
		T(test_finish_running),
		T(test_finish_while_stopping),
		T(test_finish_idle),
		T(test_link_lost),
		T(test_peer_silent),
		T(test_signal_forwarded),
		T(test_no_beat_while_stopping),
		T(test_table_total),
		T(test_warm_contract),
		T(test_warm_never_ready),
		T(test_warm_tells_standby),
		T(test_warm_spare),
		T(test_warm_start_before_ready),
		T(test_warm_standby_dies),
		T(test_warm_handover_lost),
		T(test_warm_stop_during_handover),
		T(test_warm_end_kills_standby),
		T(test_warm_python),
		T(test_warm_off),
		T(test_warm_standby_after_first_beat),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
