#include "options.h"
#include "checkspec.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "text.h"
#include "warm.h"

/* srun --help has no common legend: each duration option ends with the
 * forms, short. A bare number is seconds, not Slurm's minutes. */
/* A number's macro as text, for the help that names a default. */
#define PM_STR_(x) #x
#define PM_STR(x) PM_STR_(x)
#define PM_TIME_HELP "; TIME: seconds, 90s, 5m, 2h, 1d, M:S, H:M:S or D-H[:M[:S]]"

const struct pm_optdesc pm_optdescs[] = {
	{ "", NULL, "Supervise this step with procmgr (site defaults)" },
	{ "restart", "never|on-failure[:N]|always[:N]",
	  "Restart all ranks together when one fails (implies --procmgr)" },
	{ "restart-delay", "TIME",
	  "First delay before a restart; later ones double, capped at 60 s" PM_TIME_HELP },
	{ "grace", "TIME",
	  "Time between SIGTERM and SIGKILL when stopping ranks" PM_TIME_HELP },
	{ "bind", "none|closest|LIST",
	  "Bind each rank to its closest gpu,nic,cpu,mem (LIST: a subset; mem-strict for a strict memory policy)" },
	{ "health", "LIST", "Node health checks: " PM_CHECK_GRAMMAR },
	{ "health-interval", "TIME",
	  "Re-run the health checks this often while running" PM_TIME_HELP },
	{ "hang-timeout", "TIME[,FIRST]",
	  "A rank that shows no progress for this long is hung (see PROCMGR_HEARTBEAT); "
	  "FIRST: also one that has not beaten FIRST after its start" PM_TIME_HELP },
	{ "spares", "N",
	  "Keep N of the step's nodes as hot spares: a lost node's ranks move to one "
	  "(needs --no-kill on the job and the step)" },
	{ "output-dir", "DIR",
	  "Also write each rank's stdout and stderr to DIR/rank.N.out and DIR/rank.N.err "
	  "(an absolute path, created if missing): kept when srun is lost with its node" },
	{ "warm", "on|off|python:MOD[,MOD...]",
	  "Keep each rank's next generation started ahead of time, waiting at a ready point "
	  "(on: the program says ready, see procmgr.ready(); python:MODS: a server that imported "
	  "MODS runs an unmodified script)" },
	{ "verbose", NULL, "Also print procmgr's options, each generation's start and the end" },
	{ "stack-timeout", "TIME",
	  "At a hang, the bound on taking every rank's stack before the restart "
	  "(default 10 s; a stack not taken says why)" PM_TIME_HELP },
	{ "slow", "on|off|INTERVAL[,THRESHOLD%]",
	  "Find a node slower than the others (heartbeats with the step; see PROCMGR_HEARTBEAT): "
	  "a summary every INTERVAL (on: " PM_STR(PM_DEFAULT_SLOW_INTERVAL_S) " s), flagged THRESHOLD% "
	  "(on: " PM_STR(PM_DEFAULT_SLOW_THRESHOLD_PCT) "%) over the job's median" PM_TIME_HELP },
	{ "evict-slow", NULL,
	  "Replace a node found slow by a spare (implies --procmgr-slow; needs --procmgr-spares)" },
	{ "sweep", "FILE",
	  "Run the trials of FILE (a command per line, '[NAME ranks=N]' in front) on the "
	  "step's task slots, each supervised on its own" },
	{ "trial-ranks", "N", "Ranks of a sweep's trial whose line does not say (default 1)" },
};
const size_t pm_noptdescs = sizeof(pm_optdescs) / sizeof(pm_optdescs[0]);

void pm_opts_init(struct pm_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->restart = PM_RESTART_NEVER;
	o->restart_max = -1;
	o->grace_ms = PM_DEFAULT_GRACE_MS;
	o->restart_delay_ms = PM_DEFAULT_DELAY_MS;
	o->stack_timeout_ms = PM_DEFAULT_STACK_TIMEOUT_MS;
	o->slow_threshold_pct = PM_DEFAULT_SLOW_THRESHOLD_PCT;
}

unsigned pm_opts_slow_interval(const struct pm_opts *o)
{
	if (o->slow_interval_ms)
		return o->slow_interval_ms;
	if (o->evict_slow && !(o->set & PM_SET_SLOW))
		return PM_DEFAULT_SLOW_INTERVAL_MS;
	return 0;
}

