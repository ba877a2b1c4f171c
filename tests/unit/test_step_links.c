/* procmgrd's links to its rank supervisors and the re-attach's rounds,
 * in-process (stepnet.c, munge faked by fake_auth.c): a supervisor that
 * goes silent has its command's process group and itself killed for real
 * (rank_link.c), one that misbehaves or belongs to another user is
 * dropped, and a node whose parent is lost meets a busy candidate, then a
 * silent one, before it ends its part (attach.c). */
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
#include <sys/prctl.h>
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


/* The root writes saves and restores to the event log (its own and those
 * a child relays), and only those names; other nodes send them up. */
static void rank_says(struct peer *p, int type, unsigned gen, int status)
{
	struct pm_msg m;

	pm_msg_init(&m, type);
	m.gen = gen;
	m.status = status;
	assert_int_equal(pm_conn_send(p->c, &m), 0);
}

static void short_grace(struct pm_step *s)
{
	s->opts.grace_ms = 0; /* the stop's bound: 2 s */
}

/* ---- the supervisors' links (rank_link.c) ---- */

static pid_t sleeper(bool own_group)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* a failed test leaves none */
		if (own_group)
			setpgid(0, 0);
		for (;;)
			pause();
	}
	if (own_group)
		setpgid(pid, pid);
	return pid;
}

static void assert_killed(pid_t pid)
{
	int st;

	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGKILL);
}

/* A supervisor that stops answering is lost after the peer timeout: its
 * command's process group is killed, and the supervisor itself through
 * its pidfd (here two real processes stand for them). */
static void test_silent_supervisor_killed(void **state)
{
	struct tnode *t;
	struct peer r0;
	pid_t cmd, sup;
	(void)state;

	t = node_up(0, 1, 2, 1, 0, 300, false);
	rank_pair(t, &r0);
	rank_hello(&r0, 0, 0);
	assert_true(pm_pump(&loop, rank0_in, t, 5000));
	pm_gen_local_ready(&t->s.gen);
	cmd = sleeper(true);
	sup = sleeper(false);
	rank_says(&r0, PM_MSG_RANK_RUN, 0, (int)cmd);
	assert_true(pm_pump(&loop, NULL, NULL, 20));
	assert_int_equal(t->s.cmd_pgid[0], cmd);
	/* The link's supervisor is this process (SO_PEERCRED): stand-in. */
	if (t->s.sup_pidfd[0] >= 0)
		close(t->s.sup_pidfd[0]);
	t->s.sup_pidfd[0] = pm_pidfd_open(sup);
	assert_true(t->s.sup_pidfd[0] >= 0);
	pm_loop_del(&loop, &r0.c->w); /* silent from now on */
	assert_true(pm_pump(&loop, rank0_gone, t, 5000));
	assert_killed(cmd);
	assert_killed(sup);
	assert_int_equal(t->s.cmd_pgid[0], 0);
	pm_conn_free(r0.c);
	r0.c = NULL;
}

/* After its hello a supervisor says something the machine does not take:
 * dropped. A second supervisor for a rank whose first one is gone:
 * dropped too. */
static void test_rank_misbehaves(void **state)
{
	struct tnode *t;
	struct peer r0, r1, again;
	(void)state;

	t = node_up(0, 1, 2, 2, 0, 0, false);
	rank_pair(t, &r0);
	rank_hello(&r0, 0, 0);
	rank_pair(t, &r1);
	rank_hello(&r1, 1, 1);
	assert_true(pm_pump(&loop, rank0_in, t, 5000));
	rank_says(&r1, PM_MSG_HELLO, 0, 0);
	assert_true(pm_pump(&loop, peer_closed, &r1, 5000));
	assert_null(t->s.ranks[1]);
	t->s.cmd_pgid[0] = 0;
	peer_free(&r0);
	assert_true(pm_pump(&loop, rank0_gone, t, 5000));
	rank_pair(t, &again);
	rank_hello(&again, 0, 0);
	assert_true(pm_pump(&loop, peer_closed, &again, 5000));
	assert_null(t->s.ranks[0]);
}

/* Only the job's user (and root) may connect to the supervisors' socket:
 * another user's connection is closed. As root, a child that became
 * nobody connects (SO_PEERCRED is real); otherwise the job's uid is
 * made another's. */
