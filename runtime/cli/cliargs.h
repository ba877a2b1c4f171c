/* The command line the step commands share (status, events, stacks):
 * -h/--help, their flags from a table, and one JOBID[.STEP]. Written once,
 * so that every command says a bad argument the same way. */
#ifndef PM_CLIARGS_H
#define PM_CLIARGS_H

#include <stdbool.h>
#include <stddef.h>

struct pm_cli_opt {
	const char *name;   /* "--json" */
	const char *alt;    /* "-f", or NULL */
	int *flag;          /* set to 1 when given; NULL if it takes a value */
	const char **value; /* the next argument, for an option that takes one */
	/* A value's check, as it is read: 0, or -1 with why. */
	int (*check)(const char *value, char *why, size_t len);
};

/* opts ends with a { NULL } row. *id: the JOBID[.STEP] given, or NULL.
 * 0: parsed; 1: the usage was printed on stdout (exit 0); 2: a bad
 * argument, or no step where id_needed, was said on stderr with the
 * usage (exit 2). */
int pm_cli_args(const char *cmd, int argc, char **argv, const struct pm_cli_opt *opts,
		const char **id, bool id_needed, const char *usage);

#endif
