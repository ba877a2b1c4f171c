#include "contract.h"
#include "checkspec.h"
#include "options.h"

#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "text.h"

/* 0 if the whole text fitted; else buf is "" and -1. */
static int path(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int path(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!len)
		return -1;
	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len) {
		buf[0] = '\0';
		return -1;
	}
	return 0;
}

int pm_path_jobdir(char *buf, size_t len, const char *state_dir, uint32_t job)
{
	return path(buf, len, "%s/%u", state_dir, job);
}

int pm_path_rundir(char *buf, size_t len, const char *state_dir, uint32_t job,
		   uint32_t step, uint32_t node)
{
	return path(buf, len, "%s/%u/%u.%u.run", state_dir, job, step, node);
}

int pm_path_log(char *buf, size_t len, const char *state_dir, uint32_t job,
		uint32_t step, uint32_t node)
{
	return path(buf, len, "%s/%u/%u.%u.log", state_dir, job, step, node);
}

int pm_path_events(char *buf, size_t len, const char *state_dir, uint32_t job,
		   uint32_t step)
{
	return path(buf, len, "%s/%u/%u.events.jsonl", state_dir, job, step);
}

int pm_path_report(char *buf, size_t len, const char *state_dir, uint32_t job,
		   uint32_t step, uint32_t node)
{
	return path(buf, len, "%s/%u/%u.%u.unhealthy", state_dir, job, step, node);
}

int pm_path_sock(char *buf, size_t len, const char *rundir)
{
	return path(buf, len, "%s/sock", rundir);
}

int pm_path_state(char *buf, size_t len, const char *rundir)
{
	return path(buf, len, "%s/state", rundir);
}

int pm_path_heartbeat(char *buf, size_t len, const char *rundir, int lrank)
{
	return path(buf, len, "%s/heartbeat.%d", rundir, lrank);
}

int pm_path_hang_stack(char *buf, size_t len, const char *rundir, int lrank)
{
	return path(buf, len, "%s/hang-stack.%d", rundir, lrank);
}

int pm_path_error_file(char *buf, size_t len, const char *rundir, int lrank)
{
	return path(buf, len, "%s/error.%d.json", rundir, lrank);
}

int pm_path_error_file_gen(char *buf, size_t len, const char *base, uint32_t gen)
{
	size_t n = strlen(base);

	if (n > 5 && !strcmp(base + n - 5, ".json"))
		return path(buf, len, "%.*s.%u.json", (int)(n - 5), base, gen);
	return path(buf, len, "%s.%u", base, gen);
}

/* ---- one-line texts ---- */

/* Appends s to buf at *off, control characters as spaces, as much as fits
 * before reserve bytes are left; -1 if s was cut. */
static int put(char *buf, size_t len, size_t *off, const char *s, size_t reserve,
	       bool clean)
{
	for (; s && *s; s++) {
		if (*off + reserve + 1 >= len)
			return -1;
		buf[(*off)++] = clean && iscntrl((unsigned char)*s) ? ' ' : *s;
	}
	buf[*off] = '\0';
	return 0;
}

static int put_clean(char *buf, size_t len, size_t *off, const char *s, size_t reserve)
{
	return put(buf, len, off, s, reserve, true);
}

static int put_raw(char *buf, size_t len, size_t *off, const char *s, size_t reserve)
{
	return put(buf, len, off, s, reserve, false);
}

int pm_ready_format(char *buf, size_t len, enum pm_ready_kind kind, const char *node,
		    const char *text)
{
	size_t off = 0;
	int rc = 0;

	/* The shortest line, "ok\n", must fit: the plugin needs a whole line. */
	if (len < 4)
		return -1;
	buf[0] = '\0';
	switch (kind) {
	case PM_READY_OK:
		break;
	case PM_READY_HEALTH:
		rc |= put_raw(buf, len, &off, "health\t", 1);
		rc |= put_clean(buf, len, &off, node, 2); /* the tab after it, the newline */
		rc |= put_raw(buf, len, &off, "\t", 1);
		rc |= put_clean(buf, len, &off, text, 1);
		break;
	case PM_READY_ERROR:
		rc |= put_raw(buf, len, &off, "error: ", 1);
		rc |= put_clean(buf, len, &off, text, 1);
		break;
	default:
		return -1;
	}
	if (kind == PM_READY_OK)
		off = (size_t)snprintf(buf, len, "ok");
	buf[off++] = '\n';
	buf[off] = '\0';
	return rc ? -1 : 0;
}

