#include "client.h"
#include "cliargs.h"
#include "sweep/sweep_file.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/clientauth.h"
#include "common/handshake.h"
#include "common/hostlist.h"
#include "common/contract.h"
#include "io/auth.h"

static unsigned long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000 + (unsigned long long)ts.tv_nsec / 1000000;
}

int pm_client_parse_id(const char *s, unsigned *job, unsigned *step, int *has_step,
		       char *why, size_t len)
{
	char *end;
	unsigned long j, st = 0;

	*has_step = 0;
	errno = 0;
	j = strtoul(s, &end, 10);
	if (end != s && *end == '.' && end[1] >= '0' && end[1] <= '9') {
		st = strtoul(end + 1, &end, 10);
		*has_step = 1;
	}
	if (errno || end == s || *end || s[0] < '1' || s[0] > '9' || j > 0xfffffffeUL ||
	    st > 0xfffffffdUL) {
		snprintf(why, len, "bad step '%.64s' (allowed: JOBID or JOBID.STEP, such as 12 or "
			 "12.1)", s);
		return -1;
	}
	*job = (unsigned)j;
	*step = (unsigned)st;
	return 0;
}

/* A command's output, whole (bounded). */
static int run(const char *cmd, char *out, size_t len)
{
	FILE *f = popen(cmd, "r");
	size_t n = 0, k;

	if (!f)
		return -1;
	while (n + 1 < len && (k = fread(out + n, 1, len - 1 - n, f)) > 0)
		n += k;
	out[n] = '\0';
	return pclose(f) == 0 ? 0 : -1;
}

/* "Key=value" in scontrol's one-line output. */
static int field(const char *text, const char *key, char *out, size_t len)
{
	const char *p = text;
	size_t klen = strlen(key), n;

	while ((p = strstr(p, key))) {
		if ((p == text || p[-1] == ' ' || p[-1] == '\n') && p[klen] == '=') {
			p += klen + 1;
			n = strcspn(p, " \n");
			if (n >= len)
				return -1;
			memcpy(out, p, n);
			out[n] = '\0';
			return 0;
		}
		p += klen;
	}
	return -1;
}

/* munge's socket as Slurm's clients use it (AuthInfo=socket=...). */
static void munge_socket(char *out, size_t len)
{
	char buf[65536], *p;
	const char *env = getenv("PROCMGR_MUNGE_SOCKET");

	out[0] = '\0';
	if (env) {
		snprintf(out, len, "%s", env);
		return;
	}
	if (run("scontrol show config 2>/dev/null", buf, sizeof(buf)))
		return;
	p = strstr(buf, "\nAuthInfo ");
	if (!p || !(p = strchr(p + 1, '\n')))
		return;
	*p = '\0';
	p = strstr(strstr(buf, "\nAuthInfo "), "socket=");
	if (p) {
		p += 7;
		snprintf(out, len, "%.*s", (int)strcspn(p, ",\n "), p);
	}
}

int pm_client_target(unsigned job, unsigned step, struct pm_target *t, char *why, size_t len)
{
	char cmd[128], buf[16384], nodes[8192], ports[64], state[32], user[128], *p, *e;
	unsigned first, count;
	char **names = NULL;
	int n;

	memset(t, 0, sizeof(*t));
	t->job = job;
	t->step = step;
	snprintf(cmd, sizeof(cmd), "scontrol show step -o %u.%u 2>&1", job, step);
	if (run(cmd, buf, sizeof(buf)) || strncmp(buf, "StepId=", 7)) {
		buf[strcspn(buf, "\n")] = '\0';
		snprintf(why, len, "no running step %u.%u (scontrol: %.200s)", job, step,
			 buf[0] ? buf : "no answer");
		return -1;
	}
	if (field(buf, "State", state, sizeof(state)) == 0 && strcmp(state, "RUNNING")) {
		snprintf(why, len, "step %u.%u is %s, not running", job, step, state);
		return -1;
	}
	/* UserId=UID, or NAME(UID) in other releases: whose credential proves
	 * the root. */
	if (field(buf, "UserId", user, sizeof(user)))
		user[0] = '\0';
	p = strchr(user, '(') ? strchr(user, '(') + 1 : user;
	errno = 0;
	t->uid = (unsigned)strtoul(p, &e, 10);
	if (errno || e == p || (*e && *e != ')')) {
		snprintf(why, len, "cannot read step %u.%u's user (UserId) from scontrol", job, step);
		return -1;
	}
	if (field(buf, "NodeList", nodes, sizeof(nodes)) ||
	    (n = pm_hostlist_expand(nodes, 10000000, &names)) <= 0) {
		snprintf(why, len, "cannot read step %u.%u's node list from scontrol", job, step);
		return -1;
	}
	snprintf(t->root, sizeof(t->root), "%s", names[0]);
	for (t->ncand = 0; t->ncand < n && t->ncand < PM_CLIENT_CANDIDATES; t->ncand++)
		snprintf(t->cand[t->ncand], sizeof(t->cand[0]), "%s", names[t->ncand]);
	t->nnodes = n;
	pm_hostlist_free(names, n);
	/* The plugin's port: the first of Slurm's reserved ones (plugin/node.c). */
	if (field(buf, "ResvPorts", ports, sizeof(ports)) ||
	    pm_ports_parse(ports, &first, &count) || count < 2) {
		snprintf(why, len, "step %u.%u has no reserved ports (ResvPorts): it is not a "
			 "procmgr step, or the site gives procmgr its own port range, which this "
			 "command cannot see yet", job, step);
		return -1;
	}
	t->port = first;
	munge_socket(t->munge_socket, sizeof(t->munge_socket));
	return 0;
}

