/* The unix-socket links to this node's rank supervisors: who may connect,
 * their HELLO, then their frames, fed to the state machine. */
#include "step.h"
#include "query.h"
#include "sweep_run.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "admit.h"
#include "io/sys.h"

/* The command must never outlive its supervisor: it has PR_SET_PDEATHSIG,
 * and here its whole process group goes too. A supervisor that stopped
 * answering is killed as well, through its pidfd (never a reused pid). */
void pm_step_rank_kill(struct pm_step *s, int lrank, bool supervisor)
{
	if (lrank < 0 || lrank >= s->ntasks_local)
		return;
	if (s->cmd_pgid[lrank] > 0) {
		if (kill(-s->cmd_pgid[lrank], SIGKILL) == 0)
			pm_log(s, "killed the command of local rank %d (process group %d)", lrank,
			       (int)s->cmd_pgid[lrank]);
		s->cmd_pgid[lrank] = 0;
	}
	if (supervisor && s->sup_pidfd[lrank] >= 0 &&
	    syscall(SYS_pidfd_send_signal, s->sup_pidfd[lrank], SIGKILL, NULL, 0) == 0)
		pm_log(s, "killed the silent supervisor of local rank %d", lrank);
}

/* c leaves the door: it said HELLO, or it closed. */
static void door_leave(struct pm_step *s, struct pm_conn *c)
{
	for (int i = 0; i < s->nrank_door; i++)
		if (s->rank_door[i].c == c) {
			s->rank_door[i] = s->rank_door[--s->nrank_door];
			return;
		}
}

void pm_step_rank_door_free(struct pm_step *s)
{
	while (s->nrank_door)
		pm_conn_free(s->rank_door[--s->nrank_door].c);
	free(s->rank_door);
	s->rank_door = NULL;
	s->rank_door_cap = 0;
}

static void rank_closed(struct pm_conn *c, const char *why)
{
	struct pm_step *s = c->w.arg;

	door_leave(s, c);
	if (c->id >= 0 && s->ranks[c->id] == c) {
		s->ranks[c->id] = NULL;
		s->sb_pgid[c->id] = 0; /* its standby dies with it */
		s->sb_state[c->id] = 0;
		/* Its end in an ended step is orderly; any other leaves its
		 * command without a supervisor. */
		if (!pm_gen_terminal(&s->gen) || why)
			pm_step_rank_kill(s, c->id, false);
		if (!why)
			why = "it exited or was killed";
		pm_gen_rank_gone(&s->gen, c->id, why);
	} else if (why) {
		pm_log(s, "rank connection closed: %s", why);
	}
	pm_conn_free(c);
	pm_step_over(s);
}

