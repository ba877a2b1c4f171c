#include "rank_machine.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/text.h"

typedef void action(struct pm_rank_m *m, const struct pm_rank_ev *ev);

static void say(struct pm_rank_m *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct pm_rank_m *m, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	m->ops->say(m->ctx, line);
}

static void send(struct pm_rank_m *m, enum pm_msg_type t, int status, unsigned flags,
		 const char *text)
{
	m->ops->send(m->ctx, t, m->gen, status, flags, text);
}

/* ---- the effects the actions share ---- */

/* SIGCONT too: a stopped command (SIGSTOP, a debugger) must see the TERM. */
static void stop_child(struct pm_rank_m *m, enum pm_rank_state next)
{
	m->state = next;
	m->ops->kill(m->ctx, -m->child, SIGTERM);
	m->ops->kill(m->ctx, -m->child, SIGCONT);
	m->ops->timer(m->ctx, PM_RT_GRACE, m->cfg.grace_ms);
}

/* Its stack first, for procmgrd to send up; then the stop. */
static void capture_then_stop(struct pm_rank_m *m)
{
	if (m->cfg.heartbeat && m->ops->capture(m->ctx, m->child) == 0)
		m->state = PM_RS_CAPTURING;
	else
		stop_child(m, PM_RS_STOPPING);
}

static void finish(struct pm_rank_m *m, int code)
{
	m->exit_code = code;
	switch (m->state) {
	case PM_RS_RUNNING:
	case PM_RS_CAPTURING:
		stop_child(m, PM_RS_EXITING);
		break;
	case PM_RS_STOPPING: /* already told to stop: no new TERM, same grace */
		m->state = PM_RS_EXITING;
		break;
	case PM_RS_IDLE:
		m->state = PM_RS_DONE;
		m->ops->done(m->ctx);
		break;
	default:
		break;
	}
}

/* ---- actions ---- */

static void nop(struct pm_rank_m *m, const struct pm_rank_ev *ev)
{
	(void)m;
	(void)ev;
}

static void start(struct pm_rank_m *m, const struct pm_rank_ev *ev)
{
	bool noexec = false;
	pid_t pid;

	/* A capture of the last generation's command, which ended during it,
	 * must not stop this one. */
	m->ops->capture_stop(m->ctx);
	if (ev->rank >= 0) {
		/* With spares the node's slot says who runs here now. */
		m->grank = ev->rank;
		m->group = ev->group;
		snprintf(m->master, sizeof(m->master), "%.255s", ev->master ? ev->master : "");
	}
	m->gen = ev->gen;
	m->hung = false;
	m->beat = false;
	m->noexec = false;
	m->beat_wall_ms = m->ops->wall_ms(m->ctx);
	/* Judged after its first heartbeat, or after hang_first_ms without. */
	m->ops->timer(m->ctx, PM_RT_HANG, m->cfg.heartbeat ? m->cfg.hang_first_ms : 0);
	pid = m->ops->spawn(m->ctx, m, &noexec);
	if (pid <= 0) {
		m->ops->timer(m->ctx, PM_RT_HANG, 0);
		send(m, PM_MSG_RANK_EXIT, 127 << 8, 0, NULL);
		return;
	}
	m->child = pid;
	m->noexec = noexec;
	m->state = PM_RS_RUNNING;
	send(m, PM_MSG_RANK_RUN, pid, 0, NULL);
}

/* A STOP for another generation, or with nothing running: said done. */
static void stopped_already(struct pm_rank_m *m, const struct pm_rank_ev *ev)
{
	(void)ev;
	send(m, PM_MSG_RANK_STOPPED, m->last_status, 0, NULL);
}

static void stop(struct pm_rank_m *m, const struct pm_rank_ev *ev)
{
	if (ev->gen != m->gen)
		stopped_already(m, ev);
	else
		stop_child(m, PM_RS_STOPPING);
}

/* Every rank's stack is taken at a hang, not only the hung one's. */
static void stop_hung(struct pm_rank_m *m, const struct pm_rank_ev *ev)
{
	if (ev->gen != m->gen)
		stopped_already(m, ev);
	else
		capture_then_stop(m);
}

/* Stopping already, or a capture that ends in the stop anyway. */
static void stop_pending(struct pm_rank_m *m, const struct pm_rank_ev *ev)
{
	if (ev->gen != m->gen)
		stopped_already(m, ev);
}

