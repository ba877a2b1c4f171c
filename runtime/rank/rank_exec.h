/* What procmgr-rank does as a process: run the user's command for a
 * generation (its environment, its process group, its tracer), end what
 * it left behind, and read why it failed. */
#ifndef PM_RANK_EXEC_H
#define PM_RANK_EXEC_H

#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/errinfo.h"

struct pm_rank_exec {
	char **argv;
	char **sb_argv;         /* a standby's command: argv, or procmgr's python server */
	int warm_fd;            /* the child's end of its warm channel; -1: none */
	sigset_t orig_mask;     /* what the command gets, as slurmstepd gave us */
	int link_fd;            /* procmgrd's socket: its pid may trace; -1 */
	int err_fd;             /* the command's stderr; -1: ours */
	int out_fd;             /* the command's stdout; -1: ours */
	const char *heartbeat;  /* removed at each start; NULL: none */
	const char *error_base; /* TORCHELASTIC_ERROR_FILE as the plugin set it */
	char error_file[PATH_MAX]; /* the generation's own, "" if none */
};

/* A sweep's trial on this slot (TRIAL_START): run as `sh -c cmd` with its
 * own numbering and MASTER, its stdout and stderr in files of its own. */
struct pm_rank_trial {
	bool on;
	char name[65];
	int rank, world, local_rank, local_world, port, restarts;
	char master[256];
	char *cmd;
	int out_fd, err_fd; /* DIR/NAME.RANK.out and .err, -1 none */
	char result_path[PATH_MAX]; /* DIR/NAME.RANK.result: PROCMGR_RESULT_FILE */
};

struct pm_rank_who {
	uint32_t gen;
	int grank;
	int group; /* >= 0: spares, the slot's rank and group are set */
	const char *master;
	const struct pm_rank_trial *trial; /* NULL: the step's own command */
};

/* What a generation's command gets on top of the step's environment, the
 * same for a cold start (set before exec) and a warm one (sent to the
 * standby): the restart count, the error file, who it is after a
 * replacement. */
#define PM_RANK_GENENV_MAX 8
struct pm_rank_envvar {
	const char *name;
	char value[PATH_MAX];
};
int pm_rank_exec_genenv(const struct pm_rank_exec *x, const struct pm_rank_who *who,
			struct pm_rank_envvar *vars);
/* Before a generation starts, cold or warm: the last one's heartbeat and
 * error file go, and its start is said (gen > 0). */
void pm_rank_exec_prepare(struct pm_rank_exec *x, const struct pm_rank_who *who, bool warm);
/* TRIAL_START's fields into t (its files opened in dir, made if needed).
 * -1 with err: a malformed message, or the files cannot be opened. */
int pm_rank_trial_set(struct pm_rank_trial *t, int rank, int restarts, const char *text,
		      const char *dir, char *err, size_t errlen);
void pm_rank_trial_clear(struct pm_rank_trial *t);
/* At the end of t's attempt: its result (sweep/sweep_metric.h), read from
 * its PROCMGR_RESULT_FILE: 1 with *m, 0 none; -1 with why (a file that is
 * no regular file, a last line that is no result). */
struct pm_metric;
int pm_rank_trial_result(const struct pm_rank_trial *t, struct pm_metric *m, char *why,
			 size_t whylen);
/* Why t's attempt failed when its stderr said nothing: stdout's last
 * line, quoted (errinfo.h), or "". */
void pm_rank_trial_stdout_failure(const struct pm_rank_trial *t, char *text, size_t len);

/* Forks and execs; the pid, or -1 (said on stderr). noexec: exec failed. */
pid_t pm_rank_exec_spawn(struct pm_rank_exec *x, const struct pm_rank_who *who, bool *noexec);
/* The next generation's process, ahead of time (sb_argv, x->warm_fd, the
 * step's environment but nothing of a generation's): its pid, or -1 if it
 * could not be started (said on stderr). */
pid_t pm_rank_exec_standby(struct pm_rank_exec *x, int grank);
/* --procmgr-warm=python:MODS: x->sb_argv becomes the command's interpreter
 * on procmgr's python standby; left NULL if argv[0] is not a python. */
void pm_rank_exec_python_argv(struct pm_rank_exec *x, const char *mods);
/* Descendants that left the process group come back to us (we are their
 * subreaper) once their parent is gone: none may outlive the generation.
 * keep (the standby, or 0) is spared. */
void pm_rank_exec_kill_strays(pid_t keep);
/* Why the command failed: torch's error file, or else its stderr's last
 * lines; "" if neither says anything. */
void pm_rank_exec_failure(const char *error_file, const struct pm_tail *tail, char *text,
			  size_t len);

#endif
