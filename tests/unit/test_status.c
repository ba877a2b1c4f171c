/* procmgr status's answer of a node (procmgrd/query_status.c), asked over
 * the real query path (query.c) of in-process nodes (stepnet.c): a
 * running rank's process (its pid, CPU time and memory from /proc) and
 * heartbeat age, a warm standby's memory (a real process group), a failed
 * health check's report, the ranks' state store, the last restart's
 * measure, and a hot spare said as such through the tree. */
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/contract.h"
#include "common/request.h"
#include "io/auth.h"
#include "procmgrd/query.h"
#include "procmgrd/step.h"
#include "pump.h"
#include "stepnet.h"

static char dir[64];

static void warm(struct pm_step *s)
{
	snprintf(s->opts.warm, sizeof(s->opts.warm), "on");
}

static int ssetup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/pm-test-status-XXXXXX");
	if (!mkdtemp(dir) || setup(state))
		return -1;
	node_tweak = warm;
	return 0;
}

static int steardown(void **state)
{
	char cmd[128];

	teardown(state);
	snprintf(cmd, sizeof(cmd), "/bin/rm -rf %s", dir);
	return system(cmd);
}

static void has(const char *text, const char *what)
{
	if (!strstr(text, what))
		fail_msg("'%s' not in '%s'", what, text);
}

static bool answered(void *arg)
{
	struct peer *p = arg;

	return (p->n > 0 && p->got[p->n - 1].type == PM_MSG_ANSWER_END) || p->closed;
}

/* procmgr status JOB.STEP, as the command sends it; every answer's text. */
static void status(char *all, size_t len)
{
	struct pm_request r = { .kind = PM_Q_STATUS, .job = JOB, .step = STEP, .port = port };
	char payload[PM_REQ_MAX], err[128], *cred = NULL;
	static unsigned nonce;
	struct peer p;
	struct pm_msg m;
	int i;

	snprintf(r.args, sizeof(r.args), "-");
	snprintf(r.host, sizeof(r.host), "127.0.0.1");
	snprintf(r.nonce, sizeof(r.nonce), "%0*x", PM_REQ_NONCE_HEX, ++nonce);
	assert_int_equal(pm_request_format(&r, payload, sizeof(payload)), 0);
	assert_int_equal(pm_auth_encode(NULL, payload, &cred, err, sizeof(err)), 0);
	peer_open(&p, dial("127.0.0.9", "127.0.0.1"));
	p.client = true;
	pm_msg_init(&m, PM_MSG_CLIENT);
	pm_msg_set_text(&m, cred);
	free(cred);
	assert_int_equal(pm_conn_send(p.c, &m), 0);
	assert_true(pm_pump(&loop, answered, &p, 5000));
	all[0] = '\0';
	for (i = 0; i < p.n && i < 16; i++)
		strncat(all, p.got[i].text, len - strlen(all) - 1);
	assert_int_equal(p.got[p.n - 1].type, PM_MSG_ANSWER_END);
	peer_free(&p);
}

/* The line of all that starts with what. */
static const char *line(const char *all, const char *what, char *buf, size_t len)
{
	const char *l = strstr(all, what);

	if (!l)
		fail_msg("no '%s' in '%s'", what, all);
	snprintf(buf, len, "%.*s", (int)strcspn(l, "\n"), l);
	return buf;
}

static pid_t sleeper(void)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		setpgid(0, 0);
		for (;;)
			pause();
	}
	setpgid(pid, pid);
	return pid;
}

static bool got(void *arg)
{
	return ((struct peer *)arg)->n > 0;
}

static bool both_in(void *arg)
{
	(void)arg;
	return nodes[0].s.ranks[0] && nodes[0].s.ranks[1];
}

static bool cmd_known(void *arg)
{
	return nodes[0].s.cmd_pgid[0] == *(pid_t *)arg && nodes[0].s.sb_state[1] == 2;
}

