/* Reading plugstack.conf as Slurm reads it: "required|optional PATH ARGS..."
 * lines, "include GLOB" lines, '#' comments. Only the file format: what a
 * plugin's arguments mean is for its own parser. */
#ifndef PM_PLUGSTACK_H
#define PM_PLUGSTACK_H

#include <stdbool.h>
#include <stddef.h>

#define PM_PLUG_MAXARGS 128

/* One plugin line, valid during the callback only. */
struct pm_plugline {
	const char *file;
	unsigned line;
	bool required;
	const char *path; /* as written: absolute, or relative to Slurm's PluginDir */
	int argc;
	char **argv;
};

typedef int (*pm_plugline_fn)(const struct pm_plugline *l, void *arg);

/* Calls fn for each plugin line of file ("-": stdin) and of the files it
 * includes. A file that cannot be read or a line Slurm would refuse is
 * reported on stderr here, once. Returns the number of such problems plus
 * the sum of fn's returns. */
int pm_plugstack_read(const char *file, pm_plugline_fn fn, void *arg);

/* The plugstack.conf Slurm uses: slurm.conf's PlugStackConfig, else
 * plugstack.conf beside slurm.conf ($SLURM_CONF, else confdir/slurm.conf). */
int pm_plugstack_default(const char *confdir, char *buf, size_t len);

#endif
