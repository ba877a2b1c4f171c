/* The procmgr command's requests at procmgrd (see query.h): the root's
 * door for the CLI (who may ask), the queries' way down the tree and the
 * answers' way up. */
#include "step.h"
#include "query.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clientauth.h"
#include "common/status.h"
#include "common/tree.h"
#include "io/auth.h"

struct pm_queries {
	struct pm_q *list;
	uint32_t next_id;
	const char *rundir, *events;
	struct pm_conn **clients; /* the CLI connections, freed with the step */
	int nclients, clients_cap;
	/* events --follow: each gets the log's new lines as they are written,
	 * and the step's end closes it */
	struct pm_follower {
		struct pm_conn *c;
		unsigned long long off;
	} *followers;
	int nfollowers, followers_cap;
	struct pm_nonces *nonces; /* the requests' nonces, against a replay */
};

const char *pm_query_rundir(const struct pm_step *s)
{
	return s->queries->rundir;
}

int pm_query_init(struct pm_step *s, const char *rundir, const char *events)
{
	s->queries = calloc(1, sizeof(*s->queries));
	if (!s->queries)
		return -1;
	s->queries->rundir = rundir;
	s->queries->events = events;
	s->queries->next_id = 1;
	return 0;
}

static void q_free(struct pm_step *s, struct pm_q *q)
{
	struct pm_q **p;

	for (p = &s->queries->list; *p; p = &(*p)->next)
		if (*p == q) {
			*p = q->next;
			break;
		}
	if (q->stacks && PM_HOOK(s, stacks_cancel))
		PM_HOOK(s, stacks_cancel)(q->stacks);
	free(q->wait);
	free(q);
}

void pm_query_free(struct pm_step *s)
{
	int i;

	if (!s->queries)
		return;
	while (s->queries->list)
		q_free(s, s->queries->list);
	for (i = 0; i < s->queries->nclients; i++)
		pm_conn_free(s->queries->clients[i]);
	free(s->queries->clients);
	free(s->queries->followers);
	free(s->queries->nonces);
	free(s->queries);
	s->queries = NULL;
}

/* Where this query's answers go: the CLI on the root, else the parent. */
static void dest(struct pm_step *s, struct pm_q *q, const struct pm_msg *m)
{
	if (q->client)
		pm_step_send(s, q->client, m);
	else if (!q->client && s->node != 0 && s->parent && s->parent_ok)
		pm_step_send(s, s->parent, m);
}

/* Whole lines per frame, so that every frame can be read alone. */
void pm_q_text(struct pm_step *s, struct pm_q *q, int rank, const char *text)
{
	struct pm_msg m;
	size_t len = strlen(text);

	while (len) {
		size_t n = len;
		if (n > PM_WIRE_TEXT_MAX) {
			n = PM_WIRE_TEXT_MAX;
			while (n > 0 && text[n - 1] != '\n')
				n--;
			if (!n)
				n = PM_WIRE_TEXT_MAX;
		}
		pm_msg_init(&m, PM_MSG_ANSWER);
		m.gen = q->id;
		m.node = s->node;
		m.rank = rank;
		memcpy(m.text, text, n);
		m.text[n] = '\0';
		m.text_len = (uint16_t)n;
		dest(s, q, &m);
		text += n;
		len -= n;
	}
}

/* The subtree's end, once its own part and every child's end are in. */
static void check_done(struct pm_step *s, struct pm_q *q)
{
	struct pm_msg m;

	if (!q->local_done || q->nwait)
		return;
	pm_msg_init(&m, PM_MSG_ANSWER_END);
	m.gen = q->id;
	m.node = s->node;
	m.count = (uint32_t)q->answered;
	dest(s, q, &m);
	q_free(s, q);
}

void pm_q_local_done(struct pm_step *s, struct pm_q *q)
{
	q->local_done = true;
	q->answered++;
	check_done(s, q);
}

