/* tests/unit/fake_spank.c: what Slurm gives the plugin, faked in-process. */
#ifndef PM_FAKE_SPANK_H
#define PM_FAKE_SPANK_H

#include <slurm/spank.h>

#define FAKE_SPANK_ENV_MAX 64

struct fake_spank {
	struct { char name[64], value[4200]; } env[FAKE_SPANK_ENV_MAX];
	int nenv;
	int argc;              /* S_JOB_ARGV: the step's command */
	char **argv;           /* NULL: the item is not there */
	const char *setenv_fails; /* this variable cannot be set */
	char error[1024], info[1024]; /* the last of each */
	int nerrors, ninfos;
};

extern struct fake_spank fake_spank;
void fake_spank_reset(void);
/* The task's variable, or NULL. */
const char *fake_spank_env(const char *name);

#endif