int pm_opt_parse(struct pm_opts *o, const char *name, const char *value,
		 char *err, size_t errlen)
{
	o->enabled = true;
	o->set |= PM_SET_ENABLED;

	if (!strcmp(name, "")) {
		return 0;
	} else if (!strcmp(name, "verbose")) {
		o->verbose = true;
		o->set |= PM_SET_VERBOSE;
		return 0;
	} else if (!strcmp(name, "restart")) {
		if (pm_parse_restart(value, &o->restart, &o->restart_max))
			return pm_opt_bad(err, errlen, name, value,
				   "never, on-failure[:N] or always[:N] (N a whole number of restarts)");
		o->set |= PM_SET_RESTART;
	} else if (!strcmp(name, "restart-delay")) {
		if (pm_duration_parse(value, &o->restart_delay_ms) ||
		    o->restart_delay_ms > PM_MAX_DELAY_MS)
			return pm_opt_bad(err, errlen, name, value,
				   "a duration from 0 to 60 s: " PM_DURATION_FORMS);
		o->set |= PM_SET_DELAY;
	} else if (!strcmp(name, "grace")) {
		if (pm_duration_parse(value, &o->grace_ms) || o->grace_ms > 3600000)
			return pm_opt_bad(err, errlen, name, value,
				   "a duration from 0 to 3600 s: " PM_DURATION_FORMS);
		o->set |= PM_SET_GRACE;
	} else if (!strcmp(name, "bind")) {
		if (pm_parse_bind(value, &o->bind))
			return pm_opt_bad(err, errlen, name, value,
				   "none, closest, or a comma-separated list of gpu,nic,cpu,mem,mem-strict,closest");
		o->set |= PM_SET_BIND;
	} else if (!strcmp(name, "health")) {
		char why[PM_ERRLEN];
		if (!value || !*value || strlen(value) >= sizeof(o->health) ||
		    pm_checks_parse(value, NULL, 0, why, sizeof(why)) < 0) {
			if (!value || !*value)
				snprintf(why, sizeof(why), "an empty list");
			else if (strlen(value) >= sizeof(o->health))
				snprintf(why, sizeof(why),
					 "the list is too long (at most %zu characters)",
					 sizeof(o->health) - 1);
			snprintf(err, errlen, "invalid value '%.*s%s' for --procmgr-health: %s",
				 PM_Q(value ? value : ""), why);
			return -1;
		}
		strcpy(o->health, value);
		o->set |= PM_SET_HEALTH;
	} else if (!strcmp(name, "health-interval")) {
		if (pm_duration_parse(value, &o->health_interval_ms) ||
		    (o->health_interval_ms && o->health_interval_ms < 1000))
			return pm_opt_bad(err, errlen, name, value,
				   "0 (off) or a duration from 1 s to 7 days: " PM_DURATION_FORMS);
		o->set |= PM_SET_HEALTH_INTERVAL;
	} else if (!strcmp(name, "hang-timeout")) {
		if (pm_parse_hang(value, &o->hang_timeout_ms, &o->hang_first_ms))
			return pm_opt_bad(err, errlen, name, value,
				   "0 (off) or a duration from 0.1 s to 7 days, optionally followed by "
				   ",FIRST: a duration from 0.1 s to 7 days for the first heartbeat; "
				   "a duration: " PM_DURATION_FORMS);
		o->set |= PM_SET_HANG;
	} else if (!strcmp(name, "spares")) {
		if (pm_parse_uint(value, 0, PM_MAX_SPARES, &o->spares))
			return pm_opt_bad(err, errlen, name, value,
				   "a whole number of nodes from 0 to 100000, fewer than the step's nodes");
		o->set |= PM_SET_SPARES;
	} else if (!strcmp(name, "stack-timeout")) {
		if (pm_duration_parse(value, &o->stack_timeout_ms) || o->stack_timeout_ms < 1000 ||
		    o->stack_timeout_ms > PM_MAX_STACK_TIMEOUT_MS)
			return pm_opt_bad(err, errlen, name, value,
				   "a duration from 1 s to 600 s: " PM_DURATION_FORMS);
		o->set |= PM_SET_STACK;
	} else if (!strcmp(name, "output-dir")) {
		if (pm_parse_dir(value, o->output_dir, sizeof(o->output_dir), err, errlen))
			return -1;
		o->set |= PM_SET_OUTPUT_DIR;
	} else if (!strcmp(name, "warm")) {
		enum pm_warm_mode mode;
		char mods[PM_WARM_MODS_MAX];
		if (pm_warm_mode_parse(value, &mode, mods, sizeof(mods)))
			return pm_opt_bad(err, errlen, name, value,
				   "on, off or python:MOD[,MOD...] (dotted Python module names, "
				   "at most 511 characters)");
		snprintf(o->warm, sizeof(o->warm), "%s", mode == PM_WARM_OFF ? "off" : value);
		o->set |= PM_SET_WARM;
	} else if (!strcmp(name, "slow")) {
		if (pm_parse_slow(value, &o->slow_interval_ms, &o->slow_threshold_pct))
			return pm_opt_bad(err, errlen, name, value,
				   "on, off (or 0), or an interval from 0.1 s to 1 h, optionally followed "
				   "by ,THRESHOLD%: from 1% to 1000%; an interval: " PM_DURATION_FORMS);
		o->set |= PM_SET_SLOW;
	} else if (!strcmp(name, "evict-slow")) {
		/* Slurm gives a flag "" in slurmstepd; a site key says yes or no. */
		if (value && *value && strcmp(value, "yes") && strcmp(value, "no"))
			return pm_opt_bad(err, errlen, name, value, "no value, or yes or no (site default)");
		o->evict_slow = !value || strcmp(value, "no");
		o->set |= PM_SET_EVICT_SLOW;
	} else if (!strcmp(name, "sweep")) {
		if (!value || !*value || strlen(value) >= sizeof(o->sweep) ||
		    strpbrk(value, " \t\n"))
			return pm_opt_bad(err, errlen, name, value,
				   "the path of a trials file, without blanks, shorter than PATH_MAX");
		strcpy(o->sweep, value);
		o->set |= PM_SET_SWEEP;
	} else if (!strcmp(name, "trial-ranks")) {
		if (pm_parse_uint(value, 1, PM_MAX_TRIAL_RANKS, &o->trial_ranks))
			return pm_opt_bad(err, errlen, name, value,
				   "a whole number of ranks from 1 to 1000000 (at most the step's tasks)");
		o->set |= PM_SET_TRIAL_RANKS;
	} else {
		snprintf(err, errlen, "unknown option '%.*s%s'", PM_Q(name));
		return -1;
	}
	return 0;
}