int pm_client_steps(char *buf, size_t len, char *why, size_t wlen)
{
	char cmd[256], out[65536], *line, *save = NULL;
	const char *job = getenv("SLURM_JOB_ID");
	size_t off = 0;
	int n = 0;

	if (job && strspn(job, "0123456789") == strlen(job) && *job)
		snprintf(cmd, sizeof(cmd), "squeue -h -s -j %s -o '%%i' 2>&1", job);
	else
		snprintf(cmd, sizeof(cmd), "squeue -h -s --me -o '%%i' 2>&1");
	if (run(cmd, out, sizeof(out))) {
		out[strcspn(out, "\n")] = '\0';
		snprintf(why, wlen, "squeue failed: %.200s", out);
		return -1;
	}
	buf[0] = '\0';
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const char *dot = strchr(line, '.');
		if (!dot || dot[1] < '0' || dot[1] > '9')
			continue; /* batch, extern, interactive */
		if (off + strlen(line) + 2 > len)
			break;
		off += (size_t)snprintf(buf + off, len - off, "%s%s", n ? " " : "", line);
		n++;
	}
	return n;
}

static int dial(const struct pm_target *t, unsigned timeout_ms, char *why, size_t len)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res, *a;
	char port[16];
	int fd = -1, rc, e = 0;

	snprintf(port, sizeof(port), "%u", t->port);
	rc = getaddrinfo(t->root, port, &hints, &res);
	if (rc) {
		snprintf(why, len, "cannot resolve node %s: %s", t->root, gai_strerror(rc));
		return -1;
	}
	for (a = res; a; a = a->ai_next) {
		struct pollfd p;
		fd = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		if (connect(fd, a->ai_addr, a->ai_addrlen) && errno != EINPROGRESS) {
			e = errno;
		} else {
			socklen_t l = sizeof(e);
			p = (struct pollfd){ .fd = fd, .events = POLLOUT };
			e = poll(&p, 1, (int)timeout_ms) == 1 &&
					getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &l) == 0 ? e : ETIMEDOUT;
		}
		if (!e) {
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
			break;
		}
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		snprintf(why, len, "cannot reach step %u.%u's procmgrd on %s:%u: %s%s", t->job, t->step,
			 t->root, t->port, strerror(e),
			 e == ECONNREFUSED ? " (is it a procmgr step, and still running?)" : "");
	return fd;
}

static int send_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
		if (k < 0 && errno == EAGAIN) {
			struct pollfd pf = { .fd = fd, .events = POLLOUT };
			if (poll(&pf, 1, 5000) != 1)
				return -1;
			continue;
		}
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* The WELCOME that must come before any answer: the root's credential,
 * of the job's user or root, binding our request; 0, or -1 with why. */
static int check_proof(const struct pm_target *t, const struct pm_request *r,
		       const struct pm_msg *m, char *why, size_t len)
{
	char payload[PM_REQ_MAX], err[256];
	uid_t uid;

	if (m->type != PM_MSG_WELCOME)
		snprintf(err, sizeof(err), "it answered (%s) before proving itself",
			 pm_msg_name(m->type));
	else if (pm_auth_decode_uid(t->munge_socket[0] ? t->munge_socket : NULL, m->text, &uid,
				    payload, sizeof(payload), err, sizeof(err)) == 0 &&
		 pm_clientauth_proof(r, (uid_t)t->uid, uid, payload, err, sizeof(err)) == 0)
		return 0;
	snprintf(why, len, "the process on %s:%u could not prove it is step %u.%u's procmgrd: "
		 "%s (its answer is not shown)", t->root, t->port, t->job, t->step, err);
	return -1;
}