static void do_finish(struct pm_rank_m *m, const struct pm_rank_ev *ev)
{
	finish(m, ev->status);
}

static void ended(struct pm_rank_m *m, const struct pm_rank_ev *ev)
{
	enum pm_rank_state was = m->state;
	char text[PM_WIRE_TEXT_MAX + 1];

	m->child = 0;
	m->last_status = ev->status;
	m->ops->timer(m->ctx, PM_RT_GRACE, 0);
	m->ops->timer(m->ctx, PM_RT_HANG, 0);
	/* Its tracer would find nobody; our SIGCHLD path kills it anyway. */
	m->ops->capture_stop(m->ctx);
	if (was == PM_RS_EXITING) {
		m->state = PM_RS_DONE;
		m->ops->done(m->ctx);
		return;
	}
	m->state = PM_RS_IDLE;
	if (m->hung) {
		snprintf(text, sizeof(text), "%llu", (unsigned long long)m->beat_wall_ms);
		send(m, PM_MSG_RANK_EXIT, ev->status, PM_FLAG_HUNG, text);
	} else if (was == PM_RS_STOPPING) {
		send(m, PM_MSG_RANK_STOPPED, ev->status, 0, NULL);
	} else if (m->noexec || ev->status == 0) {
		send(m, PM_MSG_RANK_EXIT, ev->status, m->noexec ? PM_FLAG_EXEC : 0, NULL);
	} else {
		m->ops->failure(m->ctx, text, sizeof(text));
		send(m, PM_MSG_RANK_EXIT, ev->status, 0, text[0] ? text : NULL);
	}
}

/* scancel, or Slurm ending the step: passed on, said (the root ends the
 * step as cancelled, not as a failure), and we go. */
static void terminate(struct pm_rank_m *m, const struct pm_rank_ev *ev)
{
	if (m->state != PM_RS_EXITING && m->state != PM_RS_DONE)
		send(m, PM_MSG_RANK_EXIT, ev->status, PM_FLAG_CANCEL, NULL);
	if (m->child > 0)
		m->ops->kill(m->ctx, -m->child, ev->status);
	finish(m, 128 + ev->status);
}

/* srun --signal=USR1@60 and the like: for the command. */
static void forward(struct pm_rank_m *m, const struct pm_rank_ev *ev)
{
	m->ops->kill(m->ctx, -m->child, ev->status);
}

static void grace(struct pm_rank_m *m, const struct pm_rank_ev *ev)
{
	(void)ev;
	m->ops->kill(m->ctx, -m->child, SIGKILL);
}

static void hang(struct pm_rank_m *m, const struct pm_rank_ev *ev)
{
	char secs[32];
	(void)ev;

	if (!m->beat && !m->cfg.hang_first_ms)
		return;
	m->hung = true;
	if (m->beat) {
		pm_fmt_seconds(m->cfg.hang_ms, secs, sizeof(secs));
		say(m, "procmgr: rank %d on %s hung: no heartbeat for %s s", m->grank,
		    m->cfg.node, secs);
	} else {
		pm_fmt_seconds(m->cfg.hang_first_ms, secs, sizeof(secs));
		say(m, "procmgr: rank %d on %s hung: no first heartbeat within %s s of its start",
		    m->grank, m->cfg.node, secs);
	}
	if (m->state == PM_RS_RUNNING)
		capture_then_stop(m);
}

static void beat(struct pm_rank_m *m, const struct pm_rank_ev *ev)
{
	(void)ev;
	if (!m->beat) /* for the root's "every rank beats" */
		send(m, PM_MSG_RANK_RUN, m->child, PM_FLAG_BEAT, NULL);
	m->beat = true;
	m->beat_wall_ms = m->ops->wall_ms(m->ctx);
	m->ops->timer(m->ctx, PM_RT_HANG, m->cfg.hang_ms);
}

static void captured(struct pm_rank_m *m, const struct pm_rank_ev *ev)
{
	(void)ev;
	stop_child(m, PM_RS_STOPPING);
}

static void link_lost(struct pm_rank_m *m, const struct pm_rank_ev *ev)
{
	say(m, "procmgr: rank %d on %s lost its node's procmgrd%s%s; ending", m->grank,
	    m->cfg.node, ev->why ? ": " : "", ev->why ? ev->why : "");
	finish(m, 1);
}

