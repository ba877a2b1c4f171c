/* What procmgr's processes say to each other outside the wire protocol:
 * environment names, run-directory layout, procmgrd's command line, the
 * ready pipe and the health report. The plugin (as root in slurmstepd),
 * procmgrd and procmgr-rank are built and upgraded together, but each
 * side must read exactly what the other writes: both go through here.
 * Pure: builds and parses text, never touches a file. */
#ifndef PM_CONTRACT_H
#define PM_CONTRACT_H

#include <stddef.h>
#include <stdint.h>
#include <limits.h>
#include <sys/types.h>

/* ---- environment ----
 * Names procmgr defines. Names Slurm or CUDA define (SLURM_*,
 * SLURMD_NODENAME, CUDA_VISIBLE_DEVICES) are written where they are used. */

/* Options, always in pm_opts_format's form: from sbatch's batch step (or
 * salloc) to the srun steps inside it, and from srun to slurmstepd and on
 * to each rank (set again by the plugin to what slurmstepd resolved). */
#define PM_ENV_JOB_OPTS "PROCMGR_JOB_OPTIONS"
#define PM_ENV_STEP_OPTS "PROCMGR_STEP_OPTIONS"
/* srun to slurmstepd: the same text, under a name Slurm propagates even
 * with --export=NONE or VARS (it always passes SLURM_* variables on). */
#define PM_ENV_STEP_REQ "SLURM_PROCMGR_STEP_OPTIONS"
/* srun's node (SLURMD_NODENAME where srun runs, if it runs on a node): set
 * by srun, read by slurmstepd (SLURM_*: Slurm passes it on). */
#define PM_ENV_SRUN_NODE "SLURM_PROCMGR_SRUN_NODE"
/* For procmgr-rank, from the plugin. */
#define PM_ENV_SOCK "PROCMGR_SOCK"     /* procmgrd's socket (pm_path_sock) */
#define PM_ENV_ARGV0 "PROCMGR_ARGV0"   /* the command Slurm would have run */
/* For the user's command. */
#define PM_ENV_HEARTBEAT "PROCMGR_HEARTBEAT"         /* always */
/* procmgrd's link liveness, for its supervisors: milliseconds, 0 off. */
#define PM_ENV_PEER_TIMEOUT "PROCMGR_PEER_TIMEOUT_MS"
#define PM_ENV_RESTART_COUNT "PROCMGR_RESTART_COUNT" /* the generation */
/* --procmgr-warm: the descriptor of the command's warm channel (warm.h). */
#define PM_ENV_WARM_FD "PROCMGR_WARM_FD"
/* procmgrd's state socket (pm_path_state): the ranks' save and load. */
#define PM_ENV_STATE_SOCK "PROCMGR_STATE_SOCK"
/* For procmgr health, to test it on fixture trees. */
#define PM_ENV_SYSROOT "PROCMGR_SYSROOT"
#define PM_ENV_NVML_LIB "PROCMGR_NVML_LIB"

/* torchrun's environment, so that a script written for it runs as is:
 * set by the plugin, the restart count again by procmgr-rank, and RANK and
 * LOCAL_RANK read back by procmgr-rank, which also removes the error file
 * before each generation. The defaults torchrun gives only when the user
 * has not set them are in torchenv.h. */
#define PM_ENV_RANK "RANK"
#define PM_ENV_LOCAL_RANK "LOCAL_RANK"
#define PM_ENV_WORLD_SIZE "WORLD_SIZE"
#define PM_ENV_LOCAL_WORLD_SIZE "LOCAL_WORLD_SIZE"
#define PM_ENV_GROUP_RANK "GROUP_RANK"
#define PM_ENV_GROUP_WORLD_SIZE "GROUP_WORLD_SIZE"
#define PM_ENV_ROLE_RANK "ROLE_RANK"
#define PM_ENV_ROLE_WORLD_SIZE "ROLE_WORLD_SIZE"
#define PM_ENV_MASTER_ADDR "MASTER_ADDR"
#define PM_ENV_MASTER_PORT "MASTER_PORT"
#define PM_ENV_TE_RUN_ID "TORCHELASTIC_RUN_ID"
#define PM_ENV_TE_MAX_RESTARTS "TORCHELASTIC_MAX_RESTARTS"
#define PM_ENV_TE_USE_AGENT_STORE "TORCHELASTIC_USE_AGENT_STORE"
#define PM_ENV_TE_RESTART_COUNT "TORCHELASTIC_RESTART_COUNT"
#define PM_ENV_TE_ERROR_FILE "TORCHELASTIC_ERROR_FILE" /* pm_path_error_file */
#define PM_ENV_ROLE_NAME "ROLE_NAME"
/* A sweep's trial: its name, set by procmgr-rank for its command. */
#define PM_ENV_TRIAL "PROCMGR_TRIAL"
/* Where it writes its result, NAME=VALUE lines (sweep/sweep_metric.h):
 * FILE.out/NAME.RANK.result, removed before each attempt. */
