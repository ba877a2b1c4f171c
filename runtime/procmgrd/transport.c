/* What the state machine asks, carried out on procmgrd's links, timer,
 * checks and event log (pm_step_ops); the floor every link and feature
 * sends through. What only a higher file can do (the metrics, a hang's
 * stacks, a sweep, the job's end) goes through the step's hooks. */
#include "step.h"

#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "common/text.h"
#include "io/statesrv.h"

void pm_step_send(struct pm_step *s, struct pm_conn *c, const struct pm_msg *m)
{
	/* A link that cannot take a frame is broken: its close says so. */
	if (pm_conn_send(c, m))
		pm_log(s, "cannot send %s: %s", pm_msg_name(m->type), strerror(errno));
}

static void send_up(void *ctx, const struct pm_msg *m)
{
	struct pm_step *s = ctx;

	if (s->parent && s->parent_ok) {
		pm_step_send(s, s->parent, m);
		return;
	}
	if (s->upq_len == s->upq_cap) {
		int cap = s->upq_cap ? s->upq_cap * 2 : 8;
		struct pm_msg *q = realloc(s->upq, (size_t)cap * sizeof(*q));
		if (!q) {
			pm_log(s, "out of memory queueing %s", pm_msg_name(m->type));
			return;
		}
		s->upq = q;
		s->upq_cap = cap;
	}
	s->upq[s->upq_len++] = *m;
}

struct pm_conn **pm_step_child(struct pm_step *s, int idx)
{
	if (idx < 0)
		return NULL;
	if (idx >= s->children_cap) {
		int cap = s->children_cap * 2 > idx ? s->children_cap * 2 : idx + 4;
		struct pm_conn **c = realloc(s->children, (size_t)cap * sizeof(*c));
		if (!c)
			return NULL;
		memset(c + s->children_cap, 0, (size_t)(cap - s->children_cap) * sizeof(*c));
		s->children = c;
		s->children_cap = cap;
	}
	return &s->children[idx];
}

static void send_down(void *ctx, const struct pm_msg *m)
{
	struct pm_step *s = ctx;
	int i;

	for (i = 0; i < s->gen.nkids && i < s->children_cap; i++)
		if (s->children[i])
			pm_step_send(s, s->children[i], m);
}

static void send_child(void *ctx, int node, const struct pm_msg *m)
{
	struct pm_step *s = ctx;
	int idx = pm_gen_kid_index(&s->gen, node);

	if (idx >= 0 && idx < s->children_cap && s->children[idx])
		pm_step_send(s, s->children[idx], m);
}

static void send_rank(void *ctx, int lrank, const struct pm_msg *m)
{
	struct pm_step *s = ctx;

	if (lrank >= 0 && lrank < s->ntasks_local && s->ranks[lrank])
		pm_step_send(s, s->ranks[lrank], m);
}

static void arm_timer(void *ctx, unsigned ms)
{
	struct pm_step *s = ctx;

	if (pm_timer_set(s->delay_w.fd, ms, 0))
		pm_log(s, "cannot arm the restart delay: %s", strerror(errno));
}

static void arm_stop(void *ctx, unsigned ms)
{
	struct pm_step *s = ctx;

	if (pm_timer_set(s->stop_w.fd, ms, 0))
		pm_log(s, "cannot arm the stop deadline: %s", strerror(errno));
}

static int run_checks(void *ctx, char *why, size_t len)
{
	struct pm_step *s = ctx;

	return s->guard ? pm_guard_start(s->guard, s->loop, why, len) : 1;
}

static void event(void *ctx, const char *name, const char *fields)
{
	struct pm_step *s = ctx;
	char text[PATH_MAX + 256];
	int i;

	for (i = 0; s->hooks && i < PM_STEP_LISTENERS && s->hooks->on_event[i]; i++)
		s->hooks->on_event[i](s, name, fields);
	if (pm_event(&s->events, name, fields) == 0) {
		for (i = 0; s->hooks && i < PM_STEP_LISTENERS && s->hooks->on_written[i]; i++)
			s->hooks->on_written[i](s, name);
		return;
	}
	if (s->events.lost != 1)
		return;
	/* Said once, here and on srun's stderr through rank 0's supervisor;
	 * at the step's start that one has not come yet: when it does. */
	s->events_errno = errno;
	s->events_untold = true;
	snprintf(text, sizeof(text), "procmgr: the step's event log cannot be written (%s): "
		 "events from now on are lost (is state_dir full?)", strerror(errno));
	pm_log(s, "%s", text);
	pm_step_events_untold(s);
}

