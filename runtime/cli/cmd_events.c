/* procmgr events JOBID[.STEP] [--follow] [--json]: the step's event log,
 * read by its root procmgrd (it lives in state_dir on the step's first
 * node), so it works from any node where Slurm's commands do. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cliargs.h"
#include "client.h"
#include "cmd.h"

#define USAGE \
	"usage: procmgr events JOBID[.STEP] [--follow] [--json]\n" \
	"  the step's event log, one event per line (\"TIME EVENT FIELDS\"); --json: the\n" \
	"  log's own JSON lines. --follow: wait for more until the step ends.\n"

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

static int print(void *arg, const struct pm_msg *m)
{
	struct reader *r = arg;
	char text[PM_WIRE_TEXT_MAX + 1], *line, *save = NULL;

	memcpy(text, m->text, (size_t)m->text_len + 1);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (r->json)
			printf("%s\n", line);
		else
			human(line);
	fflush(stdout);
	return 0;
}

int pm_cmd_events(int argc, char **argv)
{
	const char *id = NULL;
	struct reader r = { 0 };
	struct pm_target t;
	struct pm_msg end;
	char why[1024], off[32] = "0";
	int follow = 0, rc;

	const struct pm_cli_opt opts[] = { { "--json", NULL, &r.json, NULL, NULL },
					   { "--follow", "-f", &follow, NULL, NULL }, { NULL } };

	rc = pm_cli_args("events", argc, argv, opts, &id, true, USAGE);
	if (rc)
		return rc == 1 ? 0 : rc;
	if (pm_client_resolve("events", id, &t))
		return 1;
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
