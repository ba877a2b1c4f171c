/* procmgrd's state socket (state_link.c) in-process: a node of stepnet.c
 * with its store, a supervisor's link (so that this process is one of the
 * node's ranks) and the rank's end sending real memfds over SOCK_SEQPACKET
 * (stateclient.c). Saves, loads and lists with the bytes compared, the
 * counts, the events at the root and up the tree, the limits' refusals,
 * strangers turned away with the reason as the first answer, a save cut
 * off by the rank's close, and a socket that cannot be made. Replication
 * to a buddy: test_state_repl.c. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "io/statesrv.h"
#include "procmgrd/admit.h"
#include "procmgrd/step.h"
#include "procmgrd/sweep_run.h"
#include "pump.h"
#include "stateclient.h"
#include "stepnet.h"

static char sock[128];

/* Node id of nnodes with a state socket (limits in MiB), its rank 0's
 * supervisor connected (global rank grank). */
static struct tnode *state_node(int id, int nnodes, unsigned max_rank, unsigned max_node,
				struct peer *sup, int grank)
{
	struct tnode *t = node_up(id, nnodes, 2, 1, 0, 0, false);

	sc_mktmp(sc_tmp, sizeof(sc_tmp));
	snprintf(sock, sizeof(sock), "%s/state.sock", sc_tmp);
	assert_int_equal(pm_state_link_init(&t->s, sock, max_rank, max_node), 0);
	assert_non_null(t->s.state);
	if (sup)
		sc_rank_in(t, sup, grank);
	return t;
}

/* A rank saves two versions and loads the newest: the bytes it gets are
 * the bytes it gave, and the root's event log says the first save of the
 * connection and the restore. */
static void test_save_load(void **state)
{
	struct tnode *t;
	struct peer sup;
	struct pm_state_usage u;
	char out[512], bytes[3000], *got, *log;
	size_t len;
	int c;
	(void)state;

	t = state_node(0, 1, 1, 2, &sup, 0);
	snprintf(t->s.events_path, sizeof(t->s.events_path), "%s/s.events.jsonl", sc_tmp);
	pm_step_ops.became_root(&t->s);
	for (size_t i = 0; i < sizeof(bytes); i++)
		bytes[i] = (char)('a' + i % 26);
	c = sc_connect(sock);
	got = sc_load(c, "model", out, sizeof(out), &len);
	assert_string_equal(out, "none");
	assert_null(got);
	sc_save(c, "model", bytes, 1000, 24, out, sizeof(out));
	assert_string_equal(out, "ok 1");
	sc_save(c, "model", bytes, sizeof(bytes), 25, out, sizeof(out));
	assert_string_equal(out, "ok 2");
	sc_save(c, "step", "25", 2, 25, out, sizeof(out));
	assert_string_equal(out, "ok 1");
	close(c);
	/* The next generation's rank: a new connection. */
	c = sc_connect(sock);
	got = sc_load(c, "model", out, sizeof(out), &len);
	assert_non_null(got);
	assert_int_equal(strncmp(out, "ok 2 3000 25 ", 13), 0);
	assert_int_equal(len, sizeof(bytes));
	assert_memory_equal(got, bytes, sizeof(bytes));
	free(got);
	assert_int_equal(sc_ask(c, "list", -1, out, sizeof(out), NULL), 0);
	assert_int_equal(strncmp(out, "ok 2\n", 5), 0);
	assert_non_null(strstr(out, "model 2 3000 25 "));
	assert_non_null(strstr(out, "step 1 2 25 "));
	pm_state_link_usage(&t->s, &u);
	assert_int_equal(u.saves, 3);
	assert_int_equal(u.loads, 1);
	assert_int_equal(u.refused, 0);
	assert_int_equal(u.blobs, 2);
	assert_int_equal(u.held, sizeof(bytes) + 2);
	assert_int_equal(u.max_rank, 1u << 20);
	assert_int_equal(u.max_node, 2u << 20);
	log = slurp(t->s.events_path);
	assert_non_null(log);
	assert_non_null(strstr(log, "\"event\":\"state_saved\",\"rank\":0,\"node\":\"127.0.0.1\","
				    "\"name\":\"model\",\"version\":1,\"bytes\":1000,\"train_step\":24"));
	/* One save said per connection, not each. */
	assert_null(strstr(log, "\"version\":2,\"bytes\":3000,\"train_step\":25}"));
	assert_non_null(strstr(log, "\"event\":\"state_restored\",\"rank\":0,\"node\":\"127.0.0.1\","
				    "\"name\":\"model\",\"version\":2,\"bytes\":3000,\"train_step\":25"));
	close(c);
	peer_free(&sup);
	sc_rmtmp(sc_tmp);
}