static void test_rank_other_user(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t salen;
	struct tnode *t;
	int sv[2], lfd, st;
	pid_t pid;
	(void)state;

	t = node_up(0, 1, 2, 1, 0, 0, false);
	if (getuid() != 0) {
		t->s.uid = getuid() + 1;
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
		pm_step_rank_conn(&t->s, sv[0]);
		assert_true(pm_pump(&loop, fd_closed_p, &sv[1], 5000));
		close(sv[1]);
		return;
	}
	/* An abstract socket: nothing in the file system for nobody to reach. */
	snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "pm-test-step-%d", (int)getpid());
	salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(sa.sun_path + 1));
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, salen), 0);
	assert_int_equal(listen(lfd, 1), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char b;
		int fd;
		if (setgid(65534) || setuid(65534))
			_exit(2);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (fd < 0 || connect(fd, (struct sockaddr *)&sa, salen))
			_exit(3);
		_exit(read(fd, &b, 1) == 0 ? 0 : 4); /* closed unanswered */
	}
	sv[0] = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	assert_true(sv[0] >= 0);
	pm_step_rank_conn(&t->s, sv[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_null(t->s.ranks[0]);
	close(lfd);
}

/* ---- re-attach rounds (attach.c) ---- */

/* A stand-in for node 0 that answers hellos its own way: the first one
 * "busy", the others not at all. */
struct fake_root {
	struct pm_watch lw;
	struct pm_conn *conns[8];
	int nconns, hellos;
};

static void fake_root_msg(struct pm_conn *c, const struct pm_msg *m)
{
	struct fake_root *f = c->w.arg;
	struct pm_msg out;

	if (m->type != PM_MSG_HELLO)
		return;
	if (f->hellos++ == 0) {
		set_text(&out, PM_MSG_REFUSED, "busy: too many connections; try again");
		assert_int_equal(pm_conn_send(c, &out), 0);
	}
}

static void fake_root_close(struct pm_conn *c, const char *why)
{
	struct fake_root *f = c->w.arg;
	int i;
	(void)why;

	for (i = 0; i < f->nconns; i++)
		if (f->conns[i] == c)
			f->conns[i] = NULL;
	pm_conn_free(c);
}

static void fake_root_accept(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct fake_root *f = w->arg;
	int fd = accept4(w->fd, NULL, NULL, SOCK_CLOEXEC);
	(void)ev;

	if (fd >= 0 && f->nconns < 8)
		f->conns[f->nconns++] = pm_conn_new(l, fd, fake_root_msg, fake_root_close, f);
	else if (fd >= 0)
		close(fd);
}

/* A parent that proves itself (the WELCOME for the child's nonce). */
static void welcome_child(struct peer *p, struct tnode *child)
{
	struct pm_hs h = { .kind = PM_HS_WELCOME, .job = JOB, .step = STEP,
			   .from = child->s.parent_node, .to = child->s.node };
	char payload[PM_HS_MAX], err[128], *cred = NULL;
	struct pm_msg m;

	snprintf(h.nonce, sizeof(h.nonce), "%s", child->s.nonce);
	assert_int_equal(pm_hs_format(&h, payload, sizeof(payload)), 0);
	assert_int_equal(pm_auth_encode(NULL, payload, &cred, err, sizeof(err)), 0);
	set_text(&m, PM_MSG_WELCOME, cred);
	free(cred);
	assert_int_equal(pm_conn_send(p->c, &m), 0);
}

static bool parent_ok(void *arg)
{
	return ((struct tnode *)arg)->s.parent_ok;
}

static bool left(void *arg)
{
	struct tnode *t = arg;
	return !t->s.attach.active && pm_gen_terminal(&t->s.gen);
}

/* Node 3's parent (node 1) is lost; the candidates are node 0 and node 2.
 * Node 0 says busy, node 2 is not there: after a pause, a second round;
 * node 0 is silent this time (the attach deadline), node 2 still not
 * there: node 3 ends its part. */
static void test_reattach_busy_then_silent(void **state)
{
	struct fake_root f = { 0 };
	struct tnode *n3;
	struct peer parent;
	int lfd1, fd = -1, i;
	(void)state;

	node_tweak = short_grace;
	port = 0;
	lfd1 = listen_on("127.0.0.2", &port);
	f.lw = (struct pm_watch){ .fd = listen_on("127.0.0.1", &port), .fn = fake_root_accept,
				  .arg = &f };
	assert_int_equal(pm_loop_add(&loop, &f.lw, EPOLLIN), 0);
	n3 = node_up(3, 4, 2, 1, 1, 0, false);
	assert_int_equal(n3->s.parent_node, 1);
	attach_to_parent(n3);
	for (i = 0; i < 1000 && fd < 0; i++) {
		fd = accept4(lfd1, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			pm_pump(&loop, NULL, NULL, 2);
	}
	assert_true(fd >= 0);
	peer_open(&parent, fd);
	welcome_child(&parent, n3);
	assert_true(pm_pump(&loop, parent_ok, n3, 5000));
	peer_free(&parent);
	assert_true(pm_pump(&loop, left, n3, 15000));
	assert_int_equal(f.hellos, 2); /* asked again after the busy round */
	assert_false(n3->s.parent_ok);
	assert_null(n3->s.parent);
	assert_int_equal(n3->s.attach.fd, -1);
	for (i = 0; i < f.nconns; i++)
		if (f.conns[i])
			pm_conn_free(f.conns[i]);
	pm_loop_del(&loop, &f.lw);
	close(f.lw.fd);
	close(lfd1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_silent_supervisor_killed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rank_misbehaves, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rank_other_user, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reattach_busy_then_silent, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