int pm_opts_parse_str(struct pm_opts *o, const char *s, const char *what,
		      char *err, size_t errlen)
{
	char buf[4096], *save = NULL, *tok;

	if (strlen(s) >= sizeof(buf)) {
		snprintf(err, errlen, "%s is too long", what);
		return -1;
	}
	strcpy(buf, s);
	for (tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(tok, '=');
		char why[PM_ERRLEN];
		bool bare; /* an option that takes no value */
		if (eq)
			*eq = '\0';
		if (!strcmp(tok, "procmgr"))
			tok[0] = '\0';
		bare = !*tok || !strcmp(tok, "verbose") || !strcmp(tok, "evict-slow");
		if ((eq == NULL) != bare ||
		    pm_opt_parse(o, tok, eq ? eq + 1 : NULL, why, sizeof(why))) {
			if (eq == NULL && !bare)
				snprintf(why, sizeof(why), "'%.*s%s' needs a value", PM_Q(tok));
			else if (eq != NULL && bare)
				snprintf(why, sizeof(why), "'%s' takes no value",
					 *tok ? tok : "procmgr");
			snprintf(err, errlen, "%s: %s", what, why);
			return -1;
		}
	}
	return 0;
}

static int put(char *buf, size_t len, size_t *off, const char *fmt, const char *a,
	       const char *b)
{
	int n = snprintf(buf + *off, len - *off, fmt, *off ? " " : "", a, b);
	if (n < 0 || (size_t)n >= len - *off)
		return -1;
	*off += (size_t)n;
	return 0;
}