/* A node that is not the root sends its saves up as EVENT frames (queued
 * until its parent accepted it), with the rank the supervisor said. */
static void test_event_up(void **state)
{
	struct tnode *t;
	struct peer sup;
	char out[256];
	int c;
	(void)state;

	node_up(0, 2, 2, 1, 0, 0, false);
	t = state_node(1, 2, 1, 1, &sup, 1);
	c = sc_connect(sock);
	sc_save(c, "opt", "xyz", 3, 7, out, sizeof(out));
	assert_string_equal(out, "ok 1");
	assert_int_equal(t->s.upq_len, 1);
	assert_int_equal(t->s.upq[0].type, PM_MSG_EVENT);
	assert_non_null(strstr(t->s.upq[0].text, "state_saved \"rank\":1,\"node\":\"127.0.0.2\","
						 "\"name\":\"opt\",\"version\":1,\"bytes\":3"));
	close(c);
	peer_free(&sup);
	sc_rmtmp(sc_tmp);
}

/* Over the limits: refused with the reason, counted, the rank's
 * connection goes on; bad requests are answered, not fatal. */
static void test_refusals(void **state)
{
	struct tnode *t;
	struct peer sup;
	struct pm_state_usage u;
	char out[512];
	int c, fds[2];
	(void)state;

	t = state_node(0, 1, 1, 1, &sup, 0);
	c = sc_connect(sock);
	assert_int_equal(sc_ask(c, "begin model 2000000", -1, out, sizeof(out), NULL), 0);
	assert_int_equal(strncmp(out, "err ", 4), 0);
	assert_non_null(strstr(out, "state_max_rank"));
	assert_int_equal(sc_ask(c, "frobnicate", -1, out, sizeof(out), NULL), 0);
	assert_int_equal(strncmp(out, "err ", 4), 0);
	/* A pipe is not a memory file. */
	assert_int_equal(sc_ask(c, "begin model 4", -1, out, sizeof(out), NULL), 0);
	assert_int_equal(strncmp(out, "ok ", 3), 0);
	assert_int_equal(pipe(fds), 0);
	{
		char req[64];
		snprintf(req, sizeof(req), "commit %.20s 1", out + 3);
		assert_int_equal(sc_ask(c, req, fds[0], out, sizeof(out), NULL), 0);
	}
	close(fds[0]);
	close(fds[1]);
	assert_int_equal(strncmp(out, "err ", 4), 0);
	/* Still served. */
	sc_save(c, "model", "good", 4, 1, out, sizeof(out));
	assert_string_equal(out, "ok 1");
	pm_state_link_usage(&t->s, &u);
	assert_true(u.refused >= 2);
	assert_int_equal(u.saves, 1);
	close(c);
	peer_free(&sup);
	sc_rmtmp(sc_tmp);
}

/* A save begun, then the rank gone: nothing of it stays, the last good
 * version is what the next one loads. */
static void test_cut_off(void **state)
{
	struct tnode *t;
	struct peer sup;
	struct pm_state_usage u;
	char out[256], *got;
	size_t len;
	int c;
	(void)state;

	t = state_node(0, 1, 1, 1, &sup, 0);
	c = sc_connect(sock);
	sc_save(c, "model", "old", 3, 1, out, sizeof(out));
	assert_string_equal(out, "ok 1");
	assert_int_equal(sc_ask(c, "begin model 5", -1, out, sizeof(out), NULL), 0);
	assert_int_equal(strncmp(out, "ok ", 3), 0);
	close(c);
	c = sc_connect(sock);
	got = sc_load(c, "model", out, sizeof(out), &len);
	assert_non_null(got);
	assert_string_equal(got, "old");
	free(got);
	pm_state_link_usage(&t->s, &u);
	assert_int_equal(u.held, 3);
	close(c);
	peer_free(&sup);
	sc_rmtmp(sc_tmp);
}

/* Who is not one of the node's ranks is answered why at its first
 * request, then closed: no rank connected yet, another user. */
