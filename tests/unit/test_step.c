/* procmgrd's step around its links, in-process (stepnet.c, munge faked by
 * fake_auth.c): the tree port's door under a flood (gate.c), the step's
 * lifecycle and event log (transport.c: restart delay, stop deadline,
 * lingering for late children, Slurm's SIGTERM, a log that cannot be
 * written). The supervisors' links and the re-attach: test_step_links.c. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/handshake.h"
#include "common/tree.h"
#include "io/auth.h"
#include "io/statesrv.h"
#include "io/sys.h"
#include "procmgrd/query.h"
#include "procmgrd/step.h"
#include "pump.h"
#include "stepnet.h"

static int want;

static bool npending_is(void *arg)
{
	return ((struct tnode *)arg)->s.npending == want;
}


/* ---- the door (gate.c) ---- */

/* Strangers (not a node of the step) that say nothing hold at most
 * PM_GATE_EXTRA places: a newcomer is taken and the oldest told busy and
 * closed; past PM_GATE_LOG_BURST refusals they are counted, not logged;
 * the silent ones are closed at the hello deadline. */
static void test_gate_flood(void **state)
{
	struct tnode *root;
	int fds[PM_GATE_EXTRA + PM_GATE_LOG_BURST + 2], i;
	const int n = (int)(sizeof(fds) / sizeof(fds[0]));
	(void)state;

	root = node_up(0, 2, 2, 1, 0, 0, true);
	for (i = 0; i < PM_GATE_EXTRA; i++) {
		fds[i] = dial("127.0.0.9", "127.0.0.1");
		want = i + 1;
		assert_true(pm_pump(&loop, npending_is, root, 5000));
	}
	for (i = PM_GATE_EXTRA; i < n; i++) {
		struct peer p;
		int old = i - PM_GATE_EXTRA;
		fds[i] = dial("127.0.0.9", "127.0.0.1");
		/* The oldest is told busy and closed; the newcomer is held. */
		peer_open(&p, fds[old]);
		assert_true(pm_pump(&loop, peer_closed, &p, 5000));
		assert_int_equal(p.n, 1);
		assert_int_equal(p.got[0].type, PM_MSG_REFUSED);
		assert_non_null(strstr(p.got[0].text, "busy"));
		assert_int_equal(root->s.npending, PM_GATE_EXTRA);
	}
	assert_int_equal(root->s.refused_logged, PM_GATE_LOG_BURST);
	assert_int_equal(root->s.refused_more, 2);
	/* None says hello: each is closed at the deadline. */
	want = 0;
	assert_true(pm_pump(&loop, npending_is, root, 5 * PM_GATE_HELLO_MS));
	for (i = n - PM_GATE_EXTRA; i < n; i++) {
		assert_true(pm_pump(&loop, fd_closed_p, &fds[i], 5000));
		close(fds[i]);
	}
	assert_false(pm_gen_terminal(&root->s.gen));
}

/* Issue 32 item 6: with the silent room full of another user's flood, a
 * connection whose first bytes are there when it is accepted (the procmgr
 * command's request) is read early and held in a room of its own: none
 * of the silent ones makes way for it, and it is not told busy. Before,
 * one shared room: it was told busy while the flood lasted. */
static void test_gate_request_through_silent_flood(void **state)
{
	struct tnode *root;
	int fds[PM_GATE_EXTRA], i, req;
	(void)state;

	root = node_up(0, 2, 2, 1, 0, 0, true);
	for (i = 0; i < PM_GATE_EXTRA; i++) {
		fds[i] = dial("127.0.0.9", "127.0.0.1");
		want = i + 1;
		assert_true(pm_pump(&loop, npending_is, root, 5000));
	}
	/* A request's frame begun (not whole: it stays at the door). */
	{
		uint8_t frame[PM_WIRE_FRAME_MAX];
		struct pm_msg m;
		int n;
		pm_msg_init(&m, PM_MSG_CLIENT);
		pm_msg_set_text(&m, "a credential");
		n = pm_msg_encode(&m, frame, sizeof(frame));
		assert_true(n > 8);
		req = dial("127.0.0.9", "127.0.0.1");
		assert_int_equal(send(req, frame, 4, 0), 4);
	}
	want = PM_GATE_EXTRA + 1;
	assert_true(pm_pump(&loop, npending_is, root, 5000));
	assert_int_equal(root->s.refused_logged, 0);
	for (i = 0; i < root->s.npending; i++)
		assert_int_equal(root->s.pending[i].spoke, i == PM_GATE_EXTRA);
	for (i = 0; i < PM_GATE_EXTRA; i++)
		close(fds[i]);
	close(req);
	want = 0;
	assert_true(pm_pump(&loop, npending_is, root, 5000));
}

