/* Goodput (issue 35): what share of a step's wall time trained, and where
 * every lost second of each incident went. Pure: a timeline in (the root's
 * events, as their JSON members: the same text the step's event log keeps,
 * so that procmgrd while the step runs and `procmgr goodput` after it
 * compute the same figures from the same input), figures out.
 *
 * The heartbeats: a rank's procmgr.heartbeat(step) at the START of each
 * step (before computing it, as examples/ddp_train.py does) says that
 * every step before `step` is done. The root's procmgrd writes the steps
 * of its node's local rank 0 into the log as `progress` events (gen,
 * train_step, beat_ms: when its supervisor saw the beat), a generation's
 * first beat and the last beat before any other event always, others
 * sampled (pm_gp_sample_due): a step every 10 ms would otherwise be 100
 * lines a second.
 *
 * Definitions (docs/user-guide.md, "Goodput", says the same for users):
 * - wall: from `launch` (generation 0 started) to the step's end (`finish`,
 *   `give_up` or `stop_requested`), or to now while it runs.
 * - steady step time (tau): the median time per step over every interval
 *   between two beats of one generation, each interval weighted by its
 *   steps (a median: the slow steps after a restart, a checkpoint's, do
 *   not move it).
 * - steps: the distinct steps done, each counted once however often it was
 *   computed: the union over generations of [first beat's step, last beat's
 *   step), the last beat's step included when the generation succeeded.
 * - useful = steps x tau; goodput = useful / wall.
 * - an incident: the first failure of a generation that stopped it (a
 *   rank's exit or kill, a hang, a lost node or supervisor, a health check
 *   while running, a restart asked for with `procmgr restart`, a cancel);
 *   failures while the generation was already stopping are part of it.
 *   Its failure instant `at`: a hang's, the hung rank's last heartbeat; a
 *   lost node's, the last beat before it was declared lost (its real end
 *   is not observed: at most a step later); any other's, when the root
 *   learnt of it (a rank's exit reaches the root in milliseconds).
 * - its phases, which partition the wall time they cover:
 *   detect     at -> the root knew (a hang: its supervisor's judgement;
 *              the hang timeout; a lost node: the peer timeout);
 *   stop       -> every rank of the generation stopped (a hang's stacks
 *              included);
 *   start      -> every rank of the next generation runs its command (the
 *              restart delay, a spare's replacement, the processes' start);
 *   reinit     -> the next generation's first beat (the program's start:
 *              imports, rendezvous, checkpoint load); when that generation
 *              failed without a beat (a restart during a restart), up to
 *              that failure, and the next incident goes on from there;
 *   recompute  the work the failure threw away: the part of the step
 *              under way at `at` (from the last beat), plus tau for every
 *              step the next generation that trained computed again (a
 *              step done before);
 *   slowdown   the excess over tau of the first intervals of the
 *              generation that resumed right after this failure, as long
 *              as they are more than PM_GP_SLOW_TOL slower than tau.
 *   lost = the sum of the six.
 * - startup: launch to generation 0's first beat (or its failure); end:
 *   after the last beat (the last step's tau counted as useful when the
 *   step succeeded) to the end, or to now while a generation trains;
 *   other: what is left (wall - useful - startup - end - every lost):
 *   steady steps slower or faster than the median.
 * Without a step in any heartbeat (or fewer than two steps: no tau),
 * useful, goodput, reinit, recompute and slowdown cannot be known: they
 * are -1 (JSON null) and `why` says so, never 0. */
#ifndef PM_GOODPUT_H
#define PM_GOODPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Intervals more than this much slower than tau after a resume count as
 * its slowdown; the first one within it ends the slowdown. */
#define PM_GP_SLOW_TOL 0.10

enum pm_gp_kind {
	PM_GP_LAUNCH, PM_GP_FAIL, PM_GP_HANG, PM_GP_STOPPED, PM_GP_START, PM_GP_RUNNING,
	PM_GP_BEAT, PM_GP_SUCCEEDED, PM_GP_END, PM_GP_SWEEP,
};

struct pm_gp_ev {
	double t;        /* epoch s; a beat: when it was seen */
	enum pm_gp_kind kind;
	uint32_t gen;
	uint64_t step;   /* a beat's */
	double at;       /* a failure's instant; -1: not observed (a lost node) */
	char cause[16];  /* a failure's: crash hang node_lost supervisor health request cancelled */
};

struct pm_gp_tl {
	struct pm_gp_ev *ev;
	size_t n, cap;
	uint32_t gen;    /* the last generation named */
};

/* One event of the step's log, its name and JSON members, at time t
 * (epoch s). Events that say nothing of goodput are ignored. 0, or -1
 * (errno ENOMEM). */
int pm_gp_note(struct pm_gp_tl *tl, double t, const char *name, const char *fields);
/* One whole line of STEP.events.jsonl; 1 if it is not an event line. */
int pm_gp_line(struct pm_gp_tl *tl, const char *line);
void pm_gp_tl_free(struct pm_gp_tl *tl);

enum pm_gp_phase {
	PM_GP_DETECT, PM_GP_STOP, PM_GP_STARTP, PM_GP_REINIT, PM_GP_RECOMPUTE, PM_GP_SLOWDOWN,
	PM_GP_NPHASES,
};
/* "detect", "stop", ... (the metrics' and JSON's names) */
const char *pm_gp_phase_name(enum pm_gp_phase p);

struct pm_gp_incident {
	uint32_t gen;
	char cause[16];
	double at;                    /* epoch s */
	double phase[PM_GP_NPHASES];  /* s; -1: cannot be known */
	double lost;                  /* their sum; -1 if one is unknown */
};

struct pm_gp_result {
	bool known;          /* useful and goodput known */
	char why[200];       /* why not, "" when known */
	bool ended;
	bool sweep;
	double wall, useful, goodput, steady, startup, end, other; /* -1 unknown */
	uint64_t steps;
	unsigned nincidents;
	struct pm_gp_incident *inc;
	double total[PM_GP_NPHASES]; /* summed over incidents, -1 unknown */
	double lost;                 /* every incident's, -1 unknown */
};

/* The figures of tl; now (epoch s) ends a step still running. 0, or -1
 * (ENOMEM). Free with pm_gp_result_free. */
int pm_gp_compute(const struct pm_gp_tl *tl, double now, struct pm_gp_result *r);
void pm_gp_result_free(struct pm_gp_result *r);

/* `procmgr goodput --json`'s object (one line, no newline); -1 if it does
 * not fit. */
int pm_gp_json(const struct pm_gp_result *r, char *buf, size_t len);
/* "procmgr: goodput 93.4% (...)": srun's line at the step's end and
 * `procmgr status`'s; -1 if it does not fit. */
int pm_gp_text(const struct pm_gp_result *r, char *buf, size_t len);

/* The root's status answer carries a summary as one line, "goodput
 * KEY=VALUE ...": its codec. parse: 1 when line is such a line (r's
 * summary fields filled, inc NULL), 0 when it is another line, -1 when
 * malformed. */
int pm_gp_status_format(const struct pm_gp_result *r, char *buf, size_t len);
int pm_gp_status_parse(const char *line, struct pm_gp_result *r);

/* Whether the root writes a beat seen since_first_ms after its
 * generation's first, since_written_ms after the last it wrote: every
 * second for the first minute (the slowdown's resolution), then every 10 s. */
bool pm_gp_sample_due(uint64_t since_first_ms, uint64_t since_written_ms);

#endif