static void test_strangers(void **state)
{
	struct tnode *t;
	struct peer sup;
	struct pm_state_usage u;
	char out[256], want[160];
	int c;
	(void)state;

	t = state_node(0, 1, 1, 1, NULL, 0);
	c = sc_connect(sock);
	assert_int_equal(sc_ask(c, "load model", -1, out, sizeof(out), NULL), 0);
	snprintf(want, sizeof(want), "err refused: pid %d is not a process of one of this step's "
		 "ranks on this node", (int)getpid());
	assert_string_equal(out, want);
	assert_true(pm_pump(&loop, sc_eof, &c, 5000));
	close(c);
	/* A save request's descriptor is not kept either. */
	c = sc_connect(sock);
	{
		int fd = sc_blob("x", 1);
		assert_int_equal(sc_ask(c, "commit 1 1", fd, out, sizeof(out), NULL), 0);
		close(fd);
	}
	assert_string_equal(out, want);
	close(c);
	/* The job's user is another. */
	sc_rank_in(t, &sup, 0);
	t->s.uid = 4242;
	c = sc_connect(sock);
	assert_int_equal(sc_ask(c, "list", -1, out, sizeof(out), NULL), 0);
	snprintf(want, sizeof(want), "err refused: uid %u is not the job's user (uid 4242): a "
		 "rank's state is its own", (unsigned)getuid());
	assert_string_equal(out, want);
	close(c);
	pm_state_link_usage(&t->s, &u);
	assert_int_equal(u.saves + u.loads, 0);
	peer_free(&sup);
	sc_rmtmp(sc_tmp);
}

#define FLOOD 100
static int flood_fds[FLOOD];
static int flood_closed_want;