void pm_step_state_event(struct pm_step *s, const char *name, int grank,
			 const struct pm_state_note *n)
{
	char fields[PM_WIRE_TEXT_MAX - 64];
	int len;
	struct pm_msg m;

	len = snprintf(fields, sizeof(fields),
		       "\"rank\":%d,\"node\":\"%s\",\"name\":\"%s\",\"version\":%llu,"
		       "\"bytes\":%llu,\"train_step\":%llu", grank, s->names[s->node], n->name,
		       (unsigned long long)n->version, (unsigned long long)n->size,
		       (unsigned long long)n->step);
	if (n->did == PM_STATE_DID_LOAD && len > 0 && (size_t)len < sizeof(fields))
		snprintf(fields + len, sizeof(fields) - (size_t)len,
			 ",\"age_ms\":%llu,\"lost_steps\":%llu,\"generation\":%u",
			 (unsigned long long)n->age_ms, (unsigned long long)n->lost_steps,
			 s->gen.gen);
	if (n->did == PM_STATE_DID_LOAD && n->replica && (int)n->owner < s->nnodes) {
		len = (int)strlen(fields);
		snprintf(fields + len, sizeof(fields) - (size_t)len, ",\"from_node\":\"%s\"",
			 s->names[n->owner]);
	}
	if (s->gen.root) {
		if (n->did == PM_STATE_DID_LOAD)
			pm_gen_state_restored(&s->gen, n->step, n->lost_steps);
		event(s, name, fields);
		return;
	}
	pm_msg_init(&m, PM_MSG_EVENT);
	{
		char text[PM_WIRE_TEXT_MAX + 1];
		snprintf(text, sizeof(text), "%s %s", name, fields);
		pm_msg_set_text(&m, text);
	}
	send_up(s, &m);
}

void pm_step_event_msg(struct pm_step *s, const struct pm_msg *m)
{
	char name[64];
	const char *sp = strchr(m->text, ' ');

	if (!s->gen.root) {
		send_up(s, m);
		return;
	}
	/* Only names procmgr's nodes send: a child is authenticated, but a
	 * name is a key of the log and the metrics. */
	if (!sp || (size_t)(sp - m->text) >= sizeof(name))
		return;
	memcpy(name, m->text, (size_t)(sp - m->text));
	name[sp - m->text] = '\0';
	if (strcmp(name, "state_saved") && strcmp(name, "state_restored") &&
	    strcmp(name, "state_replicated"))
		return;
	if (!strcmp(name, "state_restored")) {
		const char *st = strstr(sp, "\"train_step\":"), *lo = strstr(sp, "\"lost_steps\":");
		if (st && lo)
			pm_gen_state_restored(&s->gen, strtoull(st + 13, NULL, 10),
					      strtoull(lo + 13, NULL, 10));
	}
	event(s, name, sp + 1);
}

void pm_step_events_untold(struct pm_step *s)
{
	char text[PATH_MAX + 256];
	struct pm_msg m;
	int i;

	if (!s->events_untold)
		return;
	snprintf(text, sizeof(text), "procmgr: the step's event log cannot be written (%s): "
		 "events from now on are lost (is state_dir full?)", strerror(s->events_errno));
	pm_msg_init(&m, PM_MSG_PRINT);
	pm_msg_set_text(&m, text);
	for (i = 0; i < s->ntasks_local; i++)
		if (s->ranks[i] && s->gen.ranks[i].grank == 0) {
			pm_step_send(s, s->ranks[i], &m);
			s->events_untold = false;
		}
}