/* A step node's address has room of its own; full, its oldest silent
 * connection makes way for the newest (a procmgrd says HELLO at once). */
static void test_gate_make_way(void **state)
{
	struct tnode *root;
	int fds[PM_GATE_NODE_ROOM + 1], i;
	(void)state;

	root = node_up(0, 2, 2, 1, 0, 0, true); /* node 1 is 127.0.0.2 */
	for (i = 0; i < PM_GATE_NODE_ROOM; i++) {
		fds[i] = dial("127.0.0.2", "127.0.0.1");
		want = i + 1;
		assert_true(pm_pump(&loop, npending_is, root, 5000));
	}
	fds[i] = dial("127.0.0.2", "127.0.0.1");
	assert_true(pm_pump(&loop, fd_closed_p, &fds[0], 5000));
	assert_int_equal(root->s.npending, PM_GATE_NODE_ROOM);
	for (i = 1; i <= PM_GATE_NODE_ROOM; i++)
		assert_false(fd_closed(fds[i]));
	for (i = 0; i <= PM_GATE_NODE_ROOM; i++)
		close(fds[i]);
}

static bool accepting(void *arg)
{
	return !((struct tnode *)arg)->s.accept_paused;
}

/* Out of descriptors: the port is not watched for a tick, then again. */
static void test_gate_pause(void **state)
{
	struct tnode *root;
	unsigned logged;
	int fd;
	(void)state;

	root = node_up(0, 2, 2, 1, 0, 0, true);
	logged = root->s.refused_logged;
	pm_gate_pause(&root->s, EMFILE);
	assert_true(root->s.accept_paused);
	assert_int_equal(root->s.refused_logged, logged + 1);
	pm_gate_pause(&root->s, EMFILE); /* once */
	assert_int_equal(root->s.refused_logged, logged + 1);
	assert_true(pm_pump(&loop, accepting, root, 5000));
	fd = dial("127.0.0.2", "127.0.0.1");
	want = 1;
	assert_true(pm_pump(&loop, npending_is, root, 5000));
	close(fd);
}

/* Credentials from strangers are decoded at a bounded rate: within it a
 * hello is checked (and refused: another job's), past it it is told busy,
 * undecoded (tree_link.c asks gate.c). The bucket is emptied by hand, its
 * refill in the future, so that no timing decides. */
static void test_gate_credential_rate(void **state)
{
	struct tnode *root;
	int i;
	(void)state;

	root = node_up(0, 2, 2, 1, 0, 0, true);
	for (i = 0; i < 6; i++) {
		struct peer p;
		peer_open(&p, dial("127.0.0.9", "127.0.0.1"));
		hello(&p, JOB + 1, 1, 0, 1);
		assert_true(pm_pump(&loop, peer_closed, &p, 5000));
		assert_int_equal(p.got[0].type, PM_MSG_REFUSED);
		if (i == 3)
			root->s.cred_bucket = (struct pm_bucket){ .t_ms = UINT64_MAX / 2,
								  .tokens_milli = 0 };
		if (i <= 3)
			assert_non_null(strstr(p.got[0].text, "another job"));
		else
			assert_non_null(strstr(p.got[0].text, "busy: too many hellos"));
	}
}

/* ---- the step's event log and lifecycle (transport.c) ---- */

