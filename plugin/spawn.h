/* This node's procmgrd: its directories, its start as the job's user and
 * the wait for its ready line, its stop at step end. */
#ifndef PM_SPAWN_H
#define PM_SPAWN_H

#include <stddef.h>
#include <slurm/spank.h>

struct pm_node;

/* As root (init_post_opt): state_dir and state_dir/JOB, the latter the job's
 * user's, following no link. 0, or -1 with err. */
int pm_spawn_dirs(struct pm_node *n, char *err, size_t errlen);
/* In user_init: fork, become the job's user, exec procmgrd with the
 * contract's command line, wait for its ready line. 0 once it is ready;
 * -1 with err (a failed health check, or why it did not start). n->pid is
 * set whenever a procmgrd was started: pm_spawn_stop it even after -1. */
int pm_spawn_start(spank_t sp, struct pm_node *n, char *err, size_t errlen);
/* pm_spawn_start in two halves: fork and exec (in init_post_opt, so that
 * procmgrd starts while slurmstepd sets up the step), then its ready line
 * (user_init). pm_spawn_start does what is left of the two. */
int pm_spawn_launch(spank_t sp, struct pm_node *n, char *err, size_t errlen);
int pm_spawn_ready(struct pm_node *n, char *err, size_t errlen);
/* At the last task's exit: SIGTERM, without waiting (procmgrd leaves only
 * on it, and its exit is off the step's path until the exit hook). */
void pm_spawn_signal(struct pm_node *n);
/* SIGTERM (again), then SIGKILL after 5 s; reaped; then its run directory
 * goes. */
void pm_spawn_stop(struct pm_node *n);

#endif
