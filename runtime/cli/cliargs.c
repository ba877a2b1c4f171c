#include "cliargs.h"

#include <stdio.h>
#include <string.h>

static const struct pm_cli_opt *find(const struct pm_cli_opt *opts, const char *arg)
{
	for (; opts->name; opts++)
		if (!strcmp(arg, opts->name) || (opts->alt && !strcmp(arg, opts->alt)))
			return opts;
	return NULL;
}

int pm_cli_args(const char *cmd, int argc, char **argv, const struct pm_cli_opt *opts,
		const char **id, bool id_needed, const char *usage)
{
	int i;

	*id = NULL;
	for (i = 1; i < argc; i++) {
		const struct pm_cli_opt *o = find(opts, argv[i]);

		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(usage, stdout);
			return 1;
		} else if (o && o->flag) {
			*o->flag = 1;
		} else if (o && o->value && i + 1 < argc) {
			char why[512];
			*o->value = argv[++i];
			if (o->check && o->check(*o->value, why, sizeof(why))) {
				fprintf(stderr, "procmgr %s: %s: %s\n", cmd, o->name, why);
				return 2;
			}
		} else if (argv[i][0] != '-' && !*id) {
			*id = argv[i];
		} else {
			fprintf(stderr, "procmgr %s: unexpected argument '%.64s'\n%s", cmd, argv[i],
				usage);
			return 2;
		}
	}
	if (id_needed && !*id) {
		fprintf(stderr, "procmgr %s: which step? JOBID[.STEP] is needed\n%s", cmd, usage);
		return 2;
	}
	return 0;
}