static char tmpdir[64];

static void mktmp(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/pm-test-step-XXXXXX");
	assert_non_null(mkdtemp(tmpdir));
}

static void rmtmp(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	assert_int_equal(system(cmd), 0);
}

/* The root writes saves and restores to the event log (its own and those
 * a child relays), and only those names; other nodes send them up. */
static void test_state_events(void **state)
{
	struct tnode *root, *child;
	struct pm_state_note n = { .did = PM_STATE_DID_LOAD, .name = "model", .version = 4,
				   .size = 1000, .step = 25, .age_ms = 7, .lost_steps = 3 };
	struct pm_msg m;
	char *log;
	(void)state;

	mktmp();
	root = node_up(0, 2, 2, 1, 0, 0, false);
	snprintf(root->s.events_path, sizeof(root->s.events_path), "%s/s.events.jsonl", tmpdir);
	pm_step_ops.became_root(&root->s); /* opens the log */
	assert_true(root->s.events.opened);
	pm_step_state_event(&root->s, "state_restored", 0, &n);
	set_text(&m, PM_MSG_EVENT, "state_saved \"rank\":1,\"name\":\"opt\",\"version\":9");
	pm_step_event_msg(&root->s, &m);
	set_text(&m, PM_MSG_EVENT, "state_restored \"rank\":1,\"train_step\":30,\"lost_steps\":2");
	pm_step_event_msg(&root->s, &m);
	set_text(&m, PM_MSG_EVENT, "finish \"gen\":0"); /* not a name a child sends */
	pm_step_event_msg(&root->s, &m);
	set_text(&m, PM_MSG_EVENT, "nospace");
	pm_step_event_msg(&root->s, &m);
	log = slurp(root->s.events_path);
	assert_non_null(log);
	assert_non_null(strstr(log, "\"event\":\"state_restored\",\"rank\":0,\"node\":\"127.0.0.1\","
				    "\"name\":\"model\",\"version\":4,\"bytes\":1000,\"train_step\":25,"
				    "\"age_ms\":7,\"lost_steps\":3"));
	assert_non_null(strstr(log, "\"event\":\"state_saved\",\"rank\":1,\"name\":\"opt\""));
	assert_non_null(strstr(log, "\"train_step\":30,\"lost_steps\":2"));
	assert_null(strstr(log, "finish"));
	assert_null(strstr(log, "nospace"));
	/* A node that is not the root: up the tree (queued until its parent
	 * accepted it). */
	child = node_up(1, 2, 2, 1, 0, 0, false);
	n.did = PM_STATE_DID_SAVE;
	pm_step_state_event(&child->s, "state_saved", 1, &n);
	set_text(&m, PM_MSG_EVENT, "state_saved \"rank\":3");
	pm_step_event_msg(&child->s, &m);
	assert_int_equal(child->s.upq_len, 2);
	assert_int_equal(child->s.upq[0].type, PM_MSG_EVENT);
	assert_non_null(strstr(child->s.upq[0].text, "state_saved \"rank\":1,\"node\":\"127.0.0.2\""));
	assert_null(strstr(child->s.upq[0].text, "lost_steps"));
	assert_string_equal(child->s.upq[1].text, "state_saved \"rank\":3");
	rmtmp();
}

/* The lost nodes for the job script: STEP.exclude beside the log, one
 * line, replaced whole; nothing when there is no log path. */
static void test_avoid_file(void **state)
{
	struct tnode *root;
	char path[PATH_MAX], *got;
	(void)state;

	mktmp();
	root = node_up(0, 1, 2, 1, 0, 0, false);
	pm_step_ops.avoid(&root->s, "cnode1", "lost");
	snprintf(root->s.events_path, sizeof(root->s.events_path), "%s/77.3.events.jsonl", tmpdir);
	pm_step_ops.avoid(&root->s, "cnode1", "lost");
	pm_step_ops.avoid(&root->s, "cnode1,cnode3", "lost");
	snprintf(path, sizeof(path), "%s/77.3.exclude", tmpdir);
	got = slurp(path);
	assert_non_null(got);
	assert_string_equal(got, "cnode1,cnode3\n");
	/* Its directory gone: said in the log, nothing left behind. */
	rmtmp();
	pm_step_ops.avoid(&root->s, "cnode2", "lost");
	assert_null(slurp(path));
}

