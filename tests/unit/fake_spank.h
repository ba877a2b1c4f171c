/* tests/unit/fake_spank.c: what Slurm gives the plugin, faked in-process. */
#ifndef PM_FAKE_SPANK_H
#define PM_FAKE_SPANK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <slurm/spank.h>

#define FAKE_SPANK_ENV_MAX 64
#define FAKE_SPANK_OPT_MAX 64
#define FAKE_SPANK_ITEM_MAX 64

struct fake_spank {
	struct { char name[64], value[4200]; } env[FAKE_SPANK_ENV_MAX];
	int nenv;
	int argc;              /* S_JOB_ARGV: the step's command */
	char **argv;           /* NULL: the item is not there */
	const char *setenv_fails; /* this variable cannot be set */
	char error[1024], info[1024]; /* the last of each */
	int nerrors, ninfos;
	spank_context_t ctx;   /* spank_context(); S_CTX_ERROR if unset */
	/* spank_get_item's scalar items (uid, gid, job id, task id, ...),
	 * by item: there only where have[item]. */
	uint32_t item[FAKE_SPANK_ITEM_MAX];
	bool have[FAKE_SPANK_ITEM_MAX];
	gid_t *gids;           /* S_JOB_SUPPLEMENTARY_GIDS, if ngids >= 0 and have */
	int ngids;
	struct spank_option opts[FAKE_SPANK_OPT_MAX]; /* spank_option_register's */
	char optnames[FAKE_SPANK_OPT_MAX][SPANK_OPTION_MAXLEN];
	int nopts;
	int register_fails;    /* the Nth registration (1-based) fails */
};

extern struct fake_spank fake_spank;
void fake_spank_reset(void);
/* The task's variable, or NULL. */
const char *fake_spank_env(const char *name);
/* Slurm's handling of --NAME[=ARG] on the command line (remote: in
 * slurmstepd, from the options srun forwarded): the registered option's
 * callback, and what it returns; -2 if no such option was registered. */
int fake_spank_option(const char *name, const char *arg, int remote);
/* Set a scalar item for spank_get_item. */
void fake_spank_item(spank_item_t item, uint32_t value);

#endif