int pm_opts_format(const struct pm_opts *o, char *buf, size_t len)
{
	size_t off = 0;
	char v[64];

	buf[0] = '\0';
	if (o->enabled && put(buf, len, &off, "%s%s%s", "procmgr", ""))
		return -1;
	if (o->set & PM_SET_RESTART) {
		if (o->restart == PM_RESTART_NEVER || o->restart_max < 0)
			snprintf(v, sizeof(v), "%s", pm_restart_name(o->restart));
		else
			snprintf(v, sizeof(v), "%s:%d", pm_restart_name(o->restart),
				 o->restart_max);
		if (put(buf, len, &off, "%srestart=%s%s", v, ""))
			return -1;
	}
	if (o->set & PM_SET_DELAY) {
		pm_fmt_seconds(o->restart_delay_ms, v, sizeof(v));
		if (put(buf, len, &off, "%srestart-delay=%s%s", v, ""))
			return -1;
	}
	if (o->set & PM_SET_GRACE) {
		pm_fmt_seconds(o->grace_ms, v, sizeof(v));
		if (put(buf, len, &off, "%sgrace=%s%s", v, ""))
			return -1;
	}
	if (o->set & PM_SET_BIND) {
		if (pm_format_bind(o->bind, v, sizeof(v)) ||
		    put(buf, len, &off, "%sbind=%s%s", v, ""))
			return -1;
	}
	if ((o->set & PM_SET_HEALTH) && o->health[0] &&
	    put(buf, len, &off, "%shealth=%s%s", o->health, ""))
		return -1;
	if (o->set & PM_SET_HEALTH_INTERVAL) {
		pm_fmt_seconds(o->health_interval_ms, v, sizeof(v));
		if (put(buf, len, &off, "%shealth-interval=%s%s", v, ""))
			return -1;
	}
	if (o->set & PM_SET_HANG) {
		char first[32] = "";
		pm_fmt_seconds(o->hang_timeout_ms, v, sizeof(v));
		if (o->hang_first_ms) {
			first[0] = ',';
			pm_fmt_seconds(o->hang_first_ms, first + 1, sizeof(first) - 1);
		}
		if (put(buf, len, &off, "%shang-timeout=%s%s", v, first))
			return -1;
	}
	if (o->set & PM_SET_SPARES) {
		snprintf(v, sizeof(v), "%u", o->spares);
		if (put(buf, len, &off, "%sspares=%s%s", v, ""))
			return -1;
	}
	if (o->set & PM_SET_STACK) {
		pm_fmt_seconds(o->stack_timeout_ms, v, sizeof(v));
		if (put(buf, len, &off, "%sstack-timeout=%s%s", v, ""))
			return -1;
	}
	if ((o->set & PM_SET_OUTPUT_DIR) && o->output_dir[0] &&
	    put(buf, len, &off, "%soutput-dir=%s%s", o->output_dir, ""))
		return -1;
	if ((o->set & PM_SET_WARM) && o->warm[0] &&
	    put(buf, len, &off, "%swarm=%s%s", o->warm, ""))
		return -1;
	if ((o->set & PM_SET_VERBOSE) && o->verbose &&
	    put(buf, len, &off, "%s%s%s", "verbose", ""))
		return -1;
	if (o->set & PM_SET_SLOW) {
		if (!o->slow_interval_ms) {
			snprintf(v, sizeof(v), "off");
		} else {
			char pct[24];
			pm_fmt_seconds(o->slow_interval_ms, v, sizeof(v));
			snprintf(pct, sizeof(pct), ",%u%%", o->slow_threshold_pct);
			strncat(v, pct, sizeof(v) - strlen(v) - 1);
		}
		if (put(buf, len, &off, "%sslow=%s%s", v, ""))
			return -1;
	}
	/* A site's "no" stays "no" at the next layer only if it is said. */
	if ((o->set & PM_SET_EVICT_SLOW) && o->evict_slow &&
	    put(buf, len, &off, "%s%s%s", "evict-slow", ""))
		return -1;
	if ((o->set & PM_SET_SWEEP) && o->sweep[0] &&
	    put(buf, len, &off, "%ssweep=%s%s", o->sweep, ""))
		return -1;
	if ((o->set & PM_SET_TRIAL_RANKS) && o->trial_ranks) {
		snprintf(v, sizeof(v), "%u", o->trial_ranks);
		if (put(buf, len, &off, "%strial-ranks=%s%s", v, ""))
			return -1;
	}
	return 0;
}

void pm_opts_overlay(struct pm_opts *dst, const struct pm_opts *l)
{
	if (l->set & PM_SET_ENABLED)
		dst->enabled = dst->enabled || l->enabled;
	if (l->set & PM_SET_RESTART) {
		dst->restart = l->restart;
		dst->restart_max = l->restart_max;
	}
	if (l->set & PM_SET_DELAY)
		dst->restart_delay_ms = l->restart_delay_ms;
	if (l->set & PM_SET_GRACE)
		dst->grace_ms = l->grace_ms;
	if (l->set & PM_SET_BIND)
		dst->bind = l->bind;
	if (l->set & PM_SET_HEALTH)
		strcpy(dst->health, l->health);
	if (l->set & PM_SET_HEALTH_INTERVAL)
		dst->health_interval_ms = l->health_interval_ms;
	if (l->set & PM_SET_HANG) {
		dst->hang_timeout_ms = l->hang_timeout_ms;
		dst->hang_first_ms = l->hang_first_ms;
	}
	if (l->set & PM_SET_VERBOSE)
		dst->verbose = l->verbose;
	if (l->set & PM_SET_SPARES)
		dst->spares = l->spares;
	if (l->set & PM_SET_STACK)
		dst->stack_timeout_ms = l->stack_timeout_ms;
	if (l->set & PM_SET_OUTPUT_DIR)
		strcpy(dst->output_dir, l->output_dir);
	if (l->set & PM_SET_WARM)
		strcpy(dst->warm, l->warm);
	if (l->set & PM_SET_SLOW) {
		dst->slow_interval_ms = l->slow_interval_ms;
		dst->slow_threshold_pct = l->slow_threshold_pct;
	}
	if (l->set & PM_SET_EVICT_SLOW)
		dst->evict_slow = l->evict_slow;
	if (l->set & PM_SET_SWEEP)
		strcpy(dst->sweep, l->sweep);
	if (l->set & PM_SET_TRIAL_RANKS)
		dst->trial_ranks = l->trial_ranks;
	dst->set |= l->set;
}