/* Copies [s, s + n) into dst of dstlen; -1 if it does not fit. */
static int copy(char *dst, size_t dstlen, const char *s, size_t n)
{
	if (n >= dstlen)
		return -1;
	memcpy(dst, s, n);
	dst[n] = '\0';
	return 0;
}

int pm_ready_parse(const char *line, struct pm_ready *out)
{
	size_t n = strcspn(line, "\n");

	memset(out, 0, sizeof(*out));
	if (n == 2 && !strncmp(line, "ok", 2)) {
		out->kind = PM_READY_OK;
		return 0;
	}
	if (n >= 7 && !strncmp(line, "health\t", 7)) {
		const char *node = line + 7, *tab = memchr(node, '\t', n - 7);
		size_t nn = tab ? (size_t)(tab - node) : n - 7;
		out->kind = PM_READY_HEALTH;
		if (copy(out->node, sizeof(out->node), node, nn))
			return -1;
		return tab ? copy(out->text, sizeof(out->text), tab + 1,
				  n - (size_t)(tab + 1 - line)) : 0;
	}
	if (n >= 7 && !strncmp(line, "error: ", 7)) {
		out->kind = PM_READY_ERROR;
		return copy(out->text, sizeof(out->text), line + 7, n - 7);
	}
	return -1;
}

int pm_report_format(char *buf, size_t len, const char *check, const char *reason)
{
	size_t off = 0;
	const char *p;

	if (!len)
		return -1;
	buf[0] = '\0';
	if (!check || !*check)
		return -1;
	for (p = check; *p; p++)
		if (isspace((unsigned char)*p) || iscntrl((unsigned char)*p))
			return -1;
	if (put_clean(buf, len, &off, check, 0) || put_raw(buf, len, &off, ": ", 0) ||
	    put_clean(buf, len, &off, reason, 0))
		return -1;
	return 0;
}

int pm_report_parse(const char *line, struct pm_report *out)
{
	size_t n = strcspn(line, "\n");
	const char *sep = strstr(line, ": ");

	memset(out, 0, sizeof(*out));
	if (!sep || sep == line || (size_t)(sep - line) > n)
		return -1;
	if (copy(out->check, sizeof(out->check), line, (size_t)(sep - line)) ||
	    copy(out->reason, sizeof(out->reason), sep + 2, n - (size_t)(sep + 2 - line)))
		return -1;
	return 0;
}

/* ---- procmgrd's command line ---- */

enum kind { UINT, INT, PID, STR };

struct flag {
	const char *name;
	enum kind kind;
	size_t off;
	unsigned lo, hi;  /* numbers; hi for a string: its longest length, 0 none */
	bool required;
};

#define F(field) offsetof(struct pm_daemon_args, field)

/* Also the order of the command line: tests find a step's procmgrd by its
 * first flags (procmgrd --job J --step S --node-id N). */