/* The nodes lost so far, for the job script: one line, replaced whole. */
static void avoid(void *ctx, const char *nodes, const char *why)
{
	struct pm_step *s = ctx;
	char path[PATH_MAX], tmp[PATH_MAX + 16];
	size_t n = strlen(s->events_path), suf = strlen(".events.jsonl");
	FILE *f;
	(void)why;

	if (!s->events_path[0] || n <= suf || n - suf + 8 >= sizeof(path))
		return;
	snprintf(path, sizeof(path), "%.*s.exclude", (int)(n - suf), s->events_path);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "wx");
	if (!f) {
		pm_log(s, "cannot write %s: %m", tmp);
		return;
	}
	fprintf(f, "%s\n", nodes);
	if (fclose(f) || rename(tmp, path)) {
		pm_log(s, "cannot write %s: %m", path);
		unlink(tmp);
	}
}

/* The event log goes on here: the same file name, on this node. */
static void became_root(void *ctx)
{
	struct pm_step *s = ctx;

	if (s->events_path[0] && !s->events.opened &&
	    pm_events_open(&s->events, s->events_path, s->job, s->stepid))
		pm_log(s, "cannot open the event log %s: %m", s->events_path);
}

static void log_line(void *ctx, const char *text)
{
	pm_log(ctx, "%s", text);
}

static int hang_outlier(void *ctx, int *node, struct pm_stack_verdict *v, uint64_t *last_ms)
{
	struct pm_step *s = ctx;

	return s->hooks && s->hooks->hang_outlier ? s->hooks->hang_outlier(s, node, v, last_ms)
						  : -1;
}

static void node_lost(void *ctx, int node)
{
	struct pm_step *s = ctx;

	if (s->hooks && s->hooks->node_lost)
		s->hooks->node_lost(s, node);
}

static void sweep_launch(void *ctx)
{
	struct pm_step *s = ctx;

	if (s->hooks && s->hooks->sweep_launch)
		s->hooks->sweep_launch(ctx);
}

static void sweep_fail(void *ctx, const struct pm_msg *m)
{
	struct pm_step *s = ctx;

	if (s->hooks && s->hooks->sweep_fail)
		s->hooks->sweep_fail(ctx, m);
}

static void lost_at_end(void *ctx, int first, unsigned nlost, bool silent)
{
	struct pm_step *s = ctx;

	if (s->hooks && s->hooks->lost_at_end)
		s->hooks->lost_at_end(s, first, nlost, silent);
}

static int sweep_node_lost(void *ctx, int node, const char *why)
{
	struct pm_step *s = ctx;

	return s->hooks && s->hooks->sweep_node_lost ? s->hooks->sweep_node_lost(ctx, node, why)
						     : 0;
}

static void sweep_takeover(void *ctx)
{
	struct pm_step *s = ctx;

	if (s->hooks && s->hooks->sweep_takeover)
		s->hooks->sweep_takeover(ctx);
}

static uint64_t now_ms(void *ctx)
{
	(void)ctx;
	return pm_now_ms();
}

const struct pm_gen_ops pm_step_ops = {
	.send_up = send_up,
	.send_down = send_down,
	.send_child = send_child,
	.send_rank = send_rank,
	.arm_timer = arm_timer,
	.arm_stop = arm_stop,
	.run_checks = run_checks,
	.event = event,
	.avoid = avoid,
	.became_root = became_root,
	.log = log_line,
	.now_ms = now_ms,
	.hang_outlier = hang_outlier,
	.node_lost = node_lost,
	.lost_at_end = lost_at_end,
	.sweep_launch = sweep_launch,
	.sweep_fail = sweep_fail,
	.sweep_node_lost = sweep_node_lost,
	.sweep_takeover = sweep_takeover,
};


int pm_step_resolve(const char *host, unsigned port, struct sockaddr_storage *ss,
		    socklen_t *len, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res;
	char ports[16];
	int rc;

	snprintf(ports, sizeof(ports), "%u", port);
	rc = getaddrinfo(host, ports, &hints, &res);
	if (rc) {
		snprintf(err, errlen, "cannot resolve node %s: %s", host, gai_strerror(rc));
		return -1;
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}
