/* plugstack.conf's format, as Slurm's spank loader reads it (22.05): one
 * plugin per line, "required" or "optional", the plugin's path, its
 * arguments split on white space; "include GLOB" (relative to the including
 * file's directory); '#' starts a comment anywhere on a line. */
#include "plugstack.h"

#include <ctype.h>
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Includes nest; a file including itself must not loop forever. */
#define MAX_DEPTH 16

static int read_file(const char *file, pm_plugline_fn fn, void *arg, int depth);

static int include(const char *file, unsigned lineno, const char *pattern,
		   pm_plugline_fn fn, void *arg, int depth)
{
	char path[4096];
	glob_t g;
	size_t i;
	int bad = 0, r;

	if (pattern[0] == '/') {
		snprintf(path, sizeof(path), "%s", pattern);
	} else {
		const char *slash = strrchr(file, '/');
		int dlen = slash ? (int)(slash - file) : 1;

		snprintf(path, sizeof(path), "%.*s/%s", dlen, slash ? file : ".", pattern);
	}
	r = glob(path, GLOB_ERR, NULL, &g);
	if (r == GLOB_NOMATCH)
		return 0; /* Slurm accepts an include that matches nothing */
	if (r) {
		fprintf(stderr, "%s:%u: include %s: cannot list the files: %s\n", file, lineno,
			path, strerror(errno));
		return 1;
	}
	for (i = 0; i < g.gl_pathc; i++)
		bad += read_file(g.gl_pathv[i], fn, arg, depth + 1);
	globfree(&g);
	return bad;
}

static int line(const char *file, unsigned lineno, char *s, pm_plugline_fn fn, void *arg,
		int depth)
{
	char *argv[PM_PLUG_MAXARGS + 2], *save = NULL, *tok;
	int n = 0;
	struct pm_plugline l = { .file = file, .line = lineno };

	if ((tok = strchr(s, '#')))
		*tok = '\0';
	for (tok = strtok_r(s, " \t\r\n", &save); tok; tok = strtok_r(NULL, " \t\r\n", &save)) {
		if (n == PM_PLUG_MAXARGS + 2) {
			fprintf(stderr, "%s:%u: more than %d arguments\n", file, lineno,
				PM_PLUG_MAXARGS);
			return 1;
		}
		argv[n++] = tok;
	}
	if (n == 0)
		return 0;
	if (!strcasecmp(argv[0], "include")) {
		if (n != 2) {
			fprintf(stderr, "%s:%u: include takes one file pattern\n", file, lineno);
			return 1;
		}
		return include(file, lineno, argv[1], fn, arg, depth);
	}
	if (strcasecmp(argv[0], "required") && strcasecmp(argv[0], "optional")) {
		fprintf(stderr,
			"%s:%u: '%s': a line starts with required, optional or include\n",
			file, lineno, argv[0]);
		return 1;
	}
	if (n < 2) {
		fprintf(stderr, "%s:%u: %s names no plugin\n", file, lineno, argv[0]);
		return 1;
	}
	l.required = !strcasecmp(argv[0], "required");
	l.path = argv[1];
	l.argc = n - 2;
	l.argv = argv + 2;
	return fn(&l, arg);
}

static int read_file(const char *file, pm_plugline_fn fn, void *arg, int depth)
{
	FILE *f;
	char *buf = NULL;
	size_t cap = 0;
	unsigned lineno = 0;
	int bad = 0;

	if (depth > MAX_DEPTH) {
		fprintf(stderr, "%s: includes nest deeper than %d (a loop?)\n", file, MAX_DEPTH);
		return 1;
	}
	f = strcmp(file, "-") ? fopen(file, "r") : stdin;
	if (!f) {
		fprintf(stderr, "%s: cannot read: %s\n", file, strerror(errno));
		return 1;
	}
	while (getline(&buf, &cap, f) >= 0)
		bad += line(f == stdin ? "<stdin>" : file, ++lineno, buf, fn, arg, depth);
	if (ferror(f)) {
		fprintf(stderr, "%s: read error: %s\n", file, strerror(errno));
		bad++;
	}
	free(buf);
	if (f != stdin)
		fclose(f);
	return bad;
}

int pm_plugstack_read(const char *file, pm_plugline_fn fn, void *arg)
{
	return read_file(file, fn, arg, 0);
}

int pm_plugstack_default(const char *confdir, char *buf, size_t len)
{
	const char *conf = getenv("SLURM_CONF");
	char def[4096], *l = NULL;
	size_t cap = 0;
	FILE *f;
	int found = 0;

	if (!conf || !*conf) {
		snprintf(def, sizeof(def), "%s/slurm.conf", confdir);
		conf = def;
	}
	/* slurm.conf: "PlugStackConfig=PATH", key case-insensitive. */
	if ((f = fopen(conf, "r"))) {
		while (!found && getline(&l, &cap, f) >= 0) {
			char *p = l, *e;

			while (isspace((unsigned char)*p))
				p++;
			if (strncasecmp(p, "PlugStackConfig=", 16))
				continue;
			p += 16;
			for (e = p; *e && !isspace((unsigned char)*e) && *e != '#'; e++)
				;
			*e = '\0';
			found = snprintf(buf, len, "%s", p) < (int)len;
		}
		free(l);
		fclose(f);
	}
	if (!found) {
		const char *slash = strrchr(conf, '/');
		int dlen = slash ? (int)(slash - conf) : 1;

		if (snprintf(buf, len, "%.*s/plugstack.conf", dlen, slash ? conf : ".") >= (int)len)
			return -1;
	}
	return 0;
}