/* Nodes that will not answer: their lines say so, for every node below. */
static void missing(struct pm_step *s, struct pm_q *q, int node, const char *how)
{
	char line[256];
	int first, n, i;

	if (q->kind == PM_Q_STATUS) {
		struct pm_st_node st = { .node = node, .ranks = 0 };
		snprintf(st.name, sizeof(st.name), "%s", pm_gen_node_name(&s->gen, node));
		snprintf(st.phase, sizeof(st.phase), "%s", how);
		snprintf(st.health, sizeof(st.health), "unknown");
		if (pm_st_node_format(&st, line, sizeof(line)) == 0) {
			strcat(line, "\n");
			pm_q_text(s, q, -1, line);
		}
	} else {
		snprintf(line, sizeof(line), "node %s: %s (no answer)\n",
			 pm_gen_node_name(&s->gen, node), how);
		pm_q_text(s, q, -1, line);
	}
	n = pm_tree_children(node, s->fanout, s->nnodes, &first);
	for (i = 0; i < n; i++)
		missing(s, q, first + i, how);
}

/* A query at this node: down to every child, then this node's part. */
static void start(struct pm_step *s, struct pm_q *q)
{
	struct pm_msg m;
	int i;

	q->next = s->queries->list;
	s->queries->list = q;
	pm_msg_init(&m, PM_MSG_QUERY);
	m.gen = q->id;
	m.status = (int32_t)q->kind;
	pm_msg_set_text(&m, q->args);
	/* The nodes below now: the tree's children and, with spares, the
	 * nodes that came to us when their parent was lost. */
	for (i = 0; i < q->nkids; i++) {
		struct pm_conn **c = pm_step_child(s, i);
		if (c && *c) {
			pm_step_send(s, *c, &m);
			q->wait[i] = true;
			q->nwait++;
		} else if (!pm_gen_excluded(&s->gen, s->gen.kids[i].node)) {
			missing(s, q, s->gen.kids[i].node, "absent");
		}
	}
	/* This node's part, by kind (query_stacks.c, query_status.c). */
	if (q->kind == PM_Q_STACKS && PM_HOOK(s, query_stacks) &&
	    PM_HOOK(s, query_stacks)(s, q) == 0)
		return; /* pm_q_local_done follows */
	if (q->kind == PM_Q_STATUS && PM_HOOK(s, query_status))
		PM_HOOK(s, query_status)(s, q);
	pm_q_local_done(s, q);
}

static struct pm_q *q_new(struct pm_step *s, uint32_t id, enum pm_query_kind kind,
			  const char *args)
{
	struct pm_q *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	q->nkids = s->gen.nkids;
	q->wait = calloc((size_t)(q->nkids ? q->nkids : 1), sizeof(bool));
	if (!q->wait) {
		free(q);
		return NULL;
	}
	q->id = id;
	q->kind = kind;
	snprintf(q->args, sizeof(q->args), "%s", args);
	return q;
}

static struct pm_q *q_find(struct pm_step *s, uint32_t id)
{
	struct pm_q *q;

	for (q = s->queries->list; q; q = q->next)
		if (q->id == id)
			return q;
	return NULL;
}

bool pm_query_parent_msg(struct pm_step *s, const struct pm_msg *m)
{
	struct pm_q *q;

	if (m->type != PM_MSG_QUERY)
		return false;
	if (m->status != PM_Q_STATUS && m->status != PM_Q_STACKS) {
		pm_log(s, "ignoring a query of unknown kind %d from the parent", m->status);
		return true;
	}
	q = q_new(s, m->gen, (enum pm_query_kind)m->status, m->text_len ? m->text : "-");
	if (!q) {
		pm_log(s, "out of memory for a query");
		return true;
	}
	start(s, q);
	return true;
}

bool pm_query_child_msg(struct pm_step *s, int node, const struct pm_msg *m)
{
	struct pm_q *q;
	int idx = pm_gen_kid_index(&s->gen, node);

	if (m->type != PM_MSG_ANSWER && m->type != PM_MSG_ANSWER_END)
		return false;
	if (m->gen == 0 && m->type == PM_MSG_ANSWER) {
		if (PM_HOOK(s, hang_answer))
			PM_HOOK(s, hang_answer)(s, m); /* a hang's stack (query_hang.c) */
		return true;
	}
	q = q_find(s, m->gen);
	if (!q || idx < 0 || idx >= q->nkids || !q->wait[idx])
		return true; /* a query that ended (its child was late) */
	if (m->type == PM_MSG_ANSWER) {
		dest(s, q, m);
		return true;
	}
	q->wait[idx] = false;
	q->nwait--;
	q->answered += (int)m->count;
	check_done(s, q);
	return true;
}