static bool got_type(struct peer *p, int type)
{
	int i;

	for (i = 0; i < p->n && i < 16; i++)
		if (p->got[i].type == type)
			return true;
	return false;
}

static bool got_print(void *arg)
{
	return got_type(arg, PM_MSG_PRINT);
}

/* The event log cannot be written: said once, to rank 0's supervisor as
 * soon as it is there (srun's stderr). */
static void test_events_lost(void **state)
{
	struct tnode *root;
	struct peer r0;
	struct pm_msg m;
	(void)state;

	root = node_up(0, 1, 2, 1, 0, 0, false);
	assert_int_equal(pm_events_open(&root->s.events, "/dev/full", JOB, STEP), 0);
	set_text(&m, PM_MSG_EVENT, "state_saved \"rank\":0");
	pm_step_event_msg(&root->s, &m);
	assert_true(root->s.events_untold);
	assert_int_equal(root->s.events_errno, ENOSPC);
	pm_step_event_msg(&root->s, &m); /* the second loss is not said again */
	assert_int_equal(root->s.events.lost, 2);
	rank_pair(root, &r0);
	rank_hello(&r0, 0, 0);
	assert_true(pm_pump(&loop, got_print, &r0, 5000));
	assert_false(root->s.events_untold);
	assert_non_null(strstr(r0.got[0].text, "event log cannot be written"));
	assert_non_null(strstr(r0.got[0].text, "No space left"));
	peer_free(&r0);
}

static void quick_restart(struct pm_step *s)
{
	s->opts.restart = PM_RESTART_ON_FAILURE;
	s->opts.restart_max = 2;
	s->opts.restart_delay_ms = 30;
}

static void rank_says(struct peer *p, int type, unsigned gen, int status)
{
	struct pm_msg m;

	pm_msg_init(&m, type);
	m.gen = gen;
	m.status = status;
	assert_int_equal(pm_conn_send(p->c, &m), 0);
}

static bool got_start_gen1(void *arg)
{
	struct peer *p = arg;
	int i;

	for (i = 0; i < p->n && i < 16; i++)
		if (p->got[i].type == PM_MSG_START && p->got[i].gen == 1)
			return true;
	return false;
}

/* A failure with a restart delay: the delay's timer starts generation 1. */
static void test_restart_delay(void **state)
{
	struct tnode *t;
	struct peer r0;
	(void)state;

	node_tweak = quick_restart;
	t = node_up(0, 1, 2, 1, 0, 0, false);
	rank_pair(t, &r0);
	rank_hello(&r0, 0, 0);
	pm_gen_local_ready(&t->s.gen);
	rank_says(&r0, PM_MSG_RANK_RUN, 0, 0);
	rank_says(&r0, PM_MSG_RANK_EXIT, 0, 1);
	assert_true(pm_pump(&loop, got_start_gen1, &r0, 5000));
	assert_int_equal(t->s.gen.gen, 1);
	assert_int_equal(t->s.gen.restarts, 1);
	peer_free(&r0);
}

static void short_grace(struct pm_step *s)
{
	s->opts.grace_ms = 0; /* the stop's bound: 2 s */
}

static void short_grace_restart(struct pm_step *s)
{
	quick_restart(s);
	short_grace(s);
}

static bool terminal(void *arg)
{
	return pm_gen_terminal(&((struct tnode *)arg)->s.gen);
}

static bool ranks_in(void *arg)
{
	struct tnode *t = arg;
	return t->s.ranks[0] && t->s.ranks[1];
}

static bool got_start(void *arg)
{
	return got_type(arg, PM_MSG_START);
}

/* One rank fails and the generation is stopped for a restart, but the
 * other's supervisor never reports its stop: the stop deadline makes the
 * node lost, and a one-node step ends. */
