/* tests/unit/trialsup.h: a sweep slot's supervisor for the unit tests. */
#include "trialsup.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "io/events.h"
#include "io/sys.h"
#include "procmgrd/sweep_run.h"
#include "pump.h"
#include "stepnet.h"
#include "sweep/sweep_metric.h"

static void reply(struct sup *u, int type, int status, unsigned flags, const char *text)
{
	struct pm_msg m;

	pm_msg_init(&m, type);
	m.gen = u->gen;
	m.status = status;
	m.count = flags;
	if (text && text[0])
		pm_msg_set_text(&m, text);
	if (u->c)
		assert_int_equal(pm_conn_send(u->c, &m), 0);
}

static void on_exit_(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct sup *u = w->arg;
	char out[512] = "";
	ssize_t n;
	int st = 0;
	(void)ev;

	pm_loop_del(l, w);
	close(w->fd);
	assert_int_equal(waitpid(u->pid, &st, 0), u->pid);
	n = read(u->out, out, sizeof(out) - 1);
	out[n > 0 ? n : 0] = '\0';
	close(u->out);
	u->out = -1;
	u->pid = 0;
	u->exits++;
	/* As procmgr-rank: a stopped command's end is RANK_STOPPED; a failed
	 * one's error is its last words (here its output). A line "RESULT
	 * NAME=VALUE" is its result (procmgr-rank reads the trial's result
	 * file on its rank 0 only; sent from every rank here, so that the
	 * root is seen to keep rank 0's). */
	if (u->hung) {
		reply(u, PM_MSG_RANK_EXIT, st, PM_FLAG_HUNG, NULL);
	} else if (u->stopping) {
		reply(u, PM_MSG_RANK_STOPPED, st, 0, NULL);
	} else {
		const char *r = strstr(out, "RESULT ");
		struct pm_metric res;
		struct pm_msg m;
		char why[160];
		bool has = r && !pm_metric_parse(r + 7, strcspn(r + 7, "\n"), &res, why,
						  sizeof(why));

		pm_msg_init(&m, PM_MSG_RANK_EXIT);
		m.gen = u->gen;
		m.status = st;
		pm_metric_encode(&m, has ? &res : NULL, st ? out : NULL);
		if (u->c)
			assert_int_equal(pm_conn_send(u->c, &m), 0);
	}
	u->stopping = u->hung = false;
}

static void run(struct sup *u, const struct pm_msg *m)
{
	const char *cmd = strchr(m->text, '\n');
	int p[2];

	assert_non_null(cmd);
	assert_int_equal(u->pid, 0); /* a slot runs one trial at a time */
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	u->gen = m->gen;
	u->pid = fork();
	assert_true(u->pid >= 0);
	if (u->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* a failed test leaves none */
		char rank[16];

		setpgid(0, 0);
		snprintf(rank, sizeof(rank), "%d", m->rank);
		setenv("RANK", rank, 1);
		dup2(p[1], STDOUT_FILENO);
		execl("/bin/sh", "sh", "-c", cmd + 1, (char *)NULL);
		_exit(127);
	}
	setpgid(u->pid, u->pid);
	close(p[1]);
	u->out = p[0];
	fcntl(u->out, F_SETFL, O_NONBLOCK);
	u->pw = (struct pm_watch){ .fd = pm_pidfd_open(u->pid), .fn = on_exit_, .arg = u };
	assert_true(u->pw.fd >= 0);
	assert_int_equal(pm_loop_add(&loop, &u->pw, EPOLLIN), 0);
	/* "# hung": its heartbeat never came; killed as procmgr-rank does. */
	if (strstr(cmd, "# hung")) {
		u->hung = true;
		kill(-u->pid, SIGKILL);
	}
}

static void sup_msg(struct pm_conn *c, const struct pm_msg *m)
{
	struct sup *u = c->w.arg;

	switch (m->type) {
	case PM_MSG_TRIAL_START:
		u->starts++;
		u->start = *m;
		snprintf(u->log + strlen(u->log), sizeof(u->log) - strlen(u->log), "%.*s|",
			 (int)strcspn(m->text, "\n"), m->text);
		run(u, m);
		break;
	case PM_MSG_TRIAL_STOP:
		u->stops++;
		if (u->pid && m->gen == u->gen) {
			u->stopping = true;
			kill(-u->pid, SIGTERM);
		}
		break;
	case PM_MSG_PRINT:
		if (u->nprints < SUP_PRINTS)
			snprintf(u->prints[u->nprints++], sizeof(u->prints[0]), "%s", m->text);
		break;
	default:
		break;
	}
}

static void kill_cmd(struct sup *u)
{
	if (!u->pid)
		return;
	kill(-u->pid, SIGKILL);
	waitpid(u->pid, NULL, 0);
	pm_loop_del(&loop, &u->pw);
	close(u->pw.fd);
	close(u->out);
	u->pid = 0;
}

