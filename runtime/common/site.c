/* The site's configuration: key=value arguments on procmgr's line in
 * plugstack.conf. One table drives parsing, the list of keys in messages
 * and what each key allows; an unknown key is an error. Pure. */
#include "options.h"
#include "checkspec.h"

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "duration.h"
#include "text.h"

/* Each parser takes the value and returns -1 if it is not allowed. */
struct site_key {
	const char *name;
	int (*parse)(struct pm_site *s, const struct site_key *k, const char *v);
	const char *allowed;
	size_t path_off; /* for paths and sizes: where in struct pm_site */
};

static int parse_path(struct pm_site *s, const struct site_key *k, const char *v)
{
	if (v[0] != '/' || strlen(v) >= PATH_MAX)
		return -1;
	strcpy((char *)s + k->path_off, v);
	return 0;
}

/* Site defaults are parsed as the user's options are: same grammar
 * (default_stack_timeout is --procmgr-stack-timeout's). */
static int parse_default(struct pm_site *s, const struct site_key *k, const char *v)
{
	char why[PM_ERRLEN], name[64], *p;

	snprintf(name, sizeof(name), "%s", k->name + strlen("default_"));
	for (p = name; (p = strchr(p, '_'));)
		*p = '-';
	return pm_opt_parse(&s->defaults, name, v, why, sizeof(why));
}

static int parse_max_restarts(struct pm_site *s, const struct site_key *k, const char *v)
{
	unsigned n;
	(void)k;

	if (pm_parse_uint(v, 0, 1000000, &n))
		return -1;
	s->max_restarts = (int)n;
	return 0;
}

static int parse_health(struct pm_site *s, const struct site_key *k, const char *v)
{
	char why[PM_ERRLEN];
	(void)k;

	if (strlen(v) >= sizeof(s->health) || pm_checks_parse(v, NULL, 0, why, sizeof(why)) < 0)
		return -1;
	strcpy(s->health, v);
	return 0;
}

static int parse_health_timeout(struct pm_site *s, const struct site_key *k, const char *v)
{
	unsigned ms;
	(void)k;

	if (pm_duration_parse(v, &ms) || ms < 100 || ms > 3600000)
		return -1;
	s->health_timeout_ms = ms;
	return 0;
}

static int parse_peer_timeout(struct pm_site *s, const struct site_key *k, const char *v)
{
	unsigned ms;
	(void)k;

	if (pm_duration_parse(v, &ms) || (ms && ms < 1000) || ms > 3600000)
		return -1;
	s->peer_timeout_ms = ms;
	return 0;
}

static int parse_connect_timeout(struct pm_site *s, const struct site_key *k, const char *v)
{
	unsigned ms;
	(void)k;

	if (pm_duration_parse(v, &ms) || ms < 1000 || ms > 3600000)
		return -1;
	s->connect_timeout_ms = ms;
	return 0;
}

static int parse_job_dir_keep(struct pm_site *s, const struct site_key *k, const char *v)
{
	(void)k;
	return pm_duration_parse(v, &s->job_dir_keep_ms);
}

/* A size: a whole number with an optional K, M, G or T (powers of 1024;
 * none: MiB), kept in MiB. */
static int parse_state_max(struct pm_site *s, const struct site_key *k, const char *v)
{
	char num[24];
	size_t n = strlen(v);
	unsigned long long shift = 20, b;
	unsigned u;

	if (!n || n >= sizeof(num))
		return -1;
	memcpy(num, v, n + 1);
	switch (num[n - 1]) {
	case 'K': shift = 10; break;
	case 'M': shift = 20; break;
	case 'G': shift = 30; break;
	case 'T': shift = 40; break;
	default: shift = 0; break;
	}
	if (shift)
		num[n - 1] = '\0';
	else
		shift = 20;
	if (pm_parse_uint(num, 0, UINT_MAX, &u))
		return -1;
	b = ((unsigned long long)u << shift) >> 20;
	if (b > PM_STATE_MAX_MIB || (u && !b))
		return -1;
	*(unsigned *)((char *)s + k->path_off) = (unsigned)b;
	return 0;
}

