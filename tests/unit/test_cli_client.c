/* The procmgr command's side of a request (client.c): reading the step
 * from scontrol (fake, clitest.h), and one request to a root that a thread
 * of this test plays from a script over loopback TCP, speaking the real
 * wire protocol (common/wire.h) with fake_auth.c's credentials: its proof,
 * answers, refusals, garbage, an early close, silence. What the command
 * makes of each is asserted (the error said, the answers handed over or
 * not, the next candidate asked); cmd_status.c's table with everything a
 * root may say (warm standbys, a slow node, held state, a restart). */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "cmd.h"
#include "client.h"
#include "clitest.h"
#include "common/request.h"
#include "common/status.h"
#include "io/auth.h"

extern long pm_fake_auth_uid;
extern int pm_fake_auth_fail;

/* ---- a root played from a script ---- */

/* One string per connection, in the order they come; per letter: P its
 * proof (a WELCOME binding the request), O a proof of another user, A an
 * ANSWER of ans_text, E the END (status 0), F an END of status 1, B
 * REFUSED busy, N REFUSED "not the step's root", G bytes that are no
 * frame, i a PING, H silence until the command hangs up; then it closes. */
static const char *script[8];
static const char *ans_text = "hello";
static int lfd[2] = { -1, -1 }, nconns;
static unsigned lport;
static struct pm_request asked[8]; /* what each connection asked */
static pthread_t thr;
static atomic_int stopping;

static int listen_at(const char *addr, unsigned p)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)p) };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	assert_true(fd >= 0);
	inet_pton(AF_INET, addr, &sa.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 8), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	return lport = ntohs(sa.sin_port), fd;
}

static void put(int fd, int type, int status, const char *text)
{
	uint8_t frame[PM_WIRE_FRAME_MAX];
	struct pm_msg m;
	int n;

	pm_msg_init(&m, type);
	m.status = status;
	pm_msg_set_text(&m, text);
	n = pm_msg_encode(&m, frame, sizeof(frame));
	if (n > 0)
		(void)!send(fd, frame, (size_t)n, MSG_NOSIGNAL);
}

/* The command's CLIENT frame, its request read out of the credential. */
static int take_request(int fd, struct pm_request *r)
{
	uint8_t buf[PM_WIRE_FRAME_MAX];
	char payload[PM_REQ_MAX], err[128];
	const char *derr;
	struct pm_msg m;
	size_t have = 0;
	uid_t uid;
	int n = 0;

	while (n == 0) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t k;
		if (poll(&p, 1, 5000) != 1 || (k = recv(fd, buf + have, sizeof(buf) - have, 0)) <= 0)
			return -1;
		have += (size_t)k;
		n = pm_msg_decode(buf, have, &m, &derr);
	}
	if (n < 0 || m.type != PM_MSG_CLIENT ||
	    pm_auth_decode_uid(NULL, m.text, &uid, payload, sizeof(payload), err, sizeof(err)))
		return -1;
	return pm_request_parse(payload, r);
}

static void play(int fd, const char *s, const struct pm_request *r)
{
	char proof[PM_REQ_MAX], *cred = NULL, err[128], other[PM_WIRE_TEXT_MAX];

	for (; *s; s++) {
		switch (*s) {
		case 'P':
		case 'O':
			if (pm_request_proof(r, proof, sizeof(proof)) ||
			    pm_auth_encode(NULL, proof, &cred, err, sizeof(err)))
				return;
			snprintf(other, sizeof(other), "fake:4321:%s", proof);
			put(fd, PM_MSG_WELCOME, 0, *s == 'P' ? cred : other);
			free(cred);
			break;
		case 'A': put(fd, PM_MSG_ANSWER, 0, ans_text); break;
		case 'E': put(fd, PM_MSG_ANSWER_END, 0, "done"); break;
		case 'F': put(fd, PM_MSG_ANSWER_END, 1, "procmgr: cannot do that now"); break;
		case 'B': put(fd, PM_MSG_REFUSED, 0, "busy: too many requests; try again"); break;
		case 'N':
			put(fd, PM_MSG_REFUSED, 0, "procmgr: node x is not the step's root");
			break;
		case 'G': (void)!send(fd, "GET / HTTP/1.0\r\n\r\n", 18, MSG_NOSIGNAL); break;
		case 'i': put(fd, PM_MSG_PING, 0, ""); break;
		case 'H': {
			char b[64];
			struct pollfd p = { .fd = fd, .events = POLLIN };
			while (!atomic_load(&stopping) && (poll(&p, 1, 20) == 0 ||
							   recv(fd, b, sizeof(b), MSG_DONTWAIT) > 0))
				;
			break;
		}
		}
	}
}