static void sup_close(struct pm_conn *c, const char *why)
{
	struct sup *u = c->w.arg;
	(void)why;

	/* Its command never outlives it. */
	kill_cmd(u);
	u->closed = true;
	pm_conn_free(c);
	u->c = NULL;
}

void sup_up(struct sup *u, int node, int lrank, int grank)
{
	int sv[2];
	struct pm_msg m;

	memset(u, 0, sizeof(*u));
	u->node = node;
	u->lrank = lrank;
	u->out = -1;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	pm_step_rank_conn(&nodes[node].s, sv[0]);
	u->c = pm_conn_new(&loop, sv[1], sup_msg, sup_close, u);
	assert_non_null(u->c);
	pm_msg_init(&m, PM_MSG_RANK_HELLO);
	m.node = lrank;
	m.rank = grank;
	m.status = (int)getpid();
	assert_int_equal(pm_conn_send(u->c, &m), 0);
}

void sup_down(struct sup *u)
{
	kill_cmd(u);
	if (u->c)
		pm_conn_free(u->c);
	u->c = NULL;
	u->closed = true;
}

bool sup_said(const struct sup *u, const char *text)
{
	int i;

	for (i = 0; i < u->nprints; i++)
		if (strstr(u->prints[i], text))
			return true;
	return false;
}

static const char *heard;

static bool heard_p(void *arg)
{
	return sup_said(arg, heard);
}

bool sup_hears(struct sup *u, const char *text)
{
	heard = text;
	return pm_pump(&loop, heard_p, u, 5000);
}

bool sup_running(void *arg)
{
	return ((struct sup *)arg)->pid > 0;
}

bool sup_idle(void *arg)
{
	return ((struct sup *)arg)->pid == 0;
}

const char *sup_trial(const struct sup *u)
{
	static char name[PM_WIRE_TEXT_MAX];

	if (!u->starts)
		return "";
	sscanf(u->start.text, "%255s", name);
	return name;
}

/* ---- the sweep step ---- */

char sweep_dir[64];
struct sup sups[8];
int sweep_restarts;
int sweep_spares;
static int slots_per_node, nn_up;

static void sweep_opts(struct pm_step *s)
{
	snprintf(s->opts.sweep, sizeof(s->opts.sweep), "%s/trials", sweep_dir);
	if (sweep_restarts) {
		s->opts.restart = PM_RESTART_ON_FAILURE;
		s->opts.restart_max = sweep_restarts;
		s->opts.restart_delay_ms = 1;
	}
}

int sweep_setup(void **state)
{
	snprintf(sweep_dir, sizeof(sweep_dir), "/tmp/pm-test-sweep-XXXXXX");
	if (!mkdtemp(sweep_dir))
		return -1;
	memset(sups, 0, sizeof(sups));
	sweep_spares = 0;
	sweep_restarts = 0;
	nn_up = 0;
	return setup(state);
}

int sweep_teardown(void **state)
{
	char cmd[128];
	int i;

	for (i = 0; i < nn_up * slots_per_node && i < 8; i++)
		sup_down(&sups[i]);
	teardown(state);
	snprintf(cmd, sizeof(cmd), "/bin/rm -rf %s", sweep_dir);
	return system(cmd);
}

static bool joined(void *arg)
{
	int i, j;
	(void)arg;

	for (i = 0; i < nn_up; i++) {
		if (i > 0 && !nodes[i].s.parent_ok)
			return false;
		for (j = 0; j < slots_per_node; j++)
			if (!nodes[i].s.ranks[j])
				return false;
	}
	return true;
}

void sweep_up(int nn, int fanout, int L, const char *text)
{
	char path[128], err[512];
	FILE *f;
	int i, j;

	snprintf(path, sizeof(path), "%s/trials", sweep_dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	node_tweak = sweep_opts;
	slots_per_node = L;
	for (i = 0; i < nn; i++) {
		node_up(i, nn, fanout, L, (unsigned)sweep_spares, 0, true);
		nn_up = i + 1;
		if (pm_sweep_run_init(&nodes[i].s, err, sizeof(err)))
			fail_msg("pm_sweep_run_init: %s", err);
	}
	snprintf(path, sizeof(path), "%s/events", sweep_dir);
	assert_int_equal(pm_events_open(&nodes[0].s.events, path, JOB, STEP), 0);
	for (i = 1; i < nn; i++)
		attach_to_parent(&nodes[i]);
	for (i = 0; i < nn; i++)
		for (j = 0; j < L; j++)
			sup_up(&sups[i * L + j], i, j, i * L + j);
	assert_true(pm_pump(&loop, joined, NULL, 5000));
	for (i = nn - 1; i >= 0; i--)
		pm_gen_local_ready(&nodes[i].s.gen);
}

char *sweep_read(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", sweep_dir, name);
	return slurp(path);
}

bool sweep_over(void *arg)
{
	(void)arg;
	return pm_gen_terminal(&nodes[0].s.gen);
}