void pm_query_child_lost(struct pm_step *s, int node)
{
	struct pm_q *q, *next;
	int idx = pm_gen_kid_index(&s->gen, node);

	if (!s->queries || idx < 0)
		return;
	for (q = s->queries->list; q; q = next) {
		next = q->next;
		if (idx >= q->nkids || !q->wait[idx])
			continue;
		q->wait[idx] = false;
		q->nwait--;
		missing(s, q, node, "lost");
		check_done(s, q);
	}
}

/* ---- the CLI's connection, on the root ---- */

static void client_closed(struct pm_conn *c, const char *why)
{
	struct pm_step *s = c->w.arg;
	struct pm_queries *qs = s->queries;
	struct pm_q *q;
	int i;
	(void)why;

	for (q = qs->list; q; q = q->next)
		if (q->client == c)
			q->client = NULL; /* its answers have nowhere to go */
	for (i = 0; i < qs->nclients; i++)
		if (qs->clients[i] == c) {
			qs->clients[i] = qs->clients[--qs->nclients];
			break;
		}
	for (i = 0; i < qs->nfollowers; i++)
		if (qs->followers[i].c == c) {
			qs->followers[i] = qs->followers[--qs->nfollowers];
			break;
		}
	pm_conn_free(c);
}

static void client_msg(struct pm_conn *c, const struct pm_msg *m)
{
	(void)m;
	pm_conn_drop(c, "one request per connection");
}

static void end_to(struct pm_step *s, struct pm_conn *c, int status, const char *text)
{
	struct pm_msg m;

	pm_msg_init(&m, PM_MSG_ANSWER_END);
	m.status = status;
	m.node = s->node;
	if (text)
		pm_msg_set_text(&m, text);
	pm_step_send(s, c, &m);
}

static void user_name(uid_t uid, char *buf, size_t len)
{
	struct passwd *pw = getpwuid(uid);

	if (pw)
		snprintf(buf, len, "%s", pw->pw_name);
	else
		snprintf(buf, len, "uid %u", (unsigned)uid);
}

/* The root's event log from a byte offset to its end, in whole lines;
 * returns the offset after them, or -1 with why. */
static long long send_log(struct pm_step *s, struct pm_conn *c, unsigned long long off,
			  char *why, size_t len)
{
	char buf[PM_WIRE_TEXT_MAX + 1];
	struct pm_msg m;
	ssize_t n;
	int fd = open(s->queries->events, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0) {
		snprintf(why, len, "cannot read the event log %.300s: %s", s->queries->events,
			 strerror(errno));
		return -1;
	}
	while ((n = pread(fd, buf, PM_WIRE_TEXT_MAX, (off_t)off)) > 0) {
		ssize_t k = n;
		while (k > 0 && buf[k - 1] != '\n')
			k--;
		if (!k)
			break; /* a line still being written, or one too long */
		buf[k] = '\0';
		pm_msg_init(&m, PM_MSG_ANSWER);
		m.node = s->node;
		pm_msg_set_text(&m, buf);
		pm_step_send(s, c, &m);
		off += (unsigned long long)k;
	}
	close(fd);
	return (long long)off;
}

/* args: OFFSET, or follow:OFFSET (no end: new lines follow as they are
 * written, until the step's end closes the connection). The end's count
 * is the offset to ask from next time. */
static void events(struct pm_step *s, struct pm_conn *c, const char *args)
{
	struct pm_queries *qs = s->queries;
	bool follow = !strncmp(args, "follow:", 7);
	const char *num = follow ? args + 7 : args;
	char why[512], *end;
	unsigned long long off = strtoull(num, &end, 10);
	long long next;
	struct pm_msg m;

	if (!qs->events || *end || end == num) {
		end_to(s, c, 1, qs->events ? "procmgr: bad offset" :
					     "procmgr: this step keeps no event log");
		return;
	}
	next = send_log(s, c, off, why, sizeof(why));
	if (next < 0) {
		end_to(s, c, 1, why);
		return;
	}
	if (follow) {
		if (qs->nfollowers == qs->followers_cap) {
			int n = qs->followers_cap ? qs->followers_cap * 2 : 4;
			struct pm_follower *p = realloc(qs->followers, (size_t)n * sizeof(*p));
			if (!p) {
				end_to(s, c, 1, "procmgr: out of memory");
				return;
			}
			qs->followers = p;
			qs->followers_cap = n;
		}
		qs->followers[qs->nfollowers++] = (struct pm_follower){ c, (unsigned long long)next };
		return;
	}
	pm_msg_init(&m, PM_MSG_ANSWER_END);
	m.node = s->node;
	m.count = (uint32_t)next;
	pm_step_send(s, c, &m);
}