static void *root(void *arg)
{
	(void)arg;
	while (!atomic_load(&stopping) && nconns < 8 && script[nconns]) {
		struct pollfd p[2] = { { .fd = lfd[0], .events = POLLIN },
				       { .fd = lfd[1], .events = POLLIN } };
		int i, fd;
		if (poll(p, lfd[1] >= 0 ? 2 : 1, 20) <= 0)
			continue;
		for (i = 0; i < 2; i++) {
			if (!(p[i].revents & POLLIN) || (fd = accept(lfd[i], NULL, NULL)) < 0)
				continue;
			if (take_request(fd, &asked[nconns]) == 0)
				play(fd, script[nconns], &asked[nconns]);
			nconns++;
			close(fd);
		}
	}
	return NULL;
}

static void root_start(void)
{
	atomic_store(&stopping, 0);
	nconns = 0;
	assert_int_equal(pthread_create(&thr, NULL, root, NULL), 0);
}

static void root_stop(void)
{
	atomic_store(&stopping, 1);
	assert_int_equal(pthread_join(thr, NULL), 0);
}

static int up(void **state)
{
	(void)state;
	memset(script, 0, sizeof(script));
	ans_text = "hello";
	pm_fake_auth_uid = -1;
	pm_fake_auth_fail = 0;
	lfd[0] = listen_at("127.0.0.5", 0);
	lfd[1] = listen_at("127.0.0.6", lport);
	cli_tools();
	unsetenv("SLURM_JOB_ID");
	setenv("PROCMGR_MUNGE_SOCKET", "/nonexistent/munge.socket", 1);
	return 0;
}

static int down(void **state)
{
	(void)state;
	close(lfd[0]);
	close(lfd[1]);
	cli_tools_gone();
	cli_before = cli_after = NULL;
	return 0;
}

/* Step 77.3 on the script's addresses (127.0.0.5, then .6). */
static void target(struct pm_target *t, int ncand)
{
	memset(t, 0, sizeof(*t));
	t->job = 77;
	t->step = 3;
	t->port = lport;
	t->uid = (unsigned)getuid();
	t->ncand = ncand;
	snprintf(t->root, sizeof(t->root), "127.0.0.5");
	snprintf(t->cand[0], sizeof(t->cand[0]), "127.0.0.5");
	snprintf(t->cand[1], sizeof(t->cand[1]), "127.0.0.6");
}

struct got {
	int n;
	char text[256];
	int stop_after; /* 0: read them all */
};

static int keep(void *arg, const struct pm_msg *m)
{
	struct got *g = arg;

	g->n++;
	snprintf(g->text, sizeof(g->text), "%.200s", m->text);
	return g->stop_after && g->n >= g->stop_after;
}

/* One request played by script (one string per connection). */
static int ask(struct got *g, int ncand, unsigned ms, char *why, size_t len, ...)
{
	struct pm_target t;
	struct pm_msg end;
	va_list ap;
	int i = 0, rc;

	va_start(ap, len);
	while ((script[i] = va_arg(ap, const char *)))
		i++;
	va_end(ap);
	target(&t, ncand);
	memset(g, 0, sizeof(*g) - sizeof(g->stop_after));
	why[0] = '\0';
	root_start();
	rc = pm_client_ask(&t, PM_Q_STATUS, "-", ms, keep, g, &end, why, len);
	root_stop();
	if (rc == 0)
		snprintf(why, len, "end %d %.200s", end.status, end.text);
	return rc;
}