/* One node asked; *next set when another node should be asked instead
 * (this one is unreachable, not the root, or not the step's procmgrd). */
static int ask_one(const struct pm_target *t, enum pm_query_kind kind, const char *args,
		   unsigned timeout_ms, pm_answer_fn fn, void *arg, struct pm_msg *end,
		   char *why, size_t len, bool *next, bool *unproven)
{
	struct pm_request r = { .kind = kind, .job = t->job, .step = t->step, .port = t->port };
	char payload[PM_REQ_MAX], err[256], *cred = NULL;
	uint8_t *buf = NULL, frame[PM_WIRE_FRAME_MAX], rnd[16];
	size_t have = 0, cap = 4 * PM_WIRE_FRAME_MAX;
	unsigned long long deadline = now_ms() + timeout_ms;
	struct pm_msg *m = NULL;
	bool proven = false;
	int fd, n, rc = -1;

	*next = false;
	snprintf(r.args, sizeof(r.args), "%s", args && *args ? args : "-");
	snprintf(r.host, sizeof(r.host), "%s", t->root);
	/* A fresh nonce per request: the root's proof must answer this one. */
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		snprintf(why, len, "cannot make a nonce: %s", strerror(errno));
		return -1;
	}
	pm_hs_nonce_hex(rnd, r.nonce);
	if (pm_request_format(&r, payload, sizeof(payload))) {
		snprintf(why, len, "arguments too long or not allowed: '%.64s'", r.args);
		return -1;
	}
	if (pm_auth_encode(t->munge_socket[0] ? t->munge_socket : NULL, payload, &cred, err,
			   sizeof(err))) {
		snprintf(why, len, "cannot sign the request with munge: %s", err);
		return -1;
	}
	fd = dial(t, timeout_ms, why, len);
	*next = fd < 0;
	m = malloc(sizeof(*m));
	buf = malloc(cap);
	if (fd < 0 || !m || !buf)
		goto out;
	pm_msg_init(m, PM_MSG_CLIENT);
	pm_msg_set_text(m, cred);
	n = pm_msg_encode(m, frame, sizeof(frame));
	if (n < 0 || send_all(fd, frame, (size_t)n)) {
		snprintf(why, len, "cannot send the request to %s:%u: %s", t->root, t->port,
			 strerror(errno));
		goto out;
	}
	for (;;) {
		const char *derr = NULL;
		struct pollfd p = { .fd = fd, .events = POLLIN };
		unsigned long long now = now_ms();
		ssize_t k;

		while ((n = pm_msg_decode(buf, have, m, &derr)) > 0) {
			memmove(buf, buf + n, have - (size_t)n);
			have -= (size_t)n;
			if (m->type == PM_MSG_PING)
				continue;
			/* A refusal needs no proof: it shows nothing of the step. */
			if (m->type == PM_MSG_REFUSED) {
				snprintf(why, len, "%s", m->text);
				*next = strstr(m->text, "is not the step's root") != NULL;
				goto out;
			}
			if (!proven) {
				if (check_proof(t, &r, m, why, len)) {
					*next = *unproven = true;
					goto out;
				}
				proven = true;
				continue;
			}
			if (m->type == PM_MSG_ANSWER_END) {
				*end = *m;
				rc = 0;
				goto out;
			}
			if (m->type == PM_MSG_ANSWER && fn(arg, m)) {
				rc = 0;
				pm_msg_init(end, PM_MSG_ANSWER_END);
				goto out;
			}
		}
		if (n < 0) {
			snprintf(why, len, "bad answer from %s:%u: %s", t->root, t->port, derr);
			goto out;
		}
		if (now >= deadline || poll(&p, 1, (int)(deadline - now)) != 1) {
			snprintf(why, len, "no complete answer from step %u.%u within %.1f s",
				 t->job, t->step, timeout_ms / 1000.0);
			goto out;
		}
		if (have == cap) {
			snprintf(why, len, "answer frame too long");
			goto out;
		}
		k = recv(fd, buf + have, cap - have, 0);
		if (k < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (k <= 0) {
			snprintf(why, len, "step %u.%u's procmgrd closed the connection before the "
				 "end of its answer (has the step ended?)", t->job, t->step);
			rc = k == 0 ? 1 : -1;
			goto out;
		}
		have += (size_t)k;
	}
out:
	if (fd >= 0)
		close(fd);
	free(cred);
	free(buf);
	free(m);
	return rc;
}