static void test_stop_deadline(void **state)
{
	struct tnode *t;
	struct peer r0, r1;
	(void)state;

	node_tweak = short_grace_restart;
	t = node_up(0, 1, 2, 2, 0, 0, false);
	rank_pair(t, &r0);
	rank_hello(&r0, 0, 0);
	rank_pair(t, &r1);
	rank_hello(&r1, 1, 1);
	assert_true(pm_pump(&loop, ranks_in, t, 5000));
	pm_gen_local_ready(&t->s.gen);
	assert_true(pm_pump(&loop, got_start, &r1, 5000));
	rank_says(&r0, PM_MSG_RANK_RUN, 0, 0);
	rank_says(&r1, PM_MSG_RANK_RUN, 0, 0);
	rank_says(&r0, PM_MSG_RANK_EXIT, 0, 3);
	assert_true(pm_pump(&loop, terminal, t, 10000));
	assert_true(got_type(&r1, PM_MSG_STOP));
	assert_true(t->s.gen.ranks[1].stop_pending);
	peer_free(&r0);
	peer_free(&r1);
}

static bool lingered(void *arg)
{
	return ((struct tnode *)arg)->s.lingered;
}

/* Slurm's SIGTERM before the end cancels the step; once ended, the root
 * lingers for a child that has not joined (to tell it the end), then
 * leaves without it. */
static void test_terminate_and_linger(void **state)
{
	struct tnode *root;
	struct peer r0;
	(void)state;

	root = node_up(0, 2, 2, 1, 0, 0, false);
	rank_pair(root, &r0);
	rank_hello(&r0, 0, 0);
	assert_true(pm_pump(&loop, rank0_in, root, 5000));
	pm_step_terminate(&root->s);
	assert_true(root->s.cancelled);
	assert_true(pm_gen_terminal(&root->s.gen));
	assert_false(root->s.lingering);
	peer_free(&r0); /* its supervisor leaves: over here, node 1 never told */
	assert_true(pm_pump(&loop, rank0_gone, root, 5000));
	assert_false(pm_step_over(&root->s));
	assert_true(root->s.lingering);
	pm_step_terminate(&root->s); /* again: still lingering, not cancelled twice */
	assert_true(root->s.lingering);
	assert_true(pm_pump(&loop, lingered, root, 5 * PM_LINGER_MS));
	assert_true(pm_step_over(&root->s));
}

static bool root_saw_child(void *arg)
{
	return ((struct tnode *)arg)->s.nseen == 1;
}

/* A child that joins while the ended root lingers is told the end, and
 * the root leaves then, before the linger's deadline. */
static void test_linger_child_joins(void **state)
{
	struct tnode *root, *child;
	struct peer r0;
	(void)state;

	root = node_up(0, 2, 2, 1, 0, 0, true);
	child = node_up(1, 2, 2, 1, 0, 0, false);
	root->s.wait_term = true; /* leaves only on SIGTERM */
	rank_pair(root, &r0);
	rank_hello(&r0, 0, 0);
	assert_true(pm_pump(&loop, rank0_in, root, 5000));
	pm_step_terminate(&root->s);
	peer_free(&r0);
	assert_true(pm_pump(&loop, rank0_gone, root, 5000));
	assert_false(pm_step_over(&root->s));
	assert_true(root->s.lingering);
	attach_to_parent(child);
	assert_true(pm_pump(&loop, root_saw_child, root, 5000));
	assert_true(pm_pump(&loop, terminal, child, 5000));
	assert_false(root->s.lingered);
	assert_true(pm_step_over(&root->s));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_gate_request_through_silent_flood, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gate_flood, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gate_make_way, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gate_pause, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gate_credential_rate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_state_events, setup, teardown),
		cmocka_unit_test_setup_teardown(test_avoid_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_events_lost, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restart_delay, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop_deadline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_terminate_and_linger, setup, teardown),
		cmocka_unit_test_setup_teardown(test_linger_child_joins, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