static void test_answers(void **state)
{
	struct got g = { 0 };
	char why[1024];
	(void)state;

	/* Proven, a PING in between, answers, the end. */
	assert_int_equal(ask(&g, 0, 5000, why, sizeof(why), "iPiAAE", NULL), 0);
	assert_int_equal(g.n, 2);
	assert_string_equal(g.text, "hello");
	assert_string_equal(why, "end 0 done");
	/* The request named this node, its port and the kind. */
	assert_string_equal(asked[0].host, "127.0.0.5");
	assert_int_equal(asked[0].port, lport);
	assert_int_equal(asked[0].kind, PM_Q_STATUS);
	assert_int_equal(asked[0].job, 77);
	/* The reader has seen enough: no more is read, the end made up. */
	g.stop_after = 1;
	assert_int_equal(ask(&g, 0, 5000, why, sizeof(why), "PAAAH", NULL), 0);
	assert_int_equal(g.n, 1);
	assert_string_equal(why, "end 0 ");
	g.stop_after = 0;
	/* The root's own no. */
	assert_int_equal(ask(&g, 0, 5000, why, sizeof(why), "PF", NULL), 0);
	assert_string_equal(why, "end 1 procmgr: cannot do that now");
}

/* Nothing reaches the reader before the proof; what cannot prove itself
 * is said, and the next candidate asked. */
static void test_proof(void **state)
{
	struct got g;
	char why[1024], want[256];
	(void)state;

	assert_int_equal(ask(&g, 0, 5000, why, sizeof(why), "AAE", NULL), -1);
	assert_int_equal(g.n, 0);
	snprintf(want, sizeof(want), "the process on 127.0.0.5:%u could not prove it is step "
		 "77.3's procmgrd: it answered (answer) before proving itself (its answer is not "
		 "shown)", lport);
	assert_string_equal(why, want);
	assert_int_equal(ask(&g, 0, 5000, why, sizeof(why), "OAE", NULL), -1);
	assert_int_equal(g.n, 0);
	cli_has(why, "could not prove it is step 77.3's procmgrd");
	cli_has(why, "4321");
	/* The impostor on the first node, the root on the second. */
	assert_int_equal(ask(&g, 2, 5000, why, sizeof(why), "OA", "PAE", NULL), 0);
	assert_int_equal(g.n, 1);
	assert_string_equal(asked[1].host, "127.0.0.6");
	/* Neither proves itself: the impostor's words. */
	assert_int_equal(ask(&g, 2, 5000, why, sizeof(why), "N", "O", NULL), -1);
	cli_has(why, "the process on 127.0.0.6");
	/* Neither is the root: what node 0 said. */
	assert_int_equal(ask(&g, 2, 5000, why, sizeof(why), "N", "N", NULL), -1);
	assert_string_equal(why, "procmgr: node x is not the step's root");
	assert_int_equal(nconns, 2);
}

static void test_broken_answers(void **state)
{
	struct got g;
	char why[1024], want[256];
	(void)state;

	assert_int_equal(ask(&g, 0, 5000, why, sizeof(why), "PAG", NULL), -1);
	assert_int_equal(g.n, 1);
	snprintf(want, sizeof(want), "bad answer from 127.0.0.5:%u: ", lport);
	cli_has(why, want);
	/* Closed before the end: the step may have ended (1). */
	assert_int_equal(ask(&g, 0, 5000, why, sizeof(why), "PA", NULL), 1);
	assert_string_equal(why, "step 77.3's procmgrd closed the connection before the end of "
			    "its answer (has the step ended?)");
	/* Silence: the bound, said. */
	assert_int_equal(ask(&g, 0, 500, why, sizeof(why), "PH", NULL), -1);
	assert_string_equal(why, "no complete answer from step 77.3 within 0.5 s");
	/* Busy, then answered: asked again. */
	assert_int_equal(ask(&g, 0, 5000, why, sizeof(why), "B", "PAE", NULL), 0);
	assert_int_equal(nconns, 2);
	assert_int_equal(g.n, 1);
	/* Busy until the end of the time given. */
	assert_int_equal(ask(&g, 0, 1000, why, sizeof(why), "B", "B", NULL), -1);
	assert_string_equal(why, "refused: busy (step 77.3's procmgrd on 127.0.0.5: too many "
			    "requests; try again)");
}