/* procmgrd and we watch each other: a procmgrd silent for the peer timeout
 * (stopped, or its node's runtime wedged) ends our command and us. */
static void peer_silent(struct pm_rank_m *m, const struct pm_rank_ev *ev)
{
	char secs[32];
	(void)ev;

	pm_fmt_seconds(m->cfg.peer_timeout_ms, secs, sizeof(secs));
	say(m, "procmgr: rank %d on %s: its node's procmgrd stopped answering (no heartbeat "
	    "for %s s); ending", m->grank, m->cfg.node, secs);
	finish(m, 1);
}

/* Once we are ending, what ends us again only changes the exit code. */
static void recode(struct pm_rank_m *m, const struct pm_rank_ev *ev)
{
	m->exit_code = ev->status;
}

static void recode_signal(struct pm_rank_m *m, const struct pm_rank_ev *ev)
{
	if (m->child > 0)
		m->ops->kill(m->ctx, -m->child, ev->status);
	m->exit_code = 128 + ev->status;
}

/* clang-format off */
static action *const actions[PM_RS_NSTATES][PM_RE_NEVENTS] = {
	/*                  START  STOP             STOP_HUNG        FINISH     CHILD_EXIT SIGTERM        SIGNAL   GRACE  HANG  BEAT  CAPTURED  LINK_LOST  PEER_SILENT */
	[PM_RS_IDLE]      = { start, stopped_already, stopped_already, do_finish, nop,   terminate,     nop,     nop,   nop,  nop,  nop,      link_lost, peer_silent },
	[PM_RS_RUNNING]   = { nop,   stop,            stop_hung,       do_finish, ended, terminate,     forward, nop,   hang, beat, nop,      link_lost, peer_silent },
	[PM_RS_CAPTURING] = { nop,   stop_pending,    stop_pending,    do_finish, ended, terminate,     forward, nop,   hang, beat, captured, link_lost, peer_silent },
	[PM_RS_STOPPING]  = { nop,   stop_pending,    stop_pending,    do_finish, ended, terminate,     forward, grace, nop,  nop,  nop,      link_lost, peer_silent },
	[PM_RS_EXITING]   = { nop,   stop_pending,    stop_pending,    recode,    ended, recode_signal, forward, grace, nop,  nop,  nop,      nop,       nop },
	[PM_RS_DONE]      = { nop,   stopped_already, stopped_already, recode,    nop,   recode_signal, nop,     nop,   nop,  nop,  nop,      nop,       nop },
};
/* clang-format on */

void pm_rank_m_init(struct pm_rank_m *m, const struct pm_rank_cfg *cfg,
		    const struct pm_rank_ops *ops, void *ctx, int grank)
{
	memset(m, 0, sizeof(*m));
	m->state = PM_RS_IDLE;
	m->cfg = *cfg;
	m->ops = ops;
	m->ctx = ctx;
	m->grank = grank;
	m->group = -1;
}

void pm_rank_m_event(struct pm_rank_m *m, const struct pm_rank_ev *ev)
{
	if ((unsigned)ev->type >= PM_RE_NEVENTS || (unsigned)m->state >= PM_RS_NSTATES)
		return;
	actions[m->state][ev->type](m, ev);
}

void pm_rank_m_post(struct pm_rank_m *m, enum pm_rank_event type)
{
	struct pm_rank_ev ev = { .type = type, .rank = -1 };

	pm_rank_m_event(m, &ev);
}

bool pm_rank_m_exiting(const struct pm_rank_m *m)
{
	return m->state == PM_RS_EXITING || m->state == PM_RS_DONE;
}

const char *pm_rank_state_name(enum pm_rank_state s)
{
	static const char *const names[] = { "idle", "running", "capturing", "stopping",
					     "exiting", "done" };
	return (unsigned)s < PM_RS_NSTATES ? names[s] : "?";
}

const char *pm_rank_event_name(enum pm_rank_event e)
{
	static const char *const names[] = { "start", "stop", "stop-hung", "finish",
					     "child-exit", "sigterm", "signal", "grace",
					     "hang", "beat", "captured", "link-lost",
					     "peer-silent" };
	return (unsigned)e < PM_RE_NEVENTS ? names[e] : "?";
}