static void test_running_node(void **state)
{
	struct peer r0, r1;
	struct pm_step *s;
	struct pm_guard g = { .n = 1 };
	struct pm_msg m;
	char all[16384], buf[512], path[256], want[128];
	pid_t cmd, sb;
	FILE *f;
	(void)state;

	s = &node_up(0, 1, 2, 2, 0, 0, true)->s;
	rank_pair(&nodes[0], &r0);
	rank_hello(&r0, 0, 0);
	rank_pair(&nodes[0], &r1);
	rank_hello(&r1, 1, 1);
	assert_true(pm_pump(&loop, both_in, NULL, 5000));
	pm_gen_local_ready(&s->gen);
	assert_true(pm_pump(&loop, got, &r0, 5000));
	/* Rank 0's command runs; rank 1's supervisor keeps a standby ready. */
	cmd = sleeper();
	sb = sleeper();
	pm_msg_init(&m, PM_MSG_RANK_RUN);
	m.status = (int)cmd;
	assert_int_equal(pm_conn_send(r0.c, &m), 0);
	pm_msg_init(&m, PM_MSG_RANK_STANDBY);
	m.status = (int)sb;
	m.count = 2;
	assert_int_equal(pm_conn_send(r1.c, &m), 0);
	assert_true(pm_pump(&loop, cmd_known, &cmd, 5000));
	/* Its heartbeat file, in the run directory the query knows. */
	pm_query_free(s);
	assert_int_equal(pm_query_init(s, dir, NULL), 0);
	assert_int_equal(pm_path_heartbeat(path, sizeof(path), dir, 0), 0);
	fclose(fopen(path, "w"));
	/* A check failed (its report written), the state store, a restart. */
	snprintf(g.report, sizeof(g.report), "%s/report", dir);
	f = fopen(g.report, "w");
	fputs("mem: low\n", f);
	fclose(f);
	s->guard = &g;
	snprintf(path, sizeof(path), "%s/state", dir);
	assert_int_equal(pm_state_link_init(s, path, 1, 2), 0);
	s->gen.rec = (struct pm_gen_recovery){ .gen = 1, .beat = true, .process_ms = 12,
					       .recovery_ms = 34 };

	status(all, sizeof(all));
	line(all, "node id=0", buf, sizeof(buf));
	has(buf, "node id=0 name=127.0.0.1 phase=running gen=0 ranks=2 health=failed rec_gen=1 "
		 "process_ms=12 recovery_ms=34 state_bytes=0 state_max=2097152 standby_kb=");
	snprintf(want, sizeof(want), "rank id=0 local=0 node=0 pid=%d state=running gen=0 beat_ms=",
		 (int)cmd);
	line(all, "rank id=0", buf, sizeof(buf));
	has(buf, want);
	assert_null(strstr(buf, "beat_ms=-1"));
	assert_null(strstr(buf, "cpu_ms=-1"));
	assert_null(strstr(buf, "rss_kb=-1")); /* read from /proc */
	has(buf, " standby=none standby_kb=-1");
	line(all, "rank id=1", buf, sizeof(buf));
	has(buf, "pid=0 state=running gen=0 beat_ms=-1 cpu_ms=-1 rss_kb=-1 standby=ready standby_kb=");
	assert_null(strstr(buf, "standby_kb=-1")); /* its group's memory */

	/* The report gone: healthy; the last restart without a heartbeat. */
	unlink(g.report);
	s->gen.rec.beat = false;
	status(all, sizeof(all));
	has(all, "health=ok rec_gen=1 process_ms=12 recovery_ms=-1");
	/* No checks at all: none. */
	s->guard = NULL;
	status(all, sizeof(all));
	has(all, " health=none");
	kill(cmd, SIGKILL);
	kill(sb, SIGKILL);
	waitpid(cmd, NULL, 0);
	waitpid(sb, NULL, 0);
	peer_free(&r0);
	peer_free(&r1);
}

static bool spare_up(void *arg)
{
	(void)arg;
	return nodes[1].s.parent_ok && nodes[0].s.ranks[0] && nodes[1].s.ranks[0];
}

static bool standby_asked(void *arg)
{
	struct peer *p = arg;
	int i;

	for (i = 0; i < p->n && i < 16; i++)
		if (p->got[i].type == PM_MSG_RANK_STANDBY)
			return true;
	return false;
}

/* Two nodes, one a hot spare: its supervisor is asked to keep a standby
 * (warm), and the status says spare for it and its rank, through the
 * tree. */
static void test_spare(void **state)
{
	struct peer r0, r1;
	char all[16384], buf[512];
	(void)state;

	node_up(0, 2, 2, 1, 1, 0, true);
	node_up(1, 2, 2, 1, 1, 0, true);
	attach_to_parent(&nodes[1]);
	rank_pair(&nodes[0], &r0);
	rank_hello(&r0, 0, 0);
	rank_pair(&nodes[1], &r1);
	rank_hello(&r1, 0, 1);
	assert_true(pm_pump(&loop, spare_up, NULL, 5000));
	assert_true(pm_pump(&loop, standby_asked, &r1, 5000));
	assert_false(standby_asked(&r0)); /* not a spare */
	status(all, sizeof(all));
	line(all, "name=127.0.0.2", buf, sizeof(buf));
	has(buf, "phase=spare ");
	line(all, "rank id=-1 local=0 node=1", buf, sizeof(buf));
	has(buf, "state=spare ");
	line(all, "name=127.0.0.1", buf, sizeof(buf));
	assert_null(strstr(buf, "spare"));
	peer_free(&r0);
	peer_free(&r1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_running_node, ssetup, steardown),
		cmocka_unit_test_setup_teardown(test_spare, ssetup, steardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