static void test_unreachable(void **state)
{
	struct pm_target t;
	struct pm_msg end;
	struct got g = { 0 };
	char why[1024], want[256];
	(void)state;

	target(&t, 0);
	{
		/* A port of ours that nobody listens on. */
		struct sockaddr_in sa = { .sin_family = AF_INET };
		socklen_t slen = sizeof(sa);
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		inet_pton(AF_INET, "127.0.0.5", &sa.sin_addr);
		assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
		assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &slen), 0);
		t.port = ntohs(sa.sin_port);
		assert_int_equal(pm_client_ask(&t, PM_Q_STATUS, "-", 2000, keep, &g, &end, why,
					       sizeof(why)), -1);
		close(fd);
	}
	snprintf(want, sizeof(want), "cannot reach step 77.3's procmgrd on 127.0.0.5:%u: "
		 "Connection refused (is it a procmgr step, and still running?)", t.port);
	assert_string_equal(why, want);
	snprintf(t.root, sizeof(t.root), "no-such-node.invalid");
	assert_int_equal(pm_client_ask(&t, PM_Q_STATUS, "-", 2000, keep, &g, &end, why,
				       sizeof(why)), -1);
	cli_has(why, "cannot resolve node no-such-node.invalid: ");
	assert_int_equal(pm_client_ask(&t, PM_Q_STATUS, "a b", 2000, keep, &g, &end, why,
				       sizeof(why)), -1);
	assert_string_equal(why, "arguments too long or not allowed: 'a b'");
	pm_fake_auth_fail = 1;
	assert_int_equal(pm_client_ask(&t, PM_Q_STATUS, "-", 2000, keep, &g, &end, why,
				       sizeof(why)), -1);
	assert_string_equal(why, "cannot sign the request with munge: munge_encode: fake failure");
	assert_int_equal(g.n, 0);
}

/* ---- the step, from scontrol's line ---- */

static void step_says(const char *text)
{
	cli_answer("scontrol show step -o 77.3", text, 0);
}

static void target_refused(const char *text, const char *why_has)
{
	struct pm_target t;
	char why[1024];

	step_says(text);
	assert_int_equal(pm_client_target(77, 3, &t, why, sizeof(why)), -1);
	cli_has(why, why_has);
}

static void test_target(void **state)
{
	struct pm_target t;
	char why[1024];
	(void)state;

	assert_int_equal(pm_client_target(77, 3, &t, why, sizeof(why)), -1);
	assert_string_equal(why, "no running step 77.3 (scontrol: slurm_load_jobs error: Invalid "
			    "job id specified)");
	step_says("StepId=77.3 UserId=bob(1001) State=RUNNING NodeList=n[001-040] "
		  "ResvPorts=20100-20101\n");
	assert_int_equal(pm_client_target(77, 3, &t, why, sizeof(why)), 0);
	assert_int_equal(t.uid, 1001);
	assert_string_equal(t.root, "n001");
	assert_int_equal(t.nnodes, 40);
	assert_int_equal(t.ncand, PM_CLIENT_CANDIDATES);
	assert_string_equal(t.cand[32], "n033");
	assert_int_equal(t.port, 20100);
	assert_string_equal(t.munge_socket, "/nonexistent/munge.socket");
	/* munge's socket as Slurm's clients use it. */
	unsetenv("PROCMGR_MUNGE_SOCKET");
	step_says("StepId=77.3 UserId=1001 NodeList=n1 ResvPorts=20100-20101\n");
	cli_answer("scontrol show config", "Configuration data as of now\nAuthAltTypes = (null)\n"
		   "AuthInfo                = ttl=60,socket=/run/munge/other.socket\n"
		   "AuthType                = auth/munge\n", 0);
	assert_int_equal(pm_client_target(77, 3, &t, why, sizeof(why)), 0);
	assert_int_equal(t.uid, 1001);
	assert_string_equal(t.munge_socket, "/run/munge/other.socket");
	cli_answer("scontrol show config", "AuthType = auth/munge\n", 0);
	assert_int_equal(pm_client_target(77, 3, &t, why, sizeof(why)), 0);
	assert_string_equal(t.munge_socket, "");
	target_refused("StepId=77.3 UserId=1 State=COMPLETING NodeList=n1\n",
		       "step 77.3 is COMPLETING, not running");
	target_refused("StepId=77.3 UserId=bob NodeList=n1 ResvPorts=1-2\n",
		       "cannot read step 77.3's user (UserId) from scontrol");
	target_refused("StepId=77.3 UserId=1 ResvPorts=1-2\n",
		       "cannot read step 77.3's node list from scontrol");
	target_refused("StepId=77.3 UserId=1 NodeList=n[1- ResvPorts=1-2\n",
		       "cannot read step 77.3's node list");
	target_refused("StepId=77.3 UserId=1 NodeList=n1\n", "step 77.3 has no reserved ports "
		       "(ResvPorts): it is not a procmgr step");
	target_refused("StepId=77.3 UserId=1 NodeList=n1 ResvPorts=20100\n", "no reserved ports");
	target_refused("error: something else\n", "no running step 77.3 (scontrol: error: something");
}

