/* procmgr-rank's decisions, as a machine of states by events (in the
 * style of s6-supervise: a table actions[state][event]). It does no I/O:
 * every effect (fork, kill, a timer, a message to procmgrd, a line on
 * stderr) goes through pm_rank_ops, so that tests/unit/test_rank_machine.c
 * drives it scenario by scenario and rank.c only wires the event loop. */
#ifndef PM_RANK_MACHINE_H
#define PM_RANK_MACHINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/wire.h"

enum pm_rank_state {
	PM_RS_IDLE,      /* no command: before the first START, between generations */
	PM_RS_RUNNING,   /* the generation's command runs */
	PM_RS_CAPTURING, /* a hang: its stack is being taken, the stop follows */
	PM_RS_STOPPING,  /* SIGTERM sent, SIGKILL after the grace: its end is no failure */
	PM_RS_EXITING,   /* we end (FINISH, ABORT, SIGTERM, procmgrd lost) once it ends */
	PM_RS_DONE,      /* the loop is told to stop */
	PM_RS_NSTATES
};

enum pm_rank_event {
	PM_RE_START,       /* procmgrd: gen, rank, group, master */
	PM_RE_STOP,        /* procmgrd: gen */
	PM_RE_STOP_HUNG,   /* procmgrd: gen; a rank hung: stack first, then stop */
	PM_RE_FINISH,      /* procmgrd's FINISH or ABORT: code */
	PM_RE_CHILD_EXIT,  /* the command ended: status (its stderr drained already) */
	PM_RE_SIGTERM,     /* SIGTERM or SIGINT: signo */
	PM_RE_SIGNAL,      /* any other signal, for the command: signo */
	PM_RE_GRACE,       /* the grace after SIGTERM expired */
	PM_RE_HANG,        /* no heartbeat in time */
	PM_RE_BEAT,        /* the heartbeat file was touched */
	PM_RE_CAPTURED,    /* the hang's stack capture ended */
	PM_RE_LINK_LOST,   /* procmgrd's connection closed: why (NULL: orderly) */
	PM_RE_PEER_SILENT, /* procmgrd said nothing for the peer timeout */
	PM_RE_READY,       /* "ready" on a warm channel: status 1 the standby, 0 the command */
	PM_RE_SB_EXIT,     /* the standby ended by itself: status */
	PM_RE_SPARE,       /* procmgrd: we are a spare's supervisor, warm on */
	PM_RE_FORKED,      /* python: the fork server forked the generation: status its pid */
	PM_RE_NEVENTS
};

struct pm_rank_ev {
	enum pm_rank_event type;
	uint32_t gen;
	int rank, group;    /* START: rank < 0 keeps the rank we have */
	const char *master; /* START */
	int status;         /* CHILD_EXIT: wait status; FINISH: code; signals: signo */
	const char *why;    /* LINK_LOST */
};

enum pm_rank_timer { PM_RT_GRACE, PM_RT_HANG };

/* The next generation's process, started ahead of time (--procmgr-warm):
 * a second, smaller machine beside the command's state. */
enum pm_rank_sb {
	PM_SB_NONE = 0,    /* none: warm is off, not earned yet, or it was used or lost */
	PM_SB_WARMING = 1, /* started, its start-up not done */
	PM_SB_READY = 2,   /* said ready: the next START hands it the generation */
	/* python: the fork server was asked to fork the generation; its
	 * process's pid (FORKED) is awaited, the server stays (READY after). */
	PM_SB_FORKING = 3,
	/* (the values travel in PM_MSG_RANK_STANDBY's count; FORKING as READY) */
};

/* PM_RW_PYTHON: the standby is a fork server (python/procmgr/standby.py)
 * that outlives the generations: at START it forks the generation's
 * process, which becomes our child (we are a subreaper, it double-forks)
 * and whose pid it reports (FORKED); it is not used up. */
enum pm_rank_warm { PM_RW_OFF, PM_RW_CONTRACT, PM_RW_PYTHON };

struct pm_rank_m;

