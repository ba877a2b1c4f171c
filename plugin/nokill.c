/* Spares need the step and the job to outlive a node: Slurm kills a step,
 * and without --no-kill the whole job, when a node goes DOWN
 * (docs/slurm-notes.md, "Node loss"). Checked in srun before launch, where the
 * user can still add what is missing. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin.h"

/* srun's own options: its command line up to the step's command (whose
 * argc Slurm gives us), so that a "-k" of the command does not count. */
static bool srun_no_kill(int cmd_argc)
{
	static char buf[65536];
	const char *e = getenv("SLURM_NO_KILL");
	int fd, i, argc = 0;
	ssize_t len;
	char *p;
	bool found = false;

	if (e && *e && strcmp(e, "0") && strcasecmp(e, "no"))
		return true;
	fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return false;
	buf[len] = '\0';
	for (p = buf; p < buf + len; p += strlen(p) + 1)
		argc++;
	for (p = buf, i = 0; p < buf + len && i < argc - cmd_argc; p += strlen(p) + 1, i++) {
		if (!strcmp(p, "-k") || !strcmp(p, "--no-kill") || !strncmp(p, "--no-kill=", 10))
			found = true;
	}
	return found;
}

int pm_local_init(spank_t sp)
{
	int argc = 0;
	char **argv = NULL;
	unsigned n = pm_g.resolved.spares;

	if (!pm_g.resolved.enabled || !n)
		return 0;
	if (spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS)
		argc = 0;
	if (!srun_no_kill(argc)) {
		pm_err("--procmgr-spares=%u needs srun --no-kill: without it Slurm ends the "
		       "step when a node fails, before a spare can take its place; add "
		       "--no-kill to this srun (and to the job: sbatch or salloc --no-kill)", n);
		return -1;
	}
	return 0;
}