/* Whether the comma-separated list has item. */
static bool has_check(const char *list, const char *item)
{
	size_t n = strlen(item);
	const char *p = list;

	while (*p) {
		const char *c = strchr(p, ',');
		size_t l = c ? (size_t)(c - p) : strlen(p);
		if (l == n && !strncmp(p, item, n))
			return true;
		if (!c)
			break;
		p = c + 1;
	}
	return false;
}

/* Append to merged the items of list it does not have yet. */
static int merge_checks(char *merged, size_t len, const char *list)
{
	char buf[PM_LIST_MAX], *save = NULL, *tok;
	size_t off = strlen(merged);

	if (strlen(list) >= sizeof(buf))
		return -1;
	strcpy(buf, list);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int n;
		if (has_check(merged, tok))
			continue;
		n = snprintf(merged + off, len - off, "%s%s", off ? "," : "", tok);
		if (n < 0 || (size_t)n >= len - off)
			return -1;
		off += (size_t)n;
	}
	return 0;
}

int pm_opts_resolve(struct pm_opts *out, const struct pm_site *site,
		    const struct pm_opts *job, const struct pm_opts *step,
		    char *err, size_t errlen)
{
	char merged[PM_LIST_MAX];

	*out = site->defaults;
	out->set = 0;
	out->enabled = false;
	if (job)
		pm_opts_overlay(out, job);
	if (step)
		pm_opts_overlay(out, step);

	if (out->restart == PM_RESTART_NEVER) {
		out->restart_max = 0;
	} else if (out->restart_max < 0) {
		/* No count asked for: a sensible one, within the cap. */
		out->restart_max = PM_DEFAULT_RESTARTS < site->max_restarts ?
					   PM_DEFAULT_RESTARTS : site->max_restarts;
	} else if (out->restart_max > site->max_restarts) {
		snprintf(err, errlen,
			 "--procmgr-restart=%s:%d asks for more restarts than this site "
			 "allows (max_restarts=%d)",
			 pm_restart_name(out->restart), out->restart_max,
			 site->max_restarts);
		return -1;
	}

	/* A sweep's trials restart on their own policy: a spare only joins
	 * its pool of slots (docs/design.md, Sweeps). */
	if (out->spares && out->restart == PM_RESTART_NEVER && !out->sweep[0]) {
		snprintf(err, errlen, "--procmgr-spares=%u needs restarts: a spare takes a lost "
			 "node's place in a new generation of every rank; add "
			 "--procmgr-restart=on-failure[:N] (N restarts bound the replacements too)",
			 out->spares);
		return -1;
	}

	/* Eviction needs detection: the step gets its interval written out,
	 * since slurmstepd reads every field as set (a bare "slow=off" next to
	 * "evict-slow" there turned detection off). */
	if (out->evict_slow && !out->slow_interval_ms) {
		if (out->set & PM_SET_SLOW) {
			snprintf(err, errlen, "--procmgr-evict-slow needs slow-node detection, "
				 "which --procmgr-slow=off turns off: drop one of the two");
			return -1;
		}
		out->slow_interval_ms = PM_DEFAULT_SLOW_INTERVAL_MS;
	}

	if (out->trial_ranks && !out->sweep[0]) {
		snprintf(err, errlen, "--procmgr-trial-ranks=%u needs --procmgr-sweep=FILE",
			 out->trial_ranks);
		return -1;
	}

	/* The site's checks always run; the user's come on top. Each check
	 * once: slurmstepd resolves srun's result again, which already has
	 * the site's checks. */
	if (site->health[0]) {
		merged[0] = '\0';
		if (merge_checks(merged, sizeof(merged), site->health) ||
		    merge_checks(merged, sizeof(merged), out->health)) {
			snprintf(err, errlen, "health check list is too long");
			return -1;
		}
		strcpy(out->health, merged);
	}
	return 0;
}