struct pm_rank_ops {
	/* Runs the generation's command (m->gen, m->grank, ...): its pid, or
	 * -1 if it could not even be forked (said on stderr already). noexec:
	 * exec failed, it would fail the same way again. */
	pid_t (*spawn)(void *ctx, const struct pm_rank_m *m, bool *noexec);
	void (*send)(void *ctx, enum pm_msg_type t, uint32_t gen, int status, unsigned flags,
		     const char *text);
	void (*kill)(void *ctx, pid_t pgid, int sig);
	void (*timer)(void *ctx, enum pm_rank_timer t, unsigned ms); /* 0: disarm */
	/* 0: started, CAPTURED follows; -1: none (said why if worth saying). */
	int (*capture)(void *ctx, pid_t pid);
	void (*capture_stop)(void *ctx); /* no CAPTURED follows; harmless if none */
	/* Why the command failed ("" if nothing says). */
	void (*failure)(void *ctx, char *text, size_t len);
	void (*say)(void *ctx, const char *line); /* on our stderr */
	uint64_t (*wall_ms)(void *ctx);
	void (*done)(void *ctx); /* stop the loop: exit with m->exit_code */
	/* Warm generations. standby: starts the next generation's process
	 * ahead of time; its pid, or -1 (said why: warm ends here). release:
	 * "start" on the warm channel; of the standby (the generation's
	 * environment first, m->gen, m->grank, ...), or of the running command
	 * that said ready (nothing to hand over); 0, or -1: the standby is gone
	 * (its end needs no report). Python: the fork server is sent the
	 * generation and stays the standby; its FORKED gives the pid. */
	pid_t (*standby)(void *ctx, const struct pm_rank_m *m);
	int (*release)(void *ctx, const struct pm_rank_m *m, bool standby);
};

struct pm_rank_cfg {
	unsigned grace_ms, hang_ms, hang_first_ms;
	unsigned peer_timeout_ms; /* procmgrd silent this long: it is gone */
	bool heartbeat; /* a heartbeat file is watched (hang_ms set) */
	enum pm_rank_warm warm;
	const char *node;
};

struct pm_rank_m {
	enum pm_rank_state state;
	struct pm_rank_cfg cfg;
	const struct pm_rank_ops *ops;
	void *ctx;
	/* who we are in the generation we run (START says, with spares) */
	int grank, group;
	char master[256];
	/* the generation */
	pid_t child;
	uint32_t gen;
	bool hung;             /* its end is reported as a hang */
	bool beat;             /* it beat at least once */
	bool noexec;
	uint64_t beat_wall_ms; /* its last heartbeat, or its start (epoch ms) */
	uint64_t hung_wall_ms; /* when it was judged hung (epoch ms) */
	int last_status;
	int exit_code;
	/* warm generations */
	enum pm_rank_sb sb_state;
	pid_t sb;            /* the standby's pid (its own group), 0: none */
	bool warm_ok;        /* the program said ready once (the contract), or python */
	bool said_never;     /* "never said ready" was said */
	int sb_lost;         /* the last standby's wait status when it ended unasked; -1 */
	bool warm_start;     /* this generation was a standby */
	bool sb_refused;     /* python: the fork server refused (a thread, CUDA): no more */
	enum pm_rank_sb sb_told; /* what procmgrd was told last (RANK_STANDBY) */
	pid_t sb_told_pid;
};

void pm_rank_m_init(struct pm_rank_m *m, const struct pm_rank_cfg *cfg,
		    const struct pm_rank_ops *ops, void *ctx, int grank);
void pm_rank_m_event(struct pm_rank_m *m, const struct pm_rank_ev *ev);
/* Shorthand for an event with no data but its type. */
void pm_rank_m_post(struct pm_rank_m *m, enum pm_rank_event type);
bool pm_rank_m_exiting(const struct pm_rank_m *m);
const char *pm_rank_state_name(enum pm_rank_state s);
const char *pm_rank_event_name(enum pm_rank_event e);

#endif