static void rank_msg(struct pm_conn *c, const struct pm_msg *m)
{
	struct pm_step *s = c->w.arg;

	if (c->id >= 0) {
		if (m->type == PM_MSG_RANK_STEP) {
			pm_step_goodput_beat(s, c->id, m);
			pm_slowlink_rank(s, c->id, m);
			return;
		}
		if (m->type == PM_MSG_RANK_STANDBY) {
			/* For procmgr status only: whether a standby waits, and
			 * its group, whose memory query_status.c measures. */
			bool ok = m->count <= 2 && m->status >= 0 && (m->status > 0) == (m->count > 0);
			s->sb_pgid[c->id] = ok ? (pid_t)m->status : 0;
			s->sb_state[c->id] = ok ? (unsigned char)m->count : 0;
			return;
		}
		if (m->type == PM_MSG_RANK_EXIT || m->type == PM_MSG_RANK_STOPPED) {
			/* A sweep's trial ended on this slot: the root's news. */
			if (pm_sweep_node_rank_msg(s, c->id, m)) {
				s->cmd_pgid[c->id] = 0;
				return;
			}
		}
		if (m->type == PM_MSG_RANK_RUN) {
			s->cmd_pgid[c->id] = m->status > 1 ? (pid_t)m->status : 0;
			pm_gen_rank_msg(&s->gen, c->id, m);
			return;
		}
		if (m->type == PM_MSG_RANK_EXIT || m->type == PM_MSG_RANK_STOPPED) {
			s->cmd_pgid[c->id] = 0;
			pm_query_rank_ended(s, c->id); /* a hang's stack, ahead of its end */
		}
		if (pm_gen_rank_msg(&s->gen, c->id, m))
			pm_conn_drop(c, "unexpected message from a rank");
		return;
	}
	/* HELLO: node is the local rank, rank the global one. */
	if (m->type != PM_MSG_RANK_HELLO || m->node < 0 || m->node >= s->ntasks_local ||
	    s->ranks[m->node]) {
		pm_conn_drop(c, "bad or duplicate rank hello");
		return;
	}
	c->id = m->node;
	s->ranks[c->id] = c;
	door_leave(s, c);
	{
		struct ucred cred;
		socklen_t len = sizeof(cred);
		if (s->sup_pidfd[c->id] < 0 &&
		    getsockopt(c->w.fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0)
			s->sup_pidfd[c->id] = pm_pidfd_open(cred.pid);
	}
	if (pm_gen_rank_hello(&s->gen, c->id, m->rank)) {
		s->ranks[c->id] = NULL;
		c->id = -1;
		pm_conn_drop(c, "a second supervisor for the same rank");
		return;
	}
	pm_sweep_node_hello(s, c->id);
	/* --procmgr-warm on a spare: its supervisors keep standbys too, so
	 * that a replaced node's ranks start warm (rank_machine.c's spare). */
	if (s->opts.warm[0] && strcmp(s->opts.warm, "off") && s->opts.spares &&
	    s->gen.node_slot && s->gen.node_slot[s->node] < 0 && !pm_gen_terminal(&s->gen)) {
		struct pm_msg sp;
		pm_msg_init(&sp, PM_MSG_RANK_STANDBY);
		pm_conn_send(c, &sp);
	}
	pm_step_events_untold(s);
}

void pm_step_rank_conn(struct pm_step *s, int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	struct pm_conn *c;
	char why[300];

	/* Only the job's user (and root) may talk to procmgrd. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) ||
	    (cred.uid != s->uid && cred.uid != 0)) {
		pm_log(s, "refused a local connection from uid %u",
		       len == sizeof(cred) ? (unsigned)cred.uid : 0u);
		close(fd);
		return;
	}
	/* Any process of the job's user can connect here (a rank's too), and
	 * say nothing: admit.h's bounds on those without HELLO, per process
	 * and in all, and the descriptors' reserve. The supervisors say HELLO
	 * as soon as they connect; in all, the oldest silent one makes way for
	 * a newcomer, so that a flood cannot keep a supervisor out. */
	{
		struct rlimit rl;
		struct pm_admit_cfg cfg = {
			.per_peer = PM_ADMIT_RANK_PER_PID,
			.reserve = pm_admit_reserve((unsigned)(s->opts.spares ? s->nnodes
									     : s->nchildren),
						    (unsigned)s->ntasks_local),
		};
		struct pm_admit_now now = { .fd = (unsigned)fd };
		enum pm_admit_verdict v;
		char who[32];
		int i, oldest = -1;

		if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY &&
		    rl.rlim_cur <= ~0u)
			now.fd_limit = (unsigned)rl.rlim_cur;
		for (i = 0; i < s->nrank_door; i++) {
			if (s->rank_door[i].pid == cred.pid)
				now.peer++;
			if (oldest < 0 || s->rank_door[i].t0 < s->rank_door[oldest].t0)
				oldest = i;
		}
		now.socket = (unsigned)s->nrank_door;
		v = pm_admit_decide(&cfg, &now);
		if (v != PM_ADMIT_TAKE) {
			/* Said once per process: a flood would fill the log. */
			if (s->rank_door_said != cred.pid) {
				snprintf(who, sizeof(who), "pid %d", (int)cred.pid);
				pm_admit_why(v, &cfg, &now, "the supervisors' socket", who, why,
					     sizeof(why));
				pm_log(s, "supervisors' socket: %s", why);
				s->rank_door_said = cred.pid;
			}
			close(fd);
			return;
		}
		if (s->nrank_door >= s->ntasks_local + PM_ADMIT_RANK_EXTRA && oldest >= 0)
			pm_conn_fail(s->rank_door[oldest].c,
				     "made way for a newer connection (no hello yet)");
		if (s->nrank_door == s->rank_door_cap) {
			int n = s->rank_door_cap ? 2 * s->rank_door_cap : 8;
			struct pm_rank_door *d = realloc(s->rank_door, (size_t)n * sizeof(*d));
			if (!d) {
				close(fd);
				return;
			}
			s->rank_door = d;
			s->rank_door_cap = n;
		}
	}
	if (!(c = pm_conn_new(s->loop, fd, rank_msg, rank_closed, s))) {
		pm_log(s, "cannot watch a rank connection: %m");
		close(fd);
		return;
	}
	s->rank_door[s->nrank_door++] = (struct pm_rank_door){ .c = c, .pid = cred.pid,
							       .t0 = pm_now_ms() };
}