#define PM_ENV_RESULT_FILE "PROCMGR_RESULT_FILE"

/* The rank supervisor is installed next to procmgrd. */
#define PM_RANK_PROGRAM "procmgr-rank"

/* ---- run-directory layout ----
 *   STATE_DIR/JOB/                 the job's user's: logs stay for them
 *   STATE_DIR/JOB/STEP.NODE.run/   procmgrd's run directory, removed at end
 *       sock                       procmgrd's unix socket for its ranks
 *       state                      procmgrd's state socket (SOCK_SEQPACKET)
 *       heartbeat.LRANK            touched by the user's command
 *       error.LRANK.json           TORCHELASTIC_ERROR_FILE as the plugin
 *                                  sets it; the supervisor gives each
 *       error.LRANK.GEN.json       generation its own: torch's record of the
 *                                  command's error, if it writes one;
 *                                  removed before the next generation
 *   STATE_DIR/JOB/STEP.NODE.log    procmgrd's stdout and stderr
 *   STATE_DIR/JOB/STEP.events.jsonl  the step's event log (node 0)
 *   STATE_DIR/JOB/STEP.NODE.unhealthy  a failed check, for the plugin
 * Each returns 0, or -1 if the path does not fit in len (buf is then "").
 * The run directory's files are built from the run directory, which is
 * what procmgrd is given. */
int pm_path_jobdir(char *buf, size_t len, const char *state_dir, uint32_t job);
int pm_path_rundir(char *buf, size_t len, const char *state_dir, uint32_t job,
		   uint32_t step, uint32_t node);
int pm_path_log(char *buf, size_t len, const char *state_dir, uint32_t job,
		uint32_t step, uint32_t node);
int pm_path_events(char *buf, size_t len, const char *state_dir, uint32_t job,
		   uint32_t step);
int pm_path_report(char *buf, size_t len, const char *state_dir, uint32_t job,
		   uint32_t step, uint32_t node);
int pm_path_sock(char *buf, size_t len, const char *rundir);
int pm_path_state(char *buf, size_t len, const char *rundir);
int pm_path_heartbeat(char *buf, size_t len, const char *rundir, int lrank);
int pm_path_error_file(char *buf, size_t len, const char *rundir, int lrank);
/* Generation gen's error file, from pm_path_error_file's (or the user's own
 * TORCHELASTIC_ERROR_FILE): NAME.json -> NAME.GEN.json, else NAME.GEN. */
int pm_path_error_file_gen(char *buf, size_t len, const char *base, uint32_t gen);
/* The stack a supervisor took of its command on a hang, before stopping
 * it, for procmgrd to read and send up (procmgrd/query_hang.c). */
int pm_path_hang_stack(char *buf, size_t len, const char *rundir, int lrank);

/* ---- the ready pipe ----
 * procmgrd (or the plugin's child, before it becomes procmgrd) writes one
 * line to the plugin when it listens and the pre-launch checks are done:
 *   ok
 *   health<TAB>NODE<TAB>WHY     a check failed; WHY is "check: reason"
 *   error: TEXT                 procmgrd cannot run the step
 * Control characters in NODE, WHY and TEXT are written as spaces, so that a
 * line is always one line of the fields above. */
#define PM_READY_MAX 2048 /* a line, newline included */

enum pm_ready_kind { PM_READY_OK, PM_READY_HEALTH, PM_READY_ERROR };

struct pm_ready {
	enum pm_ready_kind kind;
	char node[256];         /* health */
	char text[PM_READY_MAX]; /* health: WHY; error: TEXT */
};

/* The line, newline included. node is for PM_READY_HEALTH, text for
 * PM_READY_HEALTH and PM_READY_ERROR (NULL for none). A line too long for
 * len is cut in its last field and still ends with a newline; -1 says so. */
int pm_ready_format(char *buf, size_t len, enum pm_ready_kind kind, const char *node,
		    const char *text);
/* One line, with or without its newline. -1 if it is none of the above
 * (out is then unspecified): the caller shows it as it came. */