int pm_client_ask(const struct pm_target *t, enum pm_query_kind kind, const char *args,
		  unsigned timeout_ms, pm_answer_fn fn, void *arg, struct pm_msg *end,
		  char *why, size_t len)
{
	struct pm_target one = *t;
	char first[512] = "", impostor[512] = "";
	bool next = false, unproven = false;
	int i, rc = -1;

	unsigned long long deadline = now_ms() + timeout_ms;
	unsigned wait = 50;

	for (i = 0; i < (t->ncand ? t->ncand : 1); i++) {
		if (t->ncand)
			snprintf(one.root, sizeof(one.root), "%s", t->cand[i]);
		unproven = false;
		rc = ask_one(&one, kind, args, timeout_ms, fn, arg, end, why, len, &next, &unproven);
		/* Busy (too many connections or requests there at the moment,
		 * maybe another user's flood): asked again, within the bound. */
		while (rc < 0 && !strncmp(why, "busy:", 5)) {
			char busy[512];
			snprintf(busy, sizeof(busy), "%s", why + 5 + strspn(why + 5, " "));
			/* The last try needs time to be answered: 1 s at least. */
			if (now_ms() + wait + 1000 >= deadline) {
				snprintf(why, len, "refused: busy (step %u.%u's procmgrd on %s: %s)",
					 t->job, t->step, one.root, busy);
				return rc;
			}
			poll(NULL, 0, (int)wait);
			wait = wait * 2 > 1000 ? 1000 : wait * 2;
			rc = ask_one(&one, kind, args, (unsigned)(deadline - now_ms()), fn, arg, end,
				     why, len, &next, &unproven);
		}
		if (!i)
			snprintf(first, sizeof(first), "%s", why);
		/* Whoever holds a port of the step without proving itself (the
		 * root moved away from it) is said, and the real root is
		 * looked for on the next nodes. */
		if (unproven && !impostor[0])
			snprintf(impostor, sizeof(impostor), "%s", why);
		if (rc >= 0 || !next)
			break;
	}
	if (rc < 0 && next)
		/* Nobody answered as the root: what node 0 said is the news,
		 * unless a node's port held something else. */
		snprintf(why, len, "%s", impostor[0] ? impostor : first);
	else if (impostor[0])
		fprintf(stderr, "procmgr: warning: %s\n", impostor);
	return rc;
}

int pm_client_resolve(const char *cmd, const char *id, struct pm_target *t)
{
	char why[512];
	unsigned job, step;
	int has_step;

	if (pm_client_parse_id(id, &job, &step, &has_step, why, sizeof(why))) {
		fprintf(stderr, "procmgr %s: %s\n", cmd, why);
		return 2;
	}
	if (pm_client_target(job, step, t, why, sizeof(why))) {
		fprintf(stderr, "procmgr %s: %s\n", cmd, why);
		return 1;
	}
	return 0;
}

static int ignore(void *arg, const struct pm_msg *m)
{
	(void)arg;
	(void)m;
	return 0;
}

/* A trial's name, as the sweep's file allows it (sweep_file.c). */
static int trial_check(const char *v, char *why, size_t len)
{
	return pm_sweep_name_check(v, strlen(v), why, len);
}

int pm_client_control(const char *cmd, enum pm_query_kind kind, int argc, char **argv,
		      const char *usage)
{
	const char *id = NULL, *trial = NULL;
	const struct pm_cli_opt opts[] = { { "--trial", NULL, NULL, &trial, trial_check },
					   { NULL } };
	struct pm_target t;
	struct pm_msg end;
	char why[1024], args[96] = "-";
	int rc;

	rc = pm_cli_args(cmd, argc, argv, opts, &id, true, usage);
	if (rc)
		return rc == 1 ? 0 : rc;
	if (trial)
		snprintf(args, sizeof(args), "trial=%s", trial);
	rc = pm_client_resolve(cmd, id, &t);
	if (rc)
		return rc;
	if (pm_client_ask(&t, kind, args, 10000, ignore, NULL, &end, why, sizeof(why))) {
		fprintf(stderr, "procmgr %s: %s\n", cmd, why);
		return 1;
	}
	fprintf(end.status ? stderr : stdout, "%s\n", end.text);
	return end.status ? 1 : 0;
}
