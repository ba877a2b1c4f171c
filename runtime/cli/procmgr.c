/* procmgr: see and steer procmgr on this node. */
#include <stdio.h>
#include <string.h>

#include "cmd.h"


struct cmd {
	const char *name;
	int (*fn)(int, char **);
	const char *help;
};

static void usage(FILE *f, const struct cmd *cmds, size_t n)
{
	size_t i;
	fprintf(f, "usage: procmgr COMMAND [ARGS]\n\ncommands:\n");
	for (i = 0; i < n; i++)
		fprintf(f, "  %-8s %s\n", cmds[i].name, cmds[i].help);
}

int main(int argc, char **argv)
{
	const struct cmd cmds[] = {
		{ "bind", pm_cmd_bind, "show the affinity plan of each local rank (--explain)" },
		{ "health", pm_cmd_health, "run node health checks here" },
	};
	const size_t n = sizeof(cmds) / sizeof(cmds[0]);
	size_t i;

	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(argc < 2 ? stderr : stdout, cmds, n);
		return argc < 2 ? 2 : 0;
	}
	for (i = 0; i < n; i++) {
		if (strcmp(argv[1], cmds[i].name))
			continue;
		return cmds[i].fn(argc - 1, argv + 1);
	}
	fprintf(stderr, "procmgr: unknown command '%s'\n", argv[1]);
	usage(stderr, cmds, n);
	return 2;
}