static const struct flag flags[] = {
	{ "job", UINT, F(job), 0, UINT_MAX, true },
	{ "step", UINT, F(step), 0, UINT_MAX, true },
	{ "node-id", UINT, F(node_id), 0, 10000000, true },
	{ "nodes", STR, F(nodes), 0, 0, true },
	{ "ntasks-local", UINT, F(ntasks_local), 1, 100000, true },
	{ "ntasks", UINT, F(ntasks), 1, 100000000, true },
	{ "port", UINT, F(port), 1, 65535, true },
	{ "fanout", UINT, F(fanout), 2, 1024, false },
	{ "rundir", STR, F(rundir), 0, PATH_MAX - 1, true },
	{ "events", STR, F(events), 0, PATH_MAX - 1, false },
	{ "opts", STR, F(opts), 0, 0, false },
	{ "ready-fd", INT, F(ready_fd), 0, 65535, false },
	{ "watch-pid", PID, F(watch_pid), 1, INT_MAX, false },
	{ "health-report", STR, F(health_report), 0, PATH_MAX - 1, false },
	{ "health-timeout", UINT, F(health_timeout_ms), 1, 3600000, false },
	{ "munge-socket", STR, F(munge_socket), 0, PATH_MAX - 1, false },
	{ "peer-timeout", UINT, F(peer_timeout_ms), 0, 3600000, false },
	{ "metrics-dir", STR, F(metrics_dir), 0, PATH_MAX - 1, false },
	{ "connect-timeout", UINT, F(connect_timeout_ms), 1000, 3600000, false },
	{ "srun-node", STR, F(srun_node), 0, 255, false },
	{ "state-max-rank", UINT, F(state_max_rank_mib), 0, 1u << 30, false },
	{ "state-max-node", UINT, F(state_max_node_mib), 0, 1u << 30, false },
	{ "state-repl-rate", UINT, F(state_repl_mib_s), 0, 1u << 30, false },
};
#define NFLAGS (sizeof(flags) / sizeof(flags[0]))

_Static_assert(sizeof(pid_t) == sizeof(int), "pid_t is stored as an int");
_Static_assert(2 * NFLAGS + 2 <= PM_DAEMON_ARGV_MAX, "PM_DAEMON_ARGV_MAX too small");


void pm_daemon_args_init(struct pm_daemon_args *a)
{
	memset(a, 0, sizeof(*a));
	a->fanout = PM_DEFAULT_FANOUT;
	a->opts = "";
	a->ready_fd = -1;
	a->health_timeout_ms = PM_HEALTH_DEFAULT_TIMEOUT_MS;
	a->peer_timeout_ms = PM_DEFAULT_PEER_TIMEOUT_MS;
	a->connect_timeout_ms = PM_DEFAULT_CONNECT_TIMEOUT_MS;
	a->state_max_rank_mib = PM_DEFAULT_STATE_MAX_RANK_MIB;
	a->state_max_node_mib = PM_DEFAULT_STATE_MAX_NODE_MIB;
	a->state_repl_mib_s = PM_DEFAULT_STATE_REPL_MIB_S;
}

static void *field(const struct pm_daemon_args *a, const struct flag *f)
{
	return (char *)a + f->off;
}

static int bad_value(const struct flag *f, const char *v, char *err, size_t errlen)
{
	if (f->kind == STR)
		snprintf(err, errlen, "value of --%s is too long (at most %u characters)",
			 f->name, f->hi);
	else
		snprintf(err, errlen, "bad value '%.*s%s' for --%s: allowed %u..%u", PM_Q(v),
			 f->name, f->lo, f->hi);
	return -1;
}

static int set_value(struct pm_daemon_args *a, const struct flag *f, char *v, char *err,
		     size_t errlen)
{
	unsigned u;

	if (f->kind == STR) {
		if (f->required && !*v) {
			snprintf(err, errlen, "--%s needs a value", f->name);
			return -1;
		}
		if (f->hi && strlen(v) > f->hi)
			return bad_value(f, v, err, errlen);
		*(const char **)field(a, f) = v;
		return 0;
	}
	if (pm_parse_uint(v, f->lo, f->hi, &u))
		return bad_value(f, v, err, errlen);
	if (f->kind == UINT)
		*(unsigned *)field(a, f) = u;
	else
		*(int *)field(a, f) = (int)u;
	return 0;
}

