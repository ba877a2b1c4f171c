/* procmgr check-config [FILE|-]: procmgr's plugstack.conf line(s), checked by
 * the parser the plugin's slurm_spank_init uses (pm_site_parse), and the
 * files the line names, before an admin enables it on a cluster. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check_cluster.h"
#include "cmd.h"
#include "plugstack.h"
#include "common/contract.h"
#include "common/options.h"

#define PLUGIN_FILE "procmgr.so"

struct check {
	unsigned found; /* procmgr.so lines seen */
};

static const char *base(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

static int need_exec(const struct pm_plugline *l, const char *what, const char *path)
{
	if (access(path, X_OK) == 0)
		return 0;
	fprintf(stderr, "%s:%u: %s %s: %s\n", l->file, l->line, what, path, strerror(errno));
	return 1;
}

static const char *so_path(const struct pm_plugline *l, char *so, size_t len)
{
	if (l->path[0] == '/')
		snprintf(so, len, "%s", l->path);
	else
		snprintf(so, len, "%s/%s", PM_SLURMPLUGINDIR, l->path);
	return so;
}

/* The plugin Slurm would load, and the programs it would start. */
static int check_files(const struct pm_plugline *l, const struct pm_site *s)
{
	char so[4096], rank[4096];
	const char *slash = strrchr(s->runtime, '/');
	int bad = 0;

	so_path(l, so, sizeof(so));
	if (access(so, R_OK)) {
		fprintf(stderr, "%s:%u: plugin %s: %s%s\n", l->file, l->line, so, strerror(errno),
			l->required ? " (required: every srun and sbatch would fail)" : "");
		bad++;
	}
	bad += need_exec(l, "runtime", s->runtime);
	/* The plugin takes procmgr-rank from runtime's directory (plugin/node.c). */
	snprintf(rank, sizeof(rank), "%.*s/%s", (int)(slash - s->runtime), s->runtime,
		 PM_RANK_PROGRAM);
	bad += need_exec(l, PM_RANK_PROGRAM " (beside runtime)", rank);
	return bad;
}

static int one_line(const struct pm_plugline *l, void *arg)
{
	struct check *c = arg;
	struct pm_site site;
	char err[PM_ERRLEN], where[4096], so[4096];

	if (strcmp(base(l->path), PLUGIN_FILE))
		return 0; /* another plugin's line: its arguments are not ours to judge */
	if (c->found++) {
		fprintf(stderr, "%s:%u: a second %s line: Slurm would load the plugin twice\n",
			l->file, l->line, PLUGIN_FILE);
		return 1;
	}
	snprintf(where, sizeof(where), "%s:%u", l->file, l->line);
	pm_site_init(&site);
	if (pm_site_parse(&site, l->argc, l->argv, where, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	if (check_files(l, &site))
		return 1;
	if (pm_check_cluster(where, so_path(l, so, sizeof(so)), &site))
		return 1;
	printf("%s: %s %s, %d argument%s: ok\n", where, l->required ? "required" : "optional",
	       l->path, l->argc, l->argc == 1 ? "" : "s");
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: procmgr check-config [FILE|-]\n"
		"  checks procmgr's line in a plugstack.conf (and the files it includes) with\n"
		"  the plugin's own parser, and that the plugin, procmgrd and procmgr-rank exist\n"
		"  FILE  a plugstack.conf, or one procmgr line; - reads standard input\n"
		"        (default: slurm.conf's PlugStackConfig, else plugstack.conf beside\n"
		"        slurm.conf; slurm.conf is $SLURM_CONF, else %s/slurm.conf)\n"
		"exit status: 0 ok, 1 a problem (told on standard error), 2 usage error\n",
		PM_SLURMCONFDIR);
}

int pm_cmd_check(int argc, char **argv)
{
	char file[4096];
	struct check c = { 0 };
	int bad;

	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return 0;
	}
	if (argc > 2 || (argc == 2 && argv[1][0] == '-' && argv[1][1])) {
		usage(stderr);
		return 2;
	}
	if (argc == 2)
		snprintf(file, sizeof(file), "%s", argv[1]);
	else if (pm_plugstack_default(PM_SLURMCONFDIR, file, sizeof(file))) {
		fprintf(stderr, "procmgr check-config: the path of plugstack.conf is too long\n");
		return 1;
	}
	bad = pm_plugstack_read(file, one_line, &c);
	if (!c.found && !bad) {
		fprintf(stderr, "%s: no %s line: procmgr is not enabled there\n",
			strcmp(file, "-") ? file : "<stdin>", PLUGIN_FILE);
		return 1;
	}
	if (bad)
		return 1;
	printf("ok\n");
	return 0;
}
