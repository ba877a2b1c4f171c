/* procmgr: see and steer procmgr on this node. */
#include <stdio.h>
#include <string.h>

#include "cmd.h"


struct cmd {
	const char *name;
	int (*fn)(int, char **);
	const char *help;
};

static const struct cmd cmds[] = {
	{ "status", pm_cmd_status, "every rank and node of a step, through its control tree" },
	{ "events", pm_cmd_events, "a step's event log (--follow)" },
	{ "stacks", pm_cmd_stacks, "the ranks' stacks, taken now, grouped" },
	{ "restart", pm_cmd_restart, "restart every rank of a step now" },
	{ "stop", pm_cmd_stop, "end a step cleanly" },
	{ "bind", pm_cmd_bind, "show the affinity plan of each local rank (--explain)" },
	{ "health", pm_cmd_health, "run node health checks here" },
	{ "check-config", pm_cmd_check, "check procmgr's line in plugstack.conf" },
	{ "timeline", pm_cmd_timeline, "draw a step's timeline from its events (--svg FILE)" },
	{ "goodput", pm_cmd_goodput, "a step's goodput and each incident's lost seconds (--json)" },
	{ "version", pm_cmd_version, "print procmgr's version (also --version)" },
	{ "help", NULL, "this list, or a command's usage (help COMMAND)" },
};
#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

static void usage(FILE *f)
{
	size_t i;
	fprintf(f, "usage: procmgr COMMAND [ARGS]\n\ncommands:\n");
	for (i = 0; i < NCMDS; i++)
		fprintf(f, "  %-13s %s\n", cmds[i].name, cmds[i].help);
}

static const struct cmd *find(const char *name)
{
	size_t i;

	for (i = 0; i < NCMDS; i++)
		if (!strcmp(name, cmds[i].name))
			return &cmds[i];
	fprintf(stderr, "procmgr: unknown command '%s'\n", name);
	usage(stderr);
	return NULL;
}

/* help COMMAND is COMMAND --help: each command keeps its own usage text. */
static int help(int argc, char **argv)
{
	const struct cmd *c;
	char *av[3] = { NULL, "--help", NULL };

	if (argc < 2) {
		usage(stdout);
		return 0;
	}
	if (argc > 2) {
		fprintf(stderr, "usage: procmgr help [COMMAND]\n");
		return 2;
	}
	if (!(c = find(argv[1])))
		return 2;
	if (!c->fn) {
		usage(stdout);
		return 0;
	}
	av[0] = argv[1];
	return c->fn(2, av);
}

int main(int argc, char **argv)
{
	const struct cmd *c;

	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V"))
		return pm_cmd_version(1, argv + 1);
	if (!(c = find(argv[1])))
		return 2;
	return c->fn ? c->fn(argc - 1, argv + 1) : help(argc - 1, argv + 1);
}