void pm_query_event_written(struct pm_step *s, const char *name)
{
	struct pm_queries *qs = s->queries;
	char why[512];
	int i;
	(void)name;

	for (i = 0; qs && i < qs->nfollowers; i++) {
		long long next = send_log(s, qs->followers[i].c, qs->followers[i].off, why,
					  sizeof(why));
		if (next >= 0)
			qs->followers[i].off = (unsigned long long)next;
	}
}

/* Who may ask: the job's user and root, proven by a munge credential
 * that names this very request, sent to this very node and port, once. */
static int admit(struct pm_step *s, const struct pm_msg *m, struct pm_request *r, uid_t *uid,
		 char *err, size_t len)
{
	char payload[PM_REQ_MAX], owner[64], asker[64];

	err[0] = '\0';
	if (pm_auth_decode_uid(s->munge_socket, m->text, uid, payload, sizeof(payload), err,
			       len)) {
		if (!err[0])
			snprintf(err, len, "credential refused");
		return -1;
	}
	if (*uid != s->uid && *uid != 0) {
		user_name(s->uid, owner, sizeof(owner));
		user_name(*uid, asker, sizeof(asker));
		if (s->uid == 0)
			snprintf(err, len, "job %u belongs to root; only root may query it "
				 "(you are %s)", s->job, asker);
		else
			snprintf(err, len, "job %u belongs to %s; only %s and root may query "
				 "it (you are %s)", s->job, owner, owner, asker);
		return -1;
	}
	if (pm_request_parse(payload, r)) {
		if (pm_request_is_v1(payload))
			snprintf(err, len, "the procmgr command is older than this step's procmgrd "
				 "(its request names no node and no nonce): use the procmgr "
				 "installed with the plugin");
		else
			snprintf(err, len, "not a procmgr request ('%.80s')", payload);
		return -1;
	}
	/* A request signed for another node or port (whoever held it relays
	 * it here), or for another step, is not answered. */
	if (pm_clientauth_target(r, s->job, s->stepid, s->names[s->node], s->port, err, len))
		return -1;
	if (!s->queries->nonces && !(s->queries->nonces = calloc(1, sizeof(*s->queries->nonces)))) {
		snprintf(err, len, "out of memory");
		return -1;
	}
	if (pm_nonces_seen(s->queries->nonces, r->nonce, pm_now_ms())) {
		snprintf(err, len, "a replayed request (its nonce %.32s was used already)", r->nonce);
		return -1;
	}
	return 0;
}

/* Before any answer the root proves itself to the command: its own
 * credential (the job's user's) binding the request's target and nonce,
 * so that a process holding another port cannot pass for it. */
static int prove(struct pm_step *s, struct pm_conn *c, const struct pm_request *r, char *err,
		 size_t len)
{
	char payload[PM_REQ_MAX], why[256] = "the request's target or nonce cannot be said";
	char *cred = NULL;
	struct pm_msg m;

	if (pm_request_proof(r, payload, sizeof(payload)) ||
	    pm_auth_encode(s->munge_socket, payload, &cred, why, sizeof(why))) {
		snprintf(err, len, "procmgr: step %u.%u's procmgrd cannot prove itself: %s", s->job,
			 s->stepid, why);
		return -1;
	}
	pm_msg_init(&m, PM_MSG_WELCOME);
	pm_msg_set_text(&m, cred);
	free(cred);
	pm_step_send(s, c, &m);
	return 0;
}