static int parse_drain(struct pm_site *s, const struct site_key *k, const char *v)
{
	(void)k;
	if (strcmp(v, "yes") && strcmp(v, "no"))
		return -1;
	s->drain = !strcmp(v, "yes");
	return 0;
}

static int parse_ports(struct pm_site *s, const struct site_key *k, const char *v)
{
	unsigned lo, hi;
	char lo_s[16], hi_s[16];
	const char *dash = strchr(v, '-');
	(void)k;

	if (!dash || (size_t)(dash - v) >= sizeof(lo_s) || strlen(dash + 1) >= sizeof(hi_s))
		return -1;
	memcpy(lo_s, v, (size_t)(dash - v));
	lo_s[dash - v] = '\0';
	strcpy(hi_s, dash + 1);
	if (pm_parse_uint(lo_s, 1024, 65535, &lo) || pm_parse_uint(hi_s, 1024, 65535, &hi) ||
	    lo >= hi)
		return -1;
	s->port_lo = lo;
	s->port_hi = hi;
	return 0;
}

static int parse_fanout(struct pm_site *s, const struct site_key *k, const char *v)
{
	(void)k;
	return pm_parse_uint(v, 2, 1024, &s->fanout);
}

/* default_evict_slow: the option's name has a dash. */
static int parse_evict_slow(struct pm_site *s, const struct site_key *k, const char *v)
{
	char why[PM_ERRLEN];
	(void)k;
	if (!v || (strcmp(v, "yes") && strcmp(v, "no")))
		return -1;
	return pm_opt_parse(&s->defaults, "evict-slow", v, why, sizeof(why));
}

#define PATH_KEY(key, field) \
	{ key, parse_path, "an absolute path", offsetof(struct pm_site, field) }

/* In the order messages list them. */
static const struct site_key keys[] = {
	PATH_KEY("runtime", runtime),
	{ "default_restart", parse_default, "never, on-failure[:N] or always[:N]", 0 },
	{ "max_restarts", parse_max_restarts, "a whole number from 0 to 1000000", 0 },
	{ "default_bind", parse_default,
	  "none, closest or a list of gpu,nic,cpu,mem,mem-strict", 0 },
	{ "default_grace", parse_default,
	  "a duration from 0 to 3600 s: " PM_DURATION_FORMS, 0 },
	{ "default_spares", parse_default, "a whole number of nodes from 0 to 100000", 0 },
	{ "default_warm", parse_default, "on, off or python:MOD[,MOD...]", 0 },
	{ "default_slow", parse_default,
	  "on, off, or INTERVAL[,THRESHOLD%] (an interval from 0.1 s to 1 h, 1% to 1000%)", 0 },
	{ "default_evict_slow", parse_evict_slow, "yes or no", 0 },
	{ "health", parse_health, PM_CHECK_GRAMMAR, 0 },
	{ "health_timeout", parse_health_timeout,
	  "a duration from 0.1 to 3600 s: " PM_DURATION_FORMS, 0 },
	{ "peer_timeout", parse_peer_timeout,
	  "0 (off) or a duration from 1 to 3600 s: " PM_DURATION_FORMS, 0 },
	{ "connect_timeout", parse_connect_timeout,
	  "a duration from 1 to 3600 s: " PM_DURATION_FORMS, 0 },
	{ "drain", parse_drain, "yes or no", 0 },
	{ "ports", parse_ports, "LO-HI, two ports from 1024 to 65535, LO < HI", 0 },
	{ "fanout", parse_fanout, "a whole number from 2 to 1024", 0 },
	PATH_KEY("state_dir", state_dir),
	PATH_KEY("topology", topology),
	PATH_KEY("metrics_dir", metrics_dir),
	{ "job_dir_keep", parse_job_dir_keep,
	  "0 (removed at the job's end) or a duration up to 7 d: " PM_DURATION_FORMS, 0 },
	{ "default_stack_timeout", parse_default,
	  "a duration from 1 s to 600 s: " PM_DURATION_FORMS, 0 },
	{ "state_max_rank", parse_state_max,
	  "a size from 1M to 1024T (K, M, G, T: powers of 1024; no unit: MiB), or 0 for none",
	  offsetof(struct pm_site, state_max_rank_mib) },
	{ "state_max_node", parse_state_max,
	  "a size from 1M to 1024T (K, M, G, T: powers of 1024; no unit: MiB), or 0 for none",
	  offsetof(struct pm_site, state_max_node_mib) },
	{ "state_repl_rate", parse_state_max,
	  "a size per second from 1M to 1024T (K, M, G, T: powers of 1024; no unit: MiB), or 0 for no bound",
	  offsetof(struct pm_site, state_repl_mib_s) },
};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

