/* procmgr-rank: the event loop's watches turned into the machine's events
 * (rank_machine.c): timers, the heartbeat file (and the steps it carries
 * for the slow-node detector), signals, procmgrd's messages and liveness,
 * a sweep's trials. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/contract.h"
#include "common/options.h"
#include "common/policy.h"
#include "common/slowsum.h"
#include "common/text.h"
#include "io/sys.h"
#include "rank_sup.h"

/* ---- events ---- */

void pm_rank_on_timer(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct rank *r = w->arg;
	(void)l;
	(void)ev;
	pm_timer_ack(w->fd);
	pm_rank_m_post(&r->m, w == &r->grace_w ? PM_RE_GRACE : PM_RE_HANG);
}

/* The heartbeat's content, "STEP [COMPUTE_MS]", read as it changes: a
 * new step goes to procmgrd with when we saw it (our clock, not the
 * program's: a stopped or throttled program is seen late). A file that
 * does not hold that (a touch) says nothing more than the beat. */
static void tell_step(struct rank *r)
{
	char buf[64], text[96];
	uint64_t step;
	double compute;
	ssize_t n;
	struct pm_msg m;
	int fd;

	if (!r->c || r->m.child <= 0)
		return;
	if (r->step_gen != r->m.gen) {
		r->step_gen = r->m.gen;
		r->step_said = 0;
	}
	fd = open(r->heartbeat, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	if (pm_beat_parse(buf, &step, &compute) || step + 1 <= r->step_said)
		return;
	r->step_said = step + 1;
	pm_msg_init(&m, PM_MSG_RANK_STEP);
	m.gen = r->m.gen;
	if (pm_rank_step_format(text, sizeof(text), step, (uint64_t)(pm_wall_s() * 1000.0),
				compute))
		return;
	pm_msg_set_text(&m, text);
	pm_conn_send(r->c, &m);
}

void pm_rank_on_inotify(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct rank *r = w->arg;
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	const char *base = strrchr(r->heartbeat, '/') + 1;
	ssize_t n;
	(void)l;
	(void)ev;

	while ((n = read(w->fd, buf, sizeof(buf))) > 0) {
		char *p = buf;
		while (p < buf + n) {
			struct inotify_event *ie = (struct inotify_event *)p;
			if (ie->len && !strcmp(ie->name, base)) {
				/* Local rank 0's steps go to procmgrd always:
				 * the root's goodput counts its node's. */
				if (r->slow || r->lrank == 0)
					tell_step(r);
				/* Without a hang timeout the machine judges no
				 * heartbeat, but a generation's first says it
				 * trains again (the root's recovery figure). */
				if (r->cfg.heartbeat || !r->m.beat)
					pm_rank_m_post(&r->m, PM_RE_BEAT);
			}
			p += sizeof(*ie) + ie->len;
		}
	}
}

void pm_rank_on_signal(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct rank *r = w->arg;
	struct signalfd_siginfo si;
	(void)l;
	(void)ev;

	while (read(w->fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		struct pm_rank_ev e = { .rank = -1, .status = (int)si.ssi_signo };
		if (si.ssi_signo == SIGCHLD) {
			int status;
			pid_t pid;
			while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
				if (pid > 0 && pid == r->m.sb) {
					kill(-pid, SIGKILL);
					pm_rank_ch_close(r, 1);
					/* A fork it made but did not say: ours
					 * now (orphaned to us), not the rank's. */
					if (r->m.sb_state == PM_SB_FORKING && r->m.child <= 0)
						pm_rank_exec_kill_strays(0);
					e.type = PM_RE_SB_EXIT;
					e.status = status;
					pm_rank_m_event(&r->m, &e);
					continue;
				}
				if (pid != r->m.child) {
					if (r->m.sb_state == PM_SB_FORKING && r->m.child <= 0)
						pm_rank_early_add(r, pid, status);
					continue;
				}
				/* What the command left in its group goes with it. */
				kill(-pid, SIGKILL);
				pm_rank_exec_kill_strays(r->m.sb);
				pm_rank_ch_close(r, 0);
				pm_rank_pump_drain(&r->pump_out, true);
				pm_rank_pump_drain(&r->pump, true);
				e.type = PM_RE_CHILD_EXIT;
				e.status = status;
				pm_rank_m_event(&r->m, &e);
			}
			continue;
		}
		e.type = si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT ? PM_RE_SIGTERM
									  : PM_RE_SIGNAL;
		pm_rank_m_event(&r->m, &e);
	}
}

/* procmgr's lines for srun (a restart and why, the step's end): also in
 * the rank's stderr file, which outlives srun. */
static void say(struct rank *r, const char *text)
{
	fprintf(stderr, "%s\n", text);
	fflush(stderr);
	if (r->pump.file_fd >= 0) {
		(void)!write(r->pump.file_fd, text, strlen(text));
		(void)!write(r->pump.file_fd, "\n", 1);
	}
}

/* A sweep's trial for this slot: its files, then a generation of its own
 * (the attempt is the generation number). Its stderr goes to its file,
 * still through the pump, whose tail says why it failed. */
static void trial_start(struct rank *r, const struct pm_msg *m)
{
	struct pm_rank_ev e = { .type = PM_RE_START, .gen = m->gen, .rank = -1, .group = -1 };
	char err[512];

	if (r->m.state != PM_RS_IDLE) {
		/* Never silent: the root would wait for this attempt for ever. */
		snprintf(err, sizeof(err), "procmgr: slot of rank %d is busy (%s)", r->m.grank,
			 pm_rank_state_name(r->m.state));
		pm_rank_send(r, PM_MSG_RANK_EXIT, m->gen, 126 << 8, 0, err);
		return;
	}
	pm_rank_pump_flush(&r->pump, true);
	r->pump.out_fd = STDERR_FILENO;
	if (!r->sweep_out || pm_rank_trial_set(&r->trial, m->rank, (int)m->count, m->text,
					       r->sweep_out, err, sizeof(err))) {
		if (!r->sweep_out)
			snprintf(err, sizeof(err), "a trial outside a sweep step");
		pm_rank_send(r, PM_MSG_RANK_EXIT, m->gen, 126 << 8, 0, err);
		return;
	}
	if (r->pump.err_fd >= 0) {
		r->pump.out_fd = r->trial.err_fd;
		r->pump.out_file = true;
	}
	pm_rank_m_event(&r->m, &e);
}

void pm_rank_on_msg(struct pm_conn *c, const struct pm_msg *m)
{
	struct rank *r = c->w.arg;
	struct pm_rank_ev e = { .gen = m->gen, .rank = -1 };

	switch (m->type) {
	case PM_MSG_START:
		e.type = PM_RE_START;
		e.rank = m->rank;
		e.group = m->node;
		e.master = m->text;
		break;
	case PM_MSG_STOP:
		e.type = m->count & PM_FLAG_HUNG ? PM_RE_STOP_HUNG : PM_RE_STOP;
		break;
	case PM_MSG_FINISH:
		e.type = PM_RE_FINISH;
		break;
	case PM_MSG_ABORT:
		/* The failing rank, or rank 0 for a step-wide reason, says why. */
		if (m->text_len && (m->rank == r->m.grank || (m->rank < 0 && r->m.grank == 0)))
			say(r, m->text);
		/* srun's per-task lines then name the task that failed. */
		e.type = PM_RE_FINISH;
		e.status = (m->count & PM_FLAG_BLAME) && m->rank != r->m.grank ? 0 : m->status;
		break;
	case PM_MSG_PRINT:
		say(r, m->text);
		return;
	case PM_MSG_TRIAL_START:
		trial_start(r, m);
		return;
	case PM_MSG_TRIAL_STOP:
		e.type = PM_RE_STOP;
		break;
	case PM_MSG_RANK_STANDBY: /* down: a spare's supervisor keeps a standby */
		e.type = PM_RE_SPARE;
		break;
	default:
		return;
	}
	pm_rank_m_event(&r->m, &e);
}

void pm_rank_on_close(struct pm_conn *c, const char *why)
{
	struct rank *r = c->w.arg;
	struct pm_rank_ev e = { .type = PM_RE_LINK_LOST, .rank = -1, .why = why };

	r->c = NULL;
	pm_conn_free(c);
	pm_rank_m_event(&r->m, &e);
}

/* procmgrd and we watch each other: each says something every third of
 * the peer timeout. */
void pm_rank_on_live(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct rank *r = w->arg;
	(void)l;
	(void)ev;

	pm_timer_ack(w->fd);
	if (!r->c || pm_rank_m_exiting(&r->m))
		return;
	if (pm_conn_keepalive(r->c, pm_now_ms(), r->cfg.peer_timeout_ms))
		pm_rank_m_post(&r->m, PM_RE_PEER_SILENT);
}