bool pm_query_client(struct pm_step *s, struct pm_conn *c, const struct pm_msg *m)
{
	struct pm_queries *qs = s->queries;
	struct pm_request r;
	char err[512], who[96];
	uid_t uid = (uid_t)-1;
	struct pm_msg out;
	bool may_decode;

	if (m->type != PM_MSG_CLIENT || !qs)
		return false;
	/* Rated before munge is asked: a flood of requests costs little. */
	may_decode = pm_gate_may_decode(s, c);
	pm_gate_remove(s, c);
	if (qs->nclients == qs->clients_cap) {
		int n = qs->clients_cap ? qs->clients_cap * 2 : 8;
		struct pm_conn **p = realloc(qs->clients, (size_t)n * sizeof(*p));
		if (!p) {
			pm_conn_drop(c, "out of memory");
			return true;
		}
		qs->clients = p;
		qs->clients_cap = n;
	}
	qs->clients[qs->nclients++] = c;
	c->on_msg = client_msg;
	c->on_close = client_closed;
	c->id = -2;
	if (!s->gen.root || s->gen.electing) {
		/* With spares the root may have moved: the CLI asks the next. */
		snprintf(err, sizeof(err), "procmgr: node %s is not the step's root",
			 s->names[s->node]);
		goto refuse;
	}
	if (!may_decode) {
		snprintf(err, sizeof(err), "busy: too many requests at the moment; try again");
		pm_gate_refused(s, "a request not decoded: over the rate (told busy)");
		goto refuse;
	}
	if (admit(s, m, &r, &uid, err, sizeof(err))) {
		char tmp[sizeof(err) + 16];
		pm_gate_refused(s, err);
		snprintf(tmp, sizeof(tmp), "procmgr: %s", err);
		snprintf(err, sizeof(err), "%.*s", (int)sizeof(err) - 1, tmp);
		goto refuse;
	}
	if (prove(s, c, &r, err, sizeof(err))) {
		pm_log(s, "%s", err);
		goto refuse;
	}
	user_name(uid, who, sizeof(who));
	snprintf(who + strlen(who), sizeof(who) - strlen(who), " (uid %u)", (unsigned)uid);
	pm_log(s, "%s asks for %s (%s)", who, pm_query_kind_name(r.kind), r.args);
	switch (r.kind) {
	case PM_Q_STATUS:
	case PM_Q_STACKS: {
		struct pm_q *q = q_new(s, qs->next_id++, r.kind, r.args);
		if (!q) {
			end_to(s, c, 1, "procmgr: out of memory");
			return true;
		}
		q->client = c;
		start(s, q);
		return true;
	}
	case PM_Q_EVENTS:
		events(s, c, r.args);
		return true;
	case PM_Q_RESTART:
	case PM_Q_STOP:
		if (!strncmp(r.args, "trial=", 6)) { /* one trial of a sweep */
			int rc = -1;
			snprintf(err, sizeof(err), "procmgr: this step is not a sweep");
			if (PM_HOOK(s, trial_request)) /* sweep_ctl.c */
				rc = PM_HOOK(s, trial_request)(s, r.kind == PM_Q_RESTART, r.args + 6,
							       who, err, sizeof(err));
			end_to(s, c, rc ? 1 : 0, err);
			return true;
		}
		if ((r.kind == PM_Q_RESTART ? pm_gen_request_restart : pm_gen_request_stop)(
			    &s->gen, who, err, sizeof(err))) {
			char tmp[sizeof(err) + 96];
			snprintf(tmp, sizeof(tmp), "procmgr: cannot %s step %u.%u now: %s",
				 pm_query_kind_name(r.kind), s->job, s->stepid, err);
			end_to(s, c, 1, tmp);
		} else {
			snprintf(err, sizeof(err), "procmgr: step %u.%u: %s", s->job, s->stepid,
				 r.kind == PM_Q_RESTART ? "restarting every rank" :
							  "stopping every rank");
			end_to(s, c, 0, err);
		}
		return true;
	default:
		break;
	}
	snprintf(err, sizeof(err), "procmgr: unknown request");
refuse:
	pm_msg_init(&out, PM_MSG_REFUSED);
	pm_msg_set_text(&out, err);
	pm_step_send(s, c, &out);
	pm_conn_drop(c, "request refused");
	return true;
}