static const char *key_list(char *list, size_t len)
{
	size_t i, off = 0;

	list[0] = '\0';
	for (i = 0; i < NKEYS && off < len; i++)
		off += (size_t)snprintf(list + off, len - off, "%s%s", i ? ", " : "", keys[i].name);
	return list;
}

void pm_site_init(struct pm_site *s)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->runtime, sizeof(s->runtime), "%s/procmgrd", PM_LIBEXECDIR);
	pm_opts_init(&s->defaults);
	s->defaults.restart = PM_RESTART_NEVER;
	s->defaults.restart_max = 0;
	s->max_restarts = PM_DEFAULT_MAX_RESTARTS;
	s->fanout = PM_DEFAULT_FANOUT;
	s->health_timeout_ms = PM_HEALTH_DEFAULT_TIMEOUT_MS;
	s->peer_timeout_ms = PM_DEFAULT_PEER_TIMEOUT_MS;
	s->connect_timeout_ms = PM_DEFAULT_CONNECT_TIMEOUT_MS;
	s->state_max_rank_mib = PM_DEFAULT_STATE_MAX_RANK_MIB;
	s->state_max_node_mib = PM_DEFAULT_STATE_MAX_NODE_MIB;
	s->state_repl_mib_s = PM_DEFAULT_STATE_REPL_MIB_S;
	snprintf(s->state_dir, sizeof(s->state_dir), "/var/spool/procmgr");
}

int pm_site_parse(struct pm_site *s, int argc, char **argv, const char *file,
		  char *err, size_t errlen)
{
	int i;

	/* Where each key was given: a second value is an error, not a silent
	 * override (which of two lines an admin meant is not ours to guess). */
	int given[NKEYS];

	for (i = 0; i < (int)NKEYS; i++)
		given[i] = -1;
	for (i = 0; i < argc; i++) {
		const char *eq = strchr(argv[i], '=');
		const struct site_key *k = NULL;
		size_t j, klen;
		char key[64], names[768];

		if (!eq || eq == argv[i]) {
			snprintf(err, errlen, "%s: argument '%.*s%s' is not key=value (keys: %s)",
				 file, PM_Q(argv[i]), key_list(names, sizeof(names)));
			return -1;
		}
		klen = (size_t)(eq - argv[i]);
		if (klen >= sizeof(key))
			klen = sizeof(key) - 1;
		memcpy(key, argv[i], klen);
		key[klen] = '\0';
		for (j = 0; j < NKEYS && !k; j++)
			if (!strcmp(key, keys[j].name))
				k = &keys[j];
		if (!k) {
			snprintf(err, errlen, "%s: unknown key '%s' (value '%.*s%s'); keys: %s", file,
				 key, PM_Q(eq + 1), key_list(names, sizeof(names)));
			return -1;
		}
		if (given[k - keys] >= 0) {
			snprintf(err, errlen, "%s: key '%s' given twice ('%.*s%s' and '%.*s%s'); "
				 "give it once", file, key, PM_Q(strchr(argv[given[k - keys]], '=') + 1),
				 PM_Q(eq + 1));
			return -1;
		}
		given[k - keys] = i;
		if (k->parse(s, k, eq + 1)) {
			snprintf(err, errlen, "%s: bad value '%.*s%s' for key '%s': expected %s", file,
				 PM_Q(eq + 1), key, k->allowed);
			return -1;
		}
	}
	if (s->defaults.restart != PM_RESTART_NEVER &&
	    s->defaults.restart_max > s->max_restarts) {
		snprintf(err, errlen, "%s: default_restart=%s:%d exceeds max_restarts=%d", file,
			 pm_restart_name(s->defaults.restart), s->defaults.restart_max,
			 s->max_restarts);
		return -1;
	}
	return 0;
}