int pm_daemon_args_parse(struct pm_daemon_args *a, int argc, char **argv, char *err,
			 size_t errlen)
{
	bool seen[NFLAGS] = { false };
	size_t i;
	int k;

	pm_daemon_args_init(a);
	for (k = 1; k < argc; k++) {
		char *arg = argv[k], *v;
		size_t n;
		if (strncmp(arg, "--", 2)) {
			snprintf(err, errlen, "unexpected argument '%.*s%s'", PM_Q(arg));
			return -1;
		}
		n = strcspn(arg + 2, "=");
		for (i = 0; i < NFLAGS; i++)
			if (strlen(flags[i].name) == n && !strncmp(arg + 2, flags[i].name, n))
				break;
		if (i == NFLAGS) {
			snprintf(err, errlen, "unknown argument '%.*s%s'", PM_Q(arg));
			return -1;
		}
		if (arg[2 + n] == '=') {
			v = arg + 3 + n;
		} else if (k + 1 < argc) {
			v = argv[++k];
		} else {
			snprintf(err, errlen, "--%s needs a value", flags[i].name);
			return -1;
		}
		if (set_value(a, &flags[i], v, err, errlen))
			return -1;
		seen[i] = true;
	}
	for (i = 0; i < NFLAGS; i++)
		if (flags[i].required && !seen[i]) {
			snprintf(err, errlen, "missing --%s", flags[i].name);
			return -1;
		}
	return 0;
}

/* The value of f as text in text[len], or NULL where it is left out. -1
 * where format must refuse it. */
static int value_text(const struct pm_daemon_args *a, const struct flag *f, char *text,
		      size_t len, const char **out, char *err, size_t errlen)
{
	long long v;
	char num[24];

	*out = NULL;
	if (f->kind == STR) {
		const char *s = *(const char *const *)field(a, f);
		if (!s || !*s) {
			if (!f->required)
				return 0;
			snprintf(err, errlen, "missing --%s", f->name);
			return -1;
		}
		if (f->hi && strlen(s) > f->hi)
			return bad_value(f, s, err, errlen);
		*out = s;
		return 0;
	}
	if (f->kind == UINT)
		v = *(const unsigned *)field(a, f);
	else
		v = *(const int *)field(a, f);
	/* The "none" of an optional fd or pid. */
	if ((f->kind == INT && v == -1) || (f->kind == PID && v == 0))
		return 0;
	snprintf(num, sizeof(num), "%lld", v);
	if (v < f->lo || v > f->hi)
		return bad_value(f, num, err, errlen);
	snprintf(text, len, "%s", num);
	*out = text;
	return 0;
}

struct out {
	char **argv;
	size_t argv_len, n;
	char *buf;
	size_t buflen, off;
};

/* Copies s into the buffer as the next entry, leaving room for the NULL. */
static int push(struct out *o, const char *s, char *err, size_t errlen)
{
	size_t l = strlen(s) + 1;

	if (o->n + 2 > o->argv_len || l > o->buflen - o->off) {
		snprintf(err, errlen, "procmgrd's command line does not fit (%zu entries, "
			 "%zu bytes)", o->argv_len, o->buflen);
		return -1;
	}
	memcpy(o->buf + o->off, s, l);
	o->argv[o->n++] = o->buf + o->off;
	o->off += l;
	return 0;
}

int pm_daemon_args_format(const struct pm_daemon_args *a, const char *prog, char **argv,
			  size_t argv_len, char *buf, size_t buflen, char *err, size_t errlen)
{
	struct out o = { argv, argv_len, 0, buf, buflen, 0 };
	size_t i;

	if (!prog || !*prog) {
		snprintf(err, errlen, "no program for procmgrd");
		return -1;
	}
	if (push(&o, prog, err, errlen))
		return -1;
	for (i = 0; i < NFLAGS; i++) {
		char text[24], name[32];
		const char *v;
		if (value_text(a, &flags[i], text, sizeof(text), &v, err, errlen))
			return -1;
		if (!v)
			continue;
		snprintf(name, sizeof(name), "--%s", flags[i].name);
		if (push(&o, name, err, errlen) || push(&o, v, err, errlen))
			return -1;
	}
	argv[o.n] = NULL;
	return 0;
}