int pm_ready_parse(const char *line, struct pm_ready *out);

/* ---- the health report ----
 * procmgrd writes the first failure of a check to the report file, one line
 * "CHECK: REASON" and a newline, for the plugin to drain the node on (after
 * running CHECK again as root). The same text is procmgrd's "why" in
 * messages. A check item has no white space (checkspec.c), so the first
 * ": " ends it. */
struct pm_report {
	char check[PATH_MAX + 32]; /* a script's whole path */
	char reason[1024];
};

/* "check: reason" without newline; control characters in reason become
 * spaces. -1 if check is empty or cannot be told apart from the reason
 * (white space or control characters in it), or if the text does not fit
 * (buf then holds as much of it as fits). */
int pm_report_format(char *buf, size_t len, const char *check, const char *reason);
/* One line, with or without its newline. -1 if it has no check, or a field
 * is too long. */
int pm_report_parse(const char *line, struct pm_report *out);

/* ---- procmgrd's command line ----
 * Flags "--name VALUE" (or "--name=VALUE"), in the order of the table in
 * contract.c. Strings point into the caller's memory (format) or into argv
 * (parse). */
struct pm_daemon_args {
	uint32_t job, step;
	unsigned node_id;      /* this node's index in nodes */
	const char *nodes;     /* the step's node list, Slurm host list syntax */
	unsigned ntasks_local; /* ranks on this node */
	unsigned ntasks;       /* ranks of the step */
	unsigned port;         /* control tree */
	unsigned fanout;
	const char *rundir;
	const char *events;       /* NULL: no event log */
	const char *munge_socket; /* NULL: munge's default */
	const char *opts;         /* pm_opts_format's form; "" for the defaults */
	int ready_fd;             /* -1: none */
	pid_t watch_pid;          /* 0: none; else slurmstepd, to end with it */
	const char *health_report; /* NULL: none */
	unsigned health_timeout_ms; /* each check script */
	unsigned peer_timeout_ms;   /* liveness of every link; 0: off */
	const char *metrics_dir;    /* NULL: no metrics file */
	unsigned connect_timeout_ms; /* waiting for the parent to listen */
	/* The node srun runs on when it runs on one of the cluster's (a batch
	 * script's srun: the batch host), as srun saw it; NULL: elsewhere. If
	 * the root finds it lost, srun is gone: the root ends the job. */
	const char *srun_node;
	unsigned state_max_rank_mib; /* the ranks' state in memory: per rank */
	unsigned state_max_node_mib; /* and per node */
	unsigned state_repl_mib_s;   /* the copy to the buddy: MiB/s; 0: no bound */
};

/* The longest node list of a step procmgr takes (SLURM_STEP_NODELIST):
 * beyond 128 KiB it reaches procmgrd in a memfd (--nodes fd:N). */
#define PM_NODELIST_MAX (64u << 20)
#define PM_NODELIST_ARG_MAX (32 * 4096 - 1) /* Linux's MAX_ARG_STRLEN, less the NUL */

#define PM_DAEMON_ARGV_MAX 48 /* argv entries, NULL included */

#define PM_DAEMON_USAGE \
	"usage: procmgrd --job ID --step ID --node-id I --nodes HOSTLIST " \
	"--ntasks-local N --ntasks N --port P --rundir DIR [--fanout K] " \
	"[--events FILE] [--munge-socket PATH] [--opts OPTIONS] [--ready-fd FD] " \
	"[--watch-pid PID] [--health-report FILE] [--health-timeout MS] " \
	"[--peer-timeout MS] [--connect-timeout MS] [--metrics-dir DIR] [--srun-node NAME] " \
	"[--state-max-rank MIB] [--state-max-node MIB]\n" \
	"procmgrd is started by procmgr.so inside a Slurm step.\n"

/* Defaults for what may be left out; the required ones zero or NULL. */
void pm_daemon_args_init(struct pm_daemon_args *a);
/* argv[0] = prog, then the flags, then NULL, in argv[0..argv_len); every
 * string is copied into buf. -1 with err if a value is out of range, a
 * required one is missing, or argv or buf is too small. */
int pm_daemon_args_format(const struct pm_daemon_args *a, const char *prog, char **argv,
			  size_t argv_len, char *buf, size_t buflen, char *err, size_t errlen);
/* From main's argc and argv (defaults first, as pm_daemon_args_init). -1
 * with err naming the flag and what it allows. */
int pm_daemon_args_parse(struct pm_daemon_args *a, int argc, char **argv, char *err,
			 size_t errlen);

#endif