static void test_parse_id(void **state)
{
	static const char *bad[] = { "", "0", "012", "x", "12.", "12.x", "12.1.2", "-1", "12 ",
				     "4294967295", "1.4294967294", "99999999999999999999" };
	unsigned job, step;
	int has, i;
	char why[256];
	(void)state;

	assert_int_equal(pm_client_parse_id("12", &job, &step, &has, why, sizeof(why)), 0);
	assert_true(job == 12 && step == 0 && !has);
	assert_int_equal(pm_client_parse_id("4294967294.4294967293", &job, &step, &has, why,
					    sizeof(why)), 0);
	assert_true(job == 4294967294u && step == 4294967293u && has);
	for (i = 0; i < (int)(sizeof(bad) / sizeof(bad[0])); i++) {
		if (pm_client_parse_id(bad[i], &job, &step, &has, why, sizeof(why)) != -1)
			fail_msg("'%s' taken", bad[i]);
		cli_has(why, "(allowed: JOBID or JOBID.STEP, such as 12 or 12.1)");
	}
}

static void test_steps(void **state)
{
	char buf[64], why[256];
	(void)state;

	/* Not a job id: the user's steps. */
	setenv("SLURM_JOB_ID", "12a", 1);
	cli_answer("squeue -h -s --me -o %i", "5.0\n5.batch\n6.interactive\n6.12\n", 0);
	assert_int_equal(pm_client_steps(buf, sizeof(buf), why, sizeof(why)), 2);
	assert_string_equal(buf, "5.0 6.12");
	/* What does not fit is left out. */
	assert_int_equal(pm_client_steps(buf, 6, why, sizeof(why)), 1);
	assert_string_equal(buf, "5.0");
	unsetenv("SLURM_JOB_ID");
}

/* ---- commands over the scripted root ---- */

static void node_line(int node, const char *name, const char *slow, char *out, size_t len)
{
	struct pm_st_node n = { .node = node, .gen = 2, .ranks = 1, .rec_gen = node ? 0 : 2,
				.process_ms = 1500, .recovery_ms = node ? -1 : 4200,
				.state_bytes = 3 << 20, .state_max = 64 << 20,
				.standby_kb = 20480 };
	size_t k = strlen(out);

	snprintf(n.name, sizeof(n.name), "%s", name);
	snprintf(n.phase, sizeof(n.phase), "running");
	snprintf(n.health, sizeof(n.health), "ok");
	snprintf(n.slow, sizeof(n.slow), "%s", slow);
	assert_int_equal(pm_st_node_format(&n, out + k, len - k), 0);
	strcat(out, "\n");
}

static void rank_line(int rank, int node, const char *sb, char *out, size_t len)
{
	struct pm_st_rank r = { .rank = rank, .node = node, .pid = rank < 0 ? 0 : 4100 + rank,
				.gen = 2, .beat_ms = rank < 0 ? -1 : rank * 9000, .cpu_ms = -1,
				.rss_kb = rank < 0 ? -1 : 5000 + rank * 10000, .standby_kb = 30000 };
	size_t k = strlen(out);

	snprintf(r.state, sizeof(r.state), rank < 0 ? "spare" : "running");
	snprintf(r.standby, sizeof(r.standby), "%s", sb);
	assert_int_equal(pm_st_rank_format(&r, out + k, len - k), 0);
	strcat(out, "\n");
}

