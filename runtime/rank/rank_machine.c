#include "rank_machine.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "common/text.h"
#include "common/warm.h"

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
	if (m->child > 0) { /* python: none before FORKED, which stops it */
		m->ops->kill(m->ctx, -m->child, SIGTERM);
		m->ops->kill(m->ctx, -m->child, SIGCONT);
	}
	m->ops->timer(m->ctx, PM_RT_GRACE, m->cfg.grace_ms);
}

/* Its stack first, for procmgrd to send up; then the stop. */
static void capture_then_stop(struct pm_rank_m *m)
{
	if (m->cfg.heartbeat && m->child > 0 && m->ops->capture(m->ctx, m->child) == 0)
		m->state = PM_RS_CAPTURING;
	else
		stop_child(m, PM_RS_STOPPING);
}

/* A standby is worth nothing once we end: killed, not asked (it waits in
 * its start-up, nothing of it to save). */
static void drop_standby(struct pm_rank_m *m)
{
	if (m->sb > 0)
		m->ops->kill(m->ctx, -m->sb, SIGKILL);
	m->sb = 0;
	m->sb_state = PM_SB_NONE;
}

static void finish(struct pm_rank_m *m, int code)
{
	m->exit_code = code;
	drop_standby(m);
	/* A fork the server did not report yet: with the server gone, none
	 * will be; nothing of ours runs (a forked orphan goes with us:
	 * PDEATHSIG). */
	if (m->child <= 0 && m->state != PM_RS_EXITING && m->state != PM_RS_DONE)
		m->state = PM_RS_IDLE;
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

/* Behind every generation, the next one's process: once the program
 * earned it (said ready once, or procmgr's python server) and none waits.
 * Not before the generation trains again (its first heartbeat, where they
 * are watched): a standby's start-up (import torch) on the same cores
 * slowed the rendezvous and first step it was there to speed up
 * (bench/recovery: 2 s more on the testbed). */
static void next_standby(struct pm_rank_m *m)
{
	pid_t pid;

	if (m->cfg.warm == PM_RW_OFF || !m->warm_ok || m->sb_state != PM_SB_NONE ||
	    m->sb_refused)
		return;
	if (m->cfg.heartbeat && !m->beat && m->state == PM_RS_RUNNING)
		return;
	pid = m->ops->standby(m->ctx, m);
	if (pid <= 0) { /* said why; it would fail the same way again */
		m->cfg.warm = PM_RW_OFF;
		return;
	}
	m->sb = pid;
	m->sb_state = PM_SB_WARMING;
}

static void fmt_status(int status, char *buf, size_t len)
{
	if (WIFSIGNALED(status))
		snprintf(buf, len, "killed by signal %d", WTERMSIG(status));
	else
		snprintf(buf, len, "exit %d", WEXITSTATUS(status));
}

/* The standby, if one is ready, becomes the generation: its pid, or 0
 * (and why not, said, where warm generations were asked for); -1: the
 * fork server forks it, its pid comes with FORKED. */
static pid_t hand_over(struct pm_rank_m *m)
{
	char why[64];
	pid_t pid;

	if (m->cfg.warm == PM_RW_OFF)
		return 0;
	if (m->sb_state == PM_SB_READY && m->cfg.warm == PM_RW_PYTHON) {
		if (m->ops->release(m->ctx, m, true) == 0) {
			m->sb_state = PM_SB_FORKING;
			return -1;
		}
		m->ops->kill(m->ctx, -m->sb, SIGKILL);
		m->sb = 0;
		m->sb_state = PM_SB_NONE;
		say(m, "procmgr: rank %d on %s: generation %u starts cold: its fork server was "
		    "lost at the hand-over", m->grank, m->cfg.node, m->gen);
		return 0;
	}
	if (m->sb_state == PM_SB_READY) {
		pid = m->sb;
		m->sb = 0;
		m->sb_state = PM_SB_NONE;
		if (m->ops->release(m->ctx, m, true) == 0)
			return pid;
		m->ops->kill(m->ctx, -pid, SIGKILL);
		say(m, "procmgr: rank %d on %s: generation %u starts cold: its standby was lost "
		    "at the hand-over", m->grank, m->cfg.node, m->gen);
		return 0;
	}
	if (m->sb_state == PM_SB_WARMING) {
		say(m, "procmgr: rank %d on %s: generation %u starts cold: its standby is not "
		    "ready yet", m->grank, m->cfg.node, m->gen);
	} else if (m->sb_lost >= 0 && m->sb_refused) {
		say(m, "procmgr: rank %d on %s: generation %u starts cold: its fork server refused "
		    "to fork (said above); every generation starts cold", m->grank, m->cfg.node,
		    m->gen);
	} else if (m->sb_lost >= 0) {
		fmt_status(m->sb_lost, why, sizeof(why));
		say(m, "procmgr: rank %d on %s: generation %u starts cold: its standby ended "
		    "before it was ready (%s)", m->grank, m->cfg.node, m->gen, why);
	} else if (!m->warm_ok && m->gen > 0 && !m->said_never) {
		m->said_never = true;
		say(m, "procmgr: rank %d on %s: generation %u starts cold: the program never "
		    "said ready (--procmgr-warm=on: see procmgr.ready())", m->grank, m->cfg.node,
		    m->gen);
	}
	m->sb_lost = -1;
	return 0;
}

/* The generation's command, started from nothing. */
static void run_cold(struct pm_rank_m *m)
{
	bool noexec = false;
	pid_t pid = m->ops->spawn(m->ctx, m, &noexec);

	if (pid <= 0) {
		m->ops->timer(m->ctx, PM_RT_HANG, 0);
		m->state = PM_RS_IDLE;
		send(m, PM_MSG_RANK_EXIT, 127 << 8, 0, NULL);
		return;
	}
	m->child = pid;
	m->noexec = noexec;
	m->state = PM_RS_RUNNING;
	send(m, PM_MSG_RANK_RUN, pid, 0, NULL);
}

static void start(struct pm_rank_m *m, const struct pm_rank_ev *ev)
{
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
	pid = hand_over(m);
	m->warm_start = pid != 0;
	if (pid < 0) { /* running, its pid to come (FORKED) */
		m->child = 0;
		m->state = PM_RS_RUNNING;
		return;
	}
	if (pid > 0) {
		m->child = pid;
		m->state = PM_RS_RUNNING;
		send(m, PM_MSG_RANK_RUN, pid, 0, NULL);
	} else {
		run_cold(m);
	}
	if (m->state == PM_RS_RUNNING)
		next_standby(m);
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
		/* Its last beat, and how long ago it was judged hung: the stack
		 * and the stop since then are part of the recovery the root
		 * measures from the failure. */
		uint64_t now = m->ops->wall_ms(m->ctx);
		snprintf(text, sizeof(text), "%llu %llu", (unsigned long long)m->beat_wall_ms,
			 (unsigned long long)(now > m->hung_wall_ms ? now - m->hung_wall_ms : 0));
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
	if (m->child > 0)
		m->ops->kill(m->ctx, -m->child, ev->status);
}

static void grace(struct pm_rank_m *m, const struct pm_rank_ev *ev)
{
	(void)ev;
	if (m->child > 0)
		m->ops->kill(m->ctx, -m->child, SIGKILL);
}

static void hang(struct pm_rank_m *m, const struct pm_rank_ev *ev)
{
	char secs[32];
	(void)ev;

	if (!m->beat && !m->cfg.hang_first_ms)
		return;
	m->hung = true;
	m->hung_wall_ms = m->ops->wall_ms(m->ctx);
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
	next_standby(m);
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

/* "ready" from the standby: the next START hands it over. From the
 * running command (started cold): it speaks the contract, it goes on at
 * once, and from now on a standby waits behind each generation. */
static void ready(struct pm_rank_m *m, const struct pm_rank_ev *ev)
{
	if (ev->status) {
		if (m->sb_state == PM_SB_WARMING)
			m->sb_state = PM_SB_READY;
		return;
	}
	if (m->child <= 0 || m->ops->release(m->ctx, m, false))
		return;
	m->warm_ok = true;
	if (m->state == PM_RS_RUNNING)
		next_standby(m);
}

/* A standby that ended by itself (not killed by us): the next START says
 * so and starts cold, and a new standby is tried behind it. A fork server
 * that refused (a thread or CUDA before the fork) is not tried again. One
 * that ended while it forked the generation: that generation starts cold
 * now, or, asked to stop meanwhile, it is stopped. */
static void sb_exit(struct pm_rank_m *m, const struct pm_rank_ev *ev)
{
	struct pm_rank_ev end = { .type = PM_RE_CHILD_EXIT, .rank = -1, .status = ev->status };
	bool forking = m->sb_state == PM_SB_FORKING;
	char why[64];

	m->sb = 0;
	m->sb_state = PM_SB_NONE;
	m->sb_lost = ev->status;
	if (m->cfg.warm == PM_RW_PYTHON && WIFEXITED(ev->status) &&
	    WEXITSTATUS(ev->status) == PM_WARM_REFUSED_EXIT)
		m->sb_refused = true;
	if (!forking || m->child > 0)
		return;
	if (m->state != PM_RS_RUNNING) {
		ended(m, &end);
		return;
	}
	m->sb_lost = -1;
	fmt_status(ev->status, why, sizeof(why));
	if (m->sb_refused)
		say(m, "procmgr: rank %d on %s: generation %u starts cold: its fork server refused "
		    "to fork (said above); every generation starts cold", m->grank, m->cfg.node,
		    m->gen);
	else
		say(m, "procmgr: rank %d on %s: generation %u starts cold: its fork server ended "
		    "at the fork (%s)", m->grank, m->cfg.node, m->gen, why);
	m->warm_start = false;
	run_cold(m);
	if (m->state == PM_RS_RUNNING)
		next_standby(m);
}

/* python: the fork server forked the generation, now our child. Asked to
 * stop meanwhile: the stop (its grace timer runs already) reaches it. */
static void forked(struct pm_rank_m *m, const struct pm_rank_ev *ev)
{
	if (m->sb_state != PM_SB_FORKING || m->child > 0 || ev->status <= 1)
		return;
	m->sb_state = PM_SB_READY;
	m->child = ev->status;
	send(m, PM_MSG_RANK_RUN, m->child, 0, NULL);
	if (m->state == PM_RS_STOPPING || m->state == PM_RS_EXITING) {
		m->ops->kill(m->ctx, -m->child, SIGTERM);
		m->ops->kill(m->ctx, -m->child, SIGCONT);
	}
}

/* A spare's supervisor (procmgrd says so, warm on): no command of its
 * own will earn a standby, so it keeps one on the user's word
 * (--procmgr-warm), for the slot it may be given; a program that never
 * says ready leaves it starting, and that slot starts cold. */
static void spare(struct pm_rank_m *m, const struct pm_rank_ev *ev)
{
	(void)ev;
	if (m->cfg.warm == PM_RW_OFF || m->child)
		return;
	m->warm_ok = true;
	next_standby(m);
}

/* clang-format off */
static action *const actions[PM_RS_NSTATES][PM_RE_NEVENTS] = {
	/*                  START  STOP             STOP_HUNG        FINISH     CHILD_EXIT SIGTERM        SIGNAL   GRACE  HANG  BEAT  CAPTURED  LINK_LOST  PEER_SILENT  READY  SB_EXIT  SPARE  FORKED */
	[PM_RS_IDLE]      = { start, stopped_already, stopped_already, do_finish, nop,   terminate,     nop,     nop,   nop,  nop,  nop,      link_lost, peer_silent, ready, sb_exit, spare, nop    },
	[PM_RS_RUNNING]   = { nop,   stop,            stop_hung,       do_finish, ended, terminate,     forward, nop,   hang, beat, nop,      link_lost, peer_silent, ready, sb_exit, nop,   forked },
	[PM_RS_CAPTURING] = { nop,   stop_pending,    stop_pending,    do_finish, ended, terminate,     forward, nop,   hang, beat, captured, link_lost, peer_silent, ready, sb_exit, nop,   forked },
	[PM_RS_STOPPING]  = { nop,   stop_pending,    stop_pending,    do_finish, ended, terminate,     forward, grace, nop,  nop,  nop,      link_lost, peer_silent, ready, sb_exit, nop,   forked },
	[PM_RS_EXITING]   = { nop,   stop_pending,    stop_pending,    recode,    ended, recode_signal, forward, grace, nop,  nop,  nop,      nop,       nop,         nop,   nop,     nop, forked },
	[PM_RS_DONE]      = { nop,   stopped_already, stopped_already, recode,    nop,   recode_signal, nop,     nop,   nop,  nop,  nop,      nop,       nop,         nop,   nop, nop,   nop    },
};
/* clang-format on */

/* procmgrd shows whether a standby waits and measures what it holds
 * (procmgr status): told each change of the standby's state or pid, once
 * it is ours to tell (not after we ended). */
static void tell_standby(struct pm_rank_m *m)
{
	/* A fork server forking is still the rank's standby, ready. */
	enum pm_rank_sb st = m->sb_state == PM_SB_FORKING ? PM_SB_READY : m->sb_state;

	if (m->cfg.warm == PM_RW_OFF || m->state == PM_RS_DONE ||
	    (m->sb_told == st && m->sb_told_pid == m->sb))
		return;
	m->sb_told = st;
	m->sb_told_pid = m->sb;
	send(m, PM_MSG_RANK_STANDBY, (int)m->sb, (unsigned)st, NULL);
}

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
	m->sb_lost = -1;
	m->warm_ok = cfg->warm == PM_RW_PYTHON;
}

void pm_rank_m_event(struct pm_rank_m *m, const struct pm_rank_ev *ev)
{
	if ((unsigned)ev->type >= PM_RE_NEVENTS || (unsigned)m->state >= PM_RS_NSTATES)
		return;
	actions[m->state][ev->type](m, ev);
	tell_standby(m);
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
					     "peer-silent", "ready", "standby-exit", "spare",
					     "forked" };
	return (unsigned)e < PM_RE_NEVENTS ? names[e] : "?";
}
