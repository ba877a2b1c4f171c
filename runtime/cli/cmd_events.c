/* procmgr events JOBID[.STEP] [--follow] [--json] [--state-dir DIR]: the
 * step's event log, read by its root procmgrd (it lives in state_dir on the
 * step's first node), so it works from any node where Slurm's commands do;
 * once the step has ended, read from this node's disk (evlog.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cliargs.h"
#include "client.h"
#include "cmd.h"
#include "evlog.h"

#define USAGE \
	"usage: procmgr events JOBID[.STEP] [--follow] [--json] [--state-dir DIR]\n" \
	"  the step's event log, one event per line (\"TIME EVENT FIELDS\"); --json: the\n" \
	"  log's own JSON lines. --follow: wait for more until the step ends.\n" \
	"  After the step: read on the step's first node until the job ends (--state-dir:\n" \
	"  the site's state_dir, default plugstack.conf's).\n"

struct reader {
	int json;
};

/* {"time":1.5,"step":"12.0","event":"start","gen":1,"by":"x"} ->
 * "1.500000 start gen=1 by="x"": the members after the event, keys
 * unquoted. */
static void human(const char *line)
{
	const char *ev = strstr(line, "\"event\":\""), *t = strstr(line, "\"time\":");
	const char *p;
	size_t n;
	int in_str = 0, key = 0;

	if (!ev) {
		printf("%s\n", line);
		return;
	}
	ev += 9;
	n = strcspn(ev, "\"");
	if (t)
		printf("%.*s ", (int)strcspn(t + 7, ",}"), t + 7);
	printf("%.*s", (int)n, ev);
	for (p = ev + n + 1; *p && !(!in_str && *p == '}' && !p[1]); p++) {
		if (!in_str && *p == ',') {
			putchar(' ');
			key = 1;
		} else if (key && *p == '"') {
			continue; /* a key's quotes */
		} else if (key && *p == ':') {
			putchar('=');
			key = 0;
		} else {
			if (*p == '"' && p[-1] != '\\')
				in_str = !in_str;
			putchar(*p);
		}
	}
	putchar('\n');
}

static void print_line(const struct reader *r, char *line)
{
	char *p;

	/* The file is the job user's: no terminal control from it. */
	for (p = line; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	if (r->json)
		printf("%s\n", line);
	else
		human(line);
}

static int print(void *arg, const struct pm_msg *m)
{
	struct reader *r = arg;
	char text[PM_WIRE_TEXT_MAX + 1], *line, *save = NULL;

	memcpy(text, m->text, (size_t)m->text_len + 1);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		print_line(r, line);
	fflush(stdout);
	return 0;
}

/* The step is not running (why): its log from this node's disk, else
 * where it is. */
static int from_disk(const struct reader *r, const char *state_dir, unsigned job,
		     unsigned step, const char *why)
{
	char dir[4096], path[4200], where[4096 + 512], *line = NULL;
	size_t cap = 0;
	ssize_t n;
	FILE *f;

	pm_evlog_state_dir(state_dir, dir, sizeof(dir));
	f = pm_evlog_open(dir, job, step, path, sizeof(path));
	if (!f) {
		int e = errno;
		if (e != ENOENT) {
			fprintf(stderr, "procmgr events: %s; cannot read its log %s: %s\n", why,
				path[0] ? path : dir, e == EINVAL ? "not a regular file" :
				strerror(e));
			return 1;
		}
		pm_evlog_where(job, path, where, sizeof(where));
		fprintf(stderr, "procmgr events: %s; its log is not on this node: %s\n", why,
			where);
		return 1;
	}
	while ((n = getline(&line, &cap, f)) > 0) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0])
			print_line(r, line);
	}
	free(line);
	fclose(f);
	return 0;
}

int pm_cmd_events(int argc, char **argv)
{
	const char *id = NULL, *state_dir = NULL;
	struct reader r = { 0 };
	unsigned job, step;
	int has_step;
	struct pm_target t;
	struct pm_msg end;
	char why[1024], off[32] = "0";
	int follow = 0, rc;

	const struct pm_cli_opt opts[] = { { "--json", NULL, &r.json, NULL, NULL },
					   { "--follow", "-f", &follow, NULL, NULL },
					   { "--state-dir", NULL, NULL, &state_dir, NULL },
					   { NULL } };

	rc = pm_cli_args("events", argc, argv, opts, &id, true, USAGE);
	if (rc)
		return rc == 1 ? 0 : rc;
	if (pm_client_parse_id(id, &job, &step, &has_step, why, sizeof(why))) {
		fprintf(stderr, "procmgr events: %s\n", why);
		return 2;
	}
	/* An ended step (following, one that has ended: nothing more comes). */
	if (pm_client_target(job, step, &t, why, sizeof(why)))
		return from_disk(&r, state_dir, job, step, why);
	/* Following, the answer has no end: the step's end closes it. */
	snprintf(off, sizeof(off), "%s0", follow ? "follow:" : "");
	rc = pm_client_ask(&t, PM_Q_EVENTS, off, follow ? 0xffffffffu : 10000, print, &r, &end,
			   why, sizeof(why));
	if (rc == 1 && follow)
		return 0;
	if (rc) {
		fprintf(stderr, "procmgr events: %s\n", why);
		return 1;
	}
	if (end.status) {
		fprintf(stderr, "procmgr events: %s\n", end.text);
		return 1;
	}
	return 0;
}