/* How many of the flood's connections procmgrd closed. */
static bool flood_closed(void *arg)
{
	int n = 0;
	char b;
	(void)arg;
	for (int i = 0; i < FLOOD; i++)
		n += recv(flood_fds[i], &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
	return n >= flood_closed_want;
}

static bool no_conns(void *arg)
{
	struct pm_state_usage u;
	pm_state_link_usage(&((struct tnode *)arg)->s, &u);
	return u.conns == 0;
}

/* Issue 32 item 4: one rank opening connection after connection holds at
 * most PM_ADMIT_STATE_PER_RANK of them; of the others, the newest
 * PM_ADMIT_REFUSED_HELD wait to be told why at their first request, the
 * rest are closed at once. Its held connections still serve it, and once
 * it closed them it may open as many again. Before, every one was taken
 * and held: two ranks held procmgrd at its descriptor limit. */
static void test_rank_flood(void **state)
{
	struct tnode *t;
	struct peer sup;
	char out[256];
	int i, c;
	(void)state;

	t = state_node(0, 1, 1, 1, &sup, 0);
	for (i = 0; i < FLOOD; i++)
		flood_fds[i] = sc_connect(sock);
	flood_closed_want = FLOOD - PM_ADMIT_STATE_PER_RANK - PM_ADMIT_REFUSED_HELD;
	assert_true(pm_pump(&loop, flood_closed, NULL, 5000));
	for (i = 0; i < FLOOD; i++) {
		char b;
		bool closed = recv(flood_fds[i], &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
		assert_int_equal(closed, i >= PM_ADMIT_STATE_PER_RANK &&
					 i < FLOOD - PM_ADMIT_REFUSED_HELD);
	}
	assert_int_equal(sc_ask(flood_fds[FLOOD - 1], "list", -1, out, sizeof(out), NULL), 0);
	assert_string_equal(out, "err refused: rank 0 holds 32 connections to the state socket, "
				 "at most 32 are allowed (close one first)");
	sc_save(flood_fds[0], "model", "m", 1, 1, out, sizeof(out));
	assert_string_equal(out, "ok 1");
	for (i = 0; i < FLOOD; i++)
		close(flood_fds[i]);
	assert_true(pm_pump(&loop, no_conns, t, 5000));
	/* Nothing of the flood is left counted: as many again are taken. */
	for (i = 0; i < PM_ADMIT_STATE_PER_RANK; i++)
		flood_fds[i] = sc_connect(sock);
	for (i = 0; i < PM_ADMIT_STATE_PER_RANK; i++) {
		assert_int_equal(sc_ask(flood_fds[i], "list", -1, out, sizeof(out), NULL), 0);
		assert_int_equal(strncmp(out, "ok", 2), 0);
		close(flood_fds[i]);
	}
	c = sc_connect(sock);
	assert_int_equal(sc_ask(c, "list", -1, out, sizeof(out), NULL), 0);
	assert_int_equal(strncmp(out, "ok", 2), 0);
	close(c);
	peer_free(&sup);
	sc_rmtmp(sc_tmp);
}

/* The root's word to a sweep's node about local rank 0's slot: a trial's
 * start of scope (TRIAL_START) or the end of the run of scope (TRIAL_STOP
 * with PM_FLAG_ENDED). */
static void trial_msg(struct tnode *t, bool start, uint32_t scope)
{
	struct pm_msg m;
	char text[64];

	pm_msg_init(&m, start ? PM_MSG_TRIAL_START : PM_MSG_TRIAL_STOP);
	m.gen = scope;
	m.node = t->s.node;
	m.status = 0;
	if (start) {
		snprintf(text, sizeof(text), "t 1 0 1 h 1 %u\ntrue", scope);
		pm_msg_set_text(&m, text);
	} else {
		m.count = PM_FLAG_ENDED;
	}
	pm_sweep_node_route(&t->s, &m);
}

static void expect_held(struct tnode *t, uint64_t held)
{
	struct pm_state_usage u;

	pm_state_link_usage(&t->s, &u);
	assert_int_equal(u.held, held);
}

/* In a sweep (issue 32) a slot's state is its trial run's: a restart of
 * the run finds its save, the run's end frees it, a connection of the
 * ended run is refused (its save in flight too), the next trial finds
 * nothing, a start of another run drops what the last one left when no
 * end came, and an older run's end, late, leaves the new one's alone. */
static void test_sweep_scopes(void **state)
{
	const char *refused = "err refused: this process's trial run on rank 1 has ended; a "
			      "trial's state is its run's own";
	struct tnode *t;
	struct peer sup;
	char out[256], err[128], *got;
	size_t len;
	int c1, c2, c3;
	(void)state;

	node_up(0, 2, 2, 1, 0, 0, false);
	t = state_node(1, 2, 1, 1, &sup, 1);
	snprintf(t->s.opts.sweep, sizeof(t->s.opts.sweep), "%s/trials", sc_tmp);
	assert_int_equal(pm_sweep_run_init(&t->s, err, sizeof(err)), 0);
	trial_msg(t, true, 5);
	c1 = sc_connect(sock);
	sc_save(c1, "model", "run5", 4, 1, out, sizeof(out));
	assert_string_equal(out, "ok 1");
	/* The run restarts in place: its new process finds its save. */
	trial_msg(t, true, 5);
	c2 = sc_connect(sock);
	got = sc_load(c2, "model", out, sizeof(out), &len);
	assert_non_null(got);
	assert_memory_equal(got, "run5", 4);
	free(got);
	assert_int_equal(sc_ask(c2, "begin model 3", -1, out, sizeof(out), NULL), 0);
	assert_int_equal(strncmp(out, "ok ", 3), 0);
	/* It ends: freed; its processes' connections are refused, a save
	 * begun included, and closed. */
	trial_msg(t, false, 5);
	expect_held(t, 0);
	sc_save(c1, "model", "late", 4, 2, out, sizeof(out));
	assert_string_equal(out, refused);
	assert_true(pm_pump(&loop, sc_eof, &c1, 5000));
	{
		int fd = sc_blob("abc", 3);
		assert_int_equal(sc_ask(c2, "commit 1 1", fd, out, sizeof(out), NULL), 0);
		close(fd);
	}
	assert_string_equal(out, refused);
	expect_held(t, 0);
	close(c1);
	close(c2);
	/* The next trial on the slot finds nothing, and saves its own. */
	trial_msg(t, true, 9);
	c3 = sc_connect(sock);
	got = sc_load(c3, "model", out, sizeof(out), &len);
	assert_null(got);
	assert_string_equal(out, "none");
	sc_save(c3, "model", "run9!", 5, 1, out, sizeof(out));
	assert_string_equal(out, "ok 1");
	expect_held(t, 5);
	/* Another run starts with no end said: run 9's state goes. */
	trial_msg(t, true, 12);
	expect_held(t, 0);
	assert_int_equal(sc_ask(c3, "list", -1, out, sizeof(out), NULL), 0);
	assert_string_equal(out, refused);
	close(c3);
	c3 = sc_connect(sock);
	sc_save(c3, "model", "run12", 5, 1, out, sizeof(out));
	assert_string_equal(out, "ok 1");
	/* Run 9's end, late: run 12's state stays. */
	trial_msg(t, false, 9);
	expect_held(t, 5);
	got = sc_load(c3, "model", out, sizeof(out), &len);
	assert_non_null(got);
	assert_memory_equal(got, "run12", 5);
	free(got);
	close(c3);
	peer_free(&sup);
	sc_rmtmp(sc_tmp);
}

/* A socket that cannot be made: -1, no store, nothing counted. */
static void test_init_fails(void **state)
{
	struct tnode *t;
	struct pm_state_usage u;
	char path[200];
	(void)state;

	t = node_up(0, 1, 2, 1, 0, 0, false);
	memset(path, 'p', sizeof(path) - 1);
	path[0] = '/';
	path[sizeof(path) - 1] = '\0';
	assert_int_equal(pm_state_link_init(&t->s, path, 1, 1), -1);
	assert_int_equal(pm_state_link_init(&t->s, "/nonexistent/dir/state.sock", 1, 1), -1);
	assert_null(t->s.state);
	pm_state_link_usage(&t->s, &u);
	assert_int_equal(u.max_node, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_save_load, setup, teardown),
		cmocka_unit_test_setup_teardown(test_event_up, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cut_off, setup, teardown),
		cmocka_unit_test_setup_teardown(test_strangers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rank_flood, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sweep_scopes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_init_fails, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