static void test_status_table(void **state)
{
	static char text[4096];
	struct cli_out o;
	char ports[160];
	(void)state;

	text[0] = '\0';
	node_line(1, "n2", "compute:2.50", text, sizeof(text));
	node_line(0, "n1", "phase:0.90", text, sizeof(text));
	rank_line(1, 1, "ready", text, sizeof(text));
	rank_line(0, 0, "starting", text, sizeof(text));
	rank_line(-1, 1, "", text, sizeof(text));
	strcat(text, "what is this\n");
	ans_text = text;
	snprintf(ports, sizeof(ports), "StepId=77.3 UserId=%u NodeList=127.0.0.[5-6] "
		 "ResvPorts=%u-%u\n", (unsigned)getuid(), lport, lport + 1);
	step_says(ports);
	cli_before = root_start;
	cli_after = root_stop;
	script[0] = "OA"; /* an impostor first: warned about, not believed */
	script[1] = "PAE";
	cli_run(&o, pm_cmd_status, "status", "77.3", NULL);
	assert_int_equal(o.rc, 0);
	cli_has(o.err, "procmgr: warning: the process on 127.0.0.5");
	cli_has(o.err, "procmgr status: 1 line of the answer could not be read\n");
	cli_has(o.out, "RANK   LOCAL NODE             PID      STATE    GEN  BEAT     CPU      "
		       "RSS      STANDBY\n");
	cli_has(o.out, "0      0     n1               4100     running  2    0.00s    -        "
		       "5000K    starting 29.3M\n");
	cli_has(o.out, "1      0     n2               4101     running  2    9.00s");
	cli_has(o.out, "-      0     n2               -        spare");
	/* The nodes in order, the slow one's evidence said. */
	cli_has(o.out, "0      n1               running   2    1     ok      3.0M/64M     20.0M  "
		       "SLOW (phase 0.90 of steps last)\n");
	cli_has(o.out, "SLOW (compute 2.50x the median)");
	cli_has(o.out, "1 spare in reserve");
	cli_has(o.out, "\nlast restart: generation 2, every rank training again 4.20 s after the "
		       "failure (procmgr's part 1.50 s)\n");
	assert_true(strstr(o.out, "\n0      n1") < strstr(o.out, "\n1      n2"));
	script[0] = "PAE";
	script[1] = NULL;
	cli_run(&o, pm_cmd_status, "status", "--json", "77.3", NULL);
	assert_int_equal(o.rc, 0);
	cli_has(o.out, "\"last_restart\":{\"gen\":2,\"process_ms\":1500,\"recovery_ms\":4200}");
	cli_has(o.out, "\"standbys\":{\"ready\":1,\"starting\":1,");
	cli_has(o.out, "\"standby\":\"ready\",\"standby_rss_kb\":30000");
	cli_has(o.out, "\"slow\":\"compute:2.50\",\"state_bytes\":3145728,\"state_max\":67108864");
	/* The root closes before its end: said, exit 1. */
	script[0] = "PA";
	cli_run(&o, pm_cmd_status, "status", "77.3", NULL);
	assert_int_equal(o.rc, 1);
	cli_has(o.err, "procmgr status: step 77.3's procmgrd closed the connection");
	/* stop and restart: the root's answer, on stdout or stderr. */
	script[0] = "PE";
	cli_run(&o, pm_cmd_stop, "stop", "77.3", NULL);
	assert_int_equal(o.rc, 0);
	assert_string_equal(o.out, "done\n");
	script[0] = "PF";
	cli_run(&o, pm_cmd_restart, "restart", "77.3", "--trial", "lr1", NULL);
	assert_int_equal(o.rc, 1);
	assert_string_equal(o.err, "procmgr: cannot do that now\n");
	assert_string_equal(asked[0].args, "trial=lr1");
	assert_int_equal(asked[0].kind, PM_Q_RESTART);
	script[0] = "G";
	cli_run(&o, pm_cmd_stop, "stop", "77.3", NULL);
	assert_int_equal(o.rc, 1);
	cli_has(o.err, "procmgr stop: bad answer from 127.0.0.5");
	script[0] = "G";
	cli_run(&o, pm_cmd_stacks, "stacks", "77.3", NULL);
	assert_int_equal(o.rc, 1);
	cli_has(o.err, "procmgr stacks: bad answer from 127.0.0.5");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_answers, up, down),
		cmocka_unit_test_setup_teardown(test_proof, up, down),
		cmocka_unit_test_setup_teardown(test_broken_answers, up, down),
		cmocka_unit_test_setup_teardown(test_unreachable, up, down),
		cmocka_unit_test_setup_teardown(test_target, up, down),
		cmocka_unit_test_setup_teardown(test_parse_id, up, down),
		cmocka_unit_test_setup_teardown(test_steps, up, down),
		cmocka_unit_test_setup_teardown(test_status_table, up, down),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
