/* procmgr timeline [JOBID[.STEP]] [--events FILE] (--svg FILE | --html FILE):
 * a step's event log as a picture (timeline.c draws it). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "common/goodput.h"
#include "evlog.h"
#include "timeline.h"

#define USAGE "usage: procmgr timeline [JOBID[.STEP]] [--events FILE] [--state-dir DIR] " \
	"(--svg FILE | --html FILE)\n"

static void help(FILE *f)
{
	fprintf(f, USAGE
		"\nDraws a step's timeline: its generations as bands, its nodes as rows, and\n"
		"failures, hangs, health failures, lost and replaced nodes, stops and starts\n"
		"as marks on a time axis (each mark's details as its tooltip).\n\n"
		"  JOBID[.STEP]     the step (STEP 0 if left out); its event log is\n"
		"                   STATE_DIR/JOBID/STEP.events.jsonl on the step's first node\n"
		"  --events FILE    read this event log instead ('-': standard input)\n"
		"  --state-dir DIR  the site's state_dir (default: plugstack.conf's, else\n"
		"                   /var/spool/procmgr)\n"
		"  --svg FILE       write an SVG picture ('-': standard output)\n"
		"  --html FILE      write an HTML page holding it\n");
}

/* The step's event log on this node (its first node, or a state_dir
 * shared by the nodes), read as procmgr events reads it (evlog.h). */
static FILE *open_step_events(const char *spec, const char *state_dir, char *path, size_t len)
{
	char dir[PATH_MAX];
	unsigned job, step;
	FILE *f;

	if (pm_evlog_parse_id(spec, &job, &step)) {
		fprintf(stderr, "procmgr timeline: '%s' is not JOBID or JOBID.STEP\n", spec);
		return NULL;
	}
	pm_evlog_state_dir(state_dir, dir, sizeof(dir));
	f = pm_evlog_open(dir, job, step, path, len);
	if (!f && !path[0])
		fprintf(stderr, "procmgr timeline: state_dir %s is too long\n", dir);
	return f;
}

int pm_cmd_timeline(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "events", required_argument, NULL, 'e' },
		{ "state-dir", required_argument, NULL, 'd' },
		{ "svg", required_argument, NULL, 's' },
		{ "html", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *events = NULL, *state_dir = NULL, *outp = NULL, *spec = NULL;
	struct pm_tl_opts o = { 0 };
	struct pm_tl_event *ev = NULL;
	struct pm_gp_tl gtl = { 0 };
	struct pm_gp_result gp = { 0 };
	bool have_gp = false;
	char path[PATH_MAX] = "", title[PATH_MAX + 32], *line = NULL;
	size_t cap = 0;
	int c, n = 0, max = 0, bad = 0, rc = 1;
	ssize_t len;
	FILE *in, *out;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'e': events = optarg; break;
		case 'd': state_dir = optarg; break;
		case 's':
		case 'H':
			/* One picture a run: the last of two must not silently win. */
			if (outp) {
				fprintf(stderr, "procmgr timeline: --svg and --html: one picture "
					"at a time (run it once for each)\n" USAGE);
				return 2;
			}
			outp = optarg;
			o.html = c == 'H';
			break;
		case 'h': help(stdout); return 0;
		default: fputs(USAGE, stderr); return 2;
		}
	}
	if (optind < argc)
		spec = argv[optind++];
	if (optind < argc || !outp || (!spec && !events)) {
		fprintf(stderr, "procmgr timeline: %s\n" USAGE, optind < argc ? "one step at a time" :
			!outp ? "say where the picture goes: --svg FILE or --html FILE" :
			"say which step: JOBID[.STEP] or --events FILE");
		return 2;
	}
	if (events) {
		snprintf(path, sizeof(path), "%s", events);
		in = strcmp(events, "-") ? fopen(events, "r") : stdin;
	} else {
		in = open_step_events(spec, state_dir, path, sizeof(path));
		if (!in && !path[0])
			return 2;
	}
	if (!in) {
		fprintf(stderr, "procmgr timeline: %s: %s\n", path, strerror(errno));
		return 1;
	}
	while ((len = getline(&line, &cap, in)) > 0) {
		if (n == max) {
			struct pm_tl_event *m = realloc(ev, (size_t)(max ? max * 2 : 64) * sizeof(*ev));
			if (!m) {
				fprintf(stderr, "procmgr timeline: %s\n", strerror(errno));
				goto out;
			}
			ev = m;
			max = max ? max * 2 : 64;
		}
		/* goodput's phases too; without them the picture is the same */
		(void)pm_gp_line(&gtl, line);
		if (pm_tl_parse_line(line, &ev[n]) == 0) {
			/* A heartbeat's step (goodput's input): hundreds, no mark each. */
			if (strcmp(ev[n].name, "progress"))
				n++;
		}
		else if (len > 1)
			bad++;
	}
	if (!n) {
		fprintf(stderr, "procmgr timeline: %s: no events%s\n", path,
			bad ? " (no line of it is an event of procmgr's log)" : "");
		goto out;
	}
	if (bad)
		fprintf(stderr, "procmgr timeline: %s: %d line%s skipped: not an event\n", path, bad,
			bad == 1 ? "" : "s");
	if (spec)
		snprintf(title, sizeof(title), "procmgr: step %s%s", spec, strchr(spec, '.') ? "" : ".0");
	else
		snprintf(title, sizeof(title), "procmgr: %s", path);
	o.title = title;
	if (pm_gp_compute(&gtl, ev[n - 1].t, &gp) == 0) {
		have_gp = true;
		o.gp = &gp;
	}
	out = strcmp(outp, "-") ? fopen(outp, "w") : stdout;
	if (!out) {
		fprintf(stderr, "procmgr timeline: %s: %s\n", outp, strerror(errno));
		goto out;
	}
	pm_tl_render(ev, n, &o, out);
	if ((out != stdout && fclose(out)) || (out == stdout && fflush(out))) {
		fprintf(stderr, "procmgr timeline: %s: %s\n", outp, strerror(errno));
		goto out;
	}
	rc = 0;
out:
	if (in != stdin)
		fclose(in);
	free(line);
	free(ev);
	pm_gp_tl_free(&gtl);
	if (have_gp)
		pm_gp_result_free(&gp);
	return rc;
}
