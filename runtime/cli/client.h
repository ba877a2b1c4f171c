/* The procmgr command's side of a request to a step's root procmgrd:
 * finding the step (Slurm's scontrol), its root node and control port,
 * munge's socket, and one connection carrying one signed request
 * (common/request.h) whose answers are handed to a callback. */
#ifndef PM_CLIENT_H
#define PM_CLIENT_H

#include <stddef.h>

#include "common/request.h"
#include "common/wire.h"

#define PM_CLIENT_CANDIDATES 33 /* node 0 and the root's children at fanout 32 */

struct pm_target {
	unsigned job, step;
	char root[256];   /* the node asked: the step's node 0 first */
	/* With spares the root may have moved to one of the root's children:
	 * the first nodes of the step, asked in turn. */
	char cand[PM_CLIENT_CANDIDATES][256];
	int ncand;
	unsigned port;    /* its control port */
	unsigned uid;     /* the job's user: the root proves itself as that user (or root) */
	int nnodes;
	char munge_socket[1024];
};

/* "12" or "12.3" (step 0 by default); -1 with why for anything else. */
int pm_client_parse_id(const char *s, unsigned *job, unsigned *step, int *has_step,
		       char *why, size_t len);
/* Where step job.step's root listens, asking Slurm; -1 with why. */
int pm_client_target(unsigned job, unsigned step, struct pm_target *t, char *why, size_t len);
/* The running steps of the current job ($SLURM_JOB_ID), else of the user,
 * as "JOB.STEP" words in buf (batch and extern steps left out); the count,
 * -1 with why. */
int pm_client_steps(char *buf, size_t len, char *why, size_t wlen);

/* Every ANSWER frame; return nonzero to stop reading. */
typedef int (*pm_answer_fn)(void *arg, const struct pm_msg *m);
/* Ask and read until the end: 0 and *end filled (its status 0 or not, its
 * text, its count), -1 with why (unreachable, refused, timed out, or what
 * answered could not prove it is the step's procmgrd), 1 with why when the
 * root closed the connection first (the step ended). Nothing reaches fn
 * before the root proved itself (common/clientauth.h). */
int pm_client_ask(const struct pm_target *t, enum pm_query_kind kind, const char *args,
		  unsigned timeout_ms, pm_answer_fn fn, void *arg, struct pm_msg *end,
		  char *why, size_t len);


/* The step named by id ("12", "12.1"), resolved (pm_client_target);
 * prints "procmgr CMD: why" and returns the exit code on failure: 2 for
 * an id that is not JOBID[.STEP] (a usage error, as every command says
 * it), 1 for a step that is not there; 0 once resolved. */
int pm_client_resolve(const char *cmd, const char *id, struct pm_target *t);
/* restart and stop: one request, its answer printed; the exit code. */
int pm_client_control(const char *cmd, enum pm_query_kind kind, int argc, char **argv,
		      const char *usage);

#endif
