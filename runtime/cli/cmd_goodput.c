/* procmgr goodput JOBID[.STEP] [--events FILE] [--state-dir DIR] [--json]:
 * a step's goodput and where each incident's seconds went, from its event
 * log (common/goodput.c computes; this file reads the log), during or
 * after the step: the log stays in state_dir/JOB on the step's first node
 * until the job ends. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "cmd.h"
#include "common/goodput.h"
#include "evlog.h"

#define USAGE "usage: procmgr goodput JOBID[.STEP] [--json] [--state-dir DIR]\n" \
	"       procmgr goodput --events FILE [--json]\n"

static void help(FILE *f)
{
	fprintf(f, USAGE
		"\nA step's goodput (useful training time over wall time) and, for every\n"
		"incident, the seconds lost to detection, stop, start, re-initialisation,\n"
		"recompute and slowdown, from its event log (the heartbeats' steps the root\n"
		"wrote there). Works while the step runs and after it, until the job ends.\n\n"
		"  JOBID[.STEP]     the step (STEP 0 if left out); its event log is\n"
		"                   STATE_DIR/JOBID/STEP.events.jsonl on the step's first node\n"
		"  --events FILE    read this event log instead ('-': standard input)\n"
		"  --state-dir DIR  the site's state_dir (default: plugstack.conf's, else\n"
		"                   /var/spool/procmgr)\n"
		"  --json           one JSON object (fields in procmgr(1))\n");
}

int pm_cmd_goodput(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "events", required_argument, NULL, 'e' },
		{ "state-dir", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *events = NULL, *state_dir = NULL, *spec = NULL;
	char path[PATH_MAX] = "", dir[PATH_MAX], where[512], *line = NULL, out[65536];
	struct pm_gp_tl tl = { 0 };
	struct pm_gp_result r = { 0 };
	unsigned job = 0, step = 0;
	int c, json = 0, bad = 0, rc = 1;
	size_t cap = 0;
	ssize_t len;
	struct timeval now;
	FILE *in;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'e': events = optarg; break;
		case 'd': state_dir = optarg; break;
		case 'j': json = 1; break;
		case 'h': help(stdout); return 0;
		default: fputs(USAGE, stderr); return 2;
		}
	}
	if (optind < argc)
		spec = argv[optind++];
	if (optind < argc || (!spec && !events) || (spec && events)) {
		fprintf(stderr, "procmgr goodput: %s\n" USAGE, optind < argc ? "one step at a time" :
			spec ? "JOBID[.STEP] or --events FILE, not both" :
			"say which step: JOBID[.STEP] or --events FILE");
		return 2;
	}
	if (spec && pm_evlog_parse_id(spec, &job, &step)) {
		fprintf(stderr, "procmgr goodput: '%s' is not JOBID or JOBID.STEP\n", spec);
		return 2;
	}
	if (events) {
		snprintf(path, sizeof(path), "%s", events);
		in = strcmp(events, "-") ? fopen(events, "r") : stdin;
		if (!in) {
			fprintf(stderr, "procmgr goodput: %s: %s\n", path, strerror(errno));
			return 1;
		}
	} else {
		pm_evlog_state_dir(state_dir, dir, sizeof(dir));
		in = pm_evlog_open(dir, job, step, path, sizeof(path));
		if (!in) {
			int e = errno;
			if (!path[0]) {
				fprintf(stderr, "procmgr goodput: state_dir %s is too long\n", dir);
				return 2;
			}
			if (e != ENOENT) {
				fprintf(stderr, "procmgr goodput: cannot read step %u.%u's log %s: %s\n",
					job, step, path, e == EINVAL ? "not a regular file" : strerror(e));
				return 1;
			}
			pm_evlog_where(job, path, where, sizeof(where));
			fprintf(stderr, "procmgr goodput: step %u.%u's log is not on this node: %s\n",
				job, step, where);
			return 1;
		}
	}
	while ((len = getline(&line, &cap, in)) > 0) {
		int k = pm_gp_line(&tl, line);
		if (k < 0) {
			fprintf(stderr, "procmgr goodput: %s\n", strerror(errno));
			goto out;
		}
		bad += k > 0 && len > 1;
	}
	if (bad)
		fprintf(stderr, "procmgr goodput: %s: %d line%s skipped: not an event\n", path, bad,
			bad == 1 ? "" : "s");
	gettimeofday(&now, NULL);
	if (pm_gp_compute(&tl, (double)now.tv_sec + now.tv_usec / 1e6, &r)) {
		fprintf(stderr, "procmgr goodput: %s\n", strerror(errno));
		goto out;
	}
	if ((json ? pm_gp_json(&r, out, sizeof(out)) : pm_gp_text(&r, out, sizeof(out)))) {
		fprintf(stderr, "procmgr goodput: too many incidents to show (%u)\n", r.nincidents);
		goto out;
	}
	if (json) {
		printf("%s\n", out);
	} else {
		unsigned i;
		int j;
		/* "procmgr: " is for srun's stderr, where the line comes from. */
		printf("%s\n", out + strlen("procmgr: "));
		if (r.nincidents)
			printf("%-5s %-10s %-9s %-8s %-8s %-8s %-8s %-8s %-9s %-8s\n", "GEN", "CAUSE",
			       "LOST", "DETECT", "STOP", "START", "REINIT", "RECOMP", "SLOWDOWN", "AT");
		for (i = 0; i < r.nincidents; i++) {
			const struct pm_gp_incident *in_ = &r.inc[i];
			char at[32];
			time_t t = (time_t)in_->at;
			struct tm tm;
			printf("%-5u %-10s ", in_->gen, in_->cause);
			if (in_->lost < 0)
				printf("%-9s ", "?");
			else
				printf("%-9.2f ", in_->lost);
			for (j = 0; j < PM_GP_NPHASES; j++) {
				if (in_->phase[j] < 0)
					printf("%-*s ", j == PM_GP_SLOWDOWN ? 9 : 8, "?");
				else
					printf("%-*.2f ", j == PM_GP_SLOWDOWN ? 9 : 8, in_->phase[j]);
			}
			strftime(at, sizeof(at), "%H:%M:%S", localtime_r(&t, &tm));
			printf("%s\n", at);
		}
		if (r.nincidents && !r.known)
			printf("(?: cannot be known without heartbeats with a step)\n");
	}
	rc = 0;
out:
	if (in != stdin)
		fclose(in);
	free(line);
	pm_gp_tl_free(&tl);
	pm_gp_result_free(&r);
	return rc;
}
