#include "warm.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Environment names as a shell would take them: a program reading them
 * back with getenv/os.environ sees exactly what was sent. */
static bool good_name(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || n >= PM_WARM_NAME_MAX || isdigit((unsigned char)s[0]))
		return false;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_')
			return false;
	return true;
}

static int parse_gen(const char *s, uint32_t *gen)
{
	char *end;
	unsigned long v;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > UINT32_MAX)
		return -1;
	*gen = (uint32_t)v;
	return 0;
}

int pm_warm_parse(char *line, size_t len, struct pm_warm_line *out, char *err, size_t errlen)
{
	char *sp, *eq;

	memset(out, 0, sizeof(*out));
	if (len >= PM_WARM_LINE_MAX) {
		snprintf(err, errlen, "a line of %zu bytes (at most %d with its newline)", len,
			 PM_WARM_LINE_MAX - 1);
		return -1;
	}
	if (memchr(line, '\0', len)) {
		snprintf(err, errlen, "a NUL byte in a line (lines of text only)");
		return -1;
	}
	line[len] = '\0';
	if (len == 0) {
		snprintf(err, errlen, "an empty line (allowed: ready, env NAME=VALUE, start GEN)");
		return -1;
	}
	if (!strcmp(line, "ready")) {
		out->kind = PM_WARM_READY;
		return 0;
	}
	sp = strchr(line, ' ');
	if (sp && sp - line == 3 && !strncmp(line, "env", 3)) {
		eq = strchr(sp + 1, '=');
		if (!eq || !good_name(sp + 1, (size_t)(eq - sp - 1))) {
			snprintf(err, errlen, "'%.64s': env needs NAME=VALUE, NAME of letters, "
				 "digits and _ not starting with a digit (at most %d)",
				 line, PM_WARM_NAME_MAX - 1);
			return -1;
		}
		memcpy(out->name, sp + 1, (size_t)(eq - sp - 1));
		out->name[eq - sp - 1] = '\0';
		out->value = eq + 1;
		out->kind = PM_WARM_ENV;
		return 0;
	}
	if (sp && sp - line == 3 && !strncmp(line, "pid", 3)) {
		uint32_t v;
		if (parse_gen(sp + 1, &v) || v < 2 || v > INT32_MAX) {
			snprintf(err, errlen, "'%.64s': pid needs a process id, a whole number "
				 "from 2 to %d", line, INT32_MAX);
			return -1;
		}
		out->pid = (int)v;
		out->kind = PM_WARM_PID;
		return 0;
	}
	if (sp && sp - line == 5 && !strncmp(line, "start", 5)) {
		if (parse_gen(sp + 1, &out->gen)) {
			snprintf(err, errlen, "'%.64s': start needs the generation, a whole number "
				 "from 0 to %u", line, UINT32_MAX);
			return -1;
		}
		out->kind = PM_WARM_START;
		return 0;
	}
	snprintf(err, errlen, "unknown line '%.64s' (allowed: ready, env NAME=VALUE, start GEN)",
		 line);
	return -1;
}

int pm_warm_format_env(char *buf, size_t len, const char *name, const char *value, char *err,
		       size_t errlen)
{
	int n;

	if (!good_name(name, strlen(name)) || strchr(name, '=')) {
		snprintf(err, errlen, "'%.64s' is not an environment name", name);
		return -1;
	}
	if (strchr(value, '\n')) {
		snprintf(err, errlen, "the value of %s has a newline", name);
		return -1;
	}
	n = snprintf(buf, len, "env %s=%s\n", name, value);
	if (n < 0 || (size_t)n >= len || n >= PM_WARM_LINE_MAX) {
		snprintf(err, errlen, "%s's value is too long (a line is at most %d bytes)", name,
			 PM_WARM_LINE_MAX - 1);
		return -1;
	}
	return n;
}

int pm_warm_format_start(char *buf, size_t len, uint32_t gen)
{
	int n = snprintf(buf, len, "start %u\n", gen);
	return n < 0 || (size_t)n >= len ? -1 : n;
}

int pm_warm_format_ready(char *buf, size_t len)
{
	int n = snprintf(buf, len, "ready\n");
	return n < 0 || (size_t)n >= len ? -1 : n;
}

int pm_warm_buf_add(struct pm_warm_buf *b, const char *p, size_t n, char *err, size_t errlen)
{
	if (memchr(p, '\0', n)) {
		snprintf(err, errlen, "a NUL byte in a line (lines of text only)");
		return -1;
	}
	if (n > sizeof(b->data) - b->len) {
		snprintf(err, errlen, "a line longer than %d bytes", PM_WARM_LINE_MAX - 1);
		return -1;
	}
	memcpy(b->data + b->len, p, n);
	b->len += n;
	if (b->len == sizeof(b->data) && !memchr(b->data, '\n', b->len)) {
		snprintf(err, errlen, "a line longer than %d bytes", PM_WARM_LINE_MAX - 1);
		return -1;
	}
	return 0;
}

int pm_warm_buf_line(struct pm_warm_buf *b, char *line, size_t len)
{
	char *nl = memchr(b->data, '\n', b->len);
	size_t n;

	if (!nl)
		return -1;
	n = (size_t)(nl - b->data);
	if (n >= len)
		n = len - 1;
	memcpy(line, b->data, n);
	line[n] = '\0';
	n = (size_t)(nl - b->data);
	memmove(b->data, nl + 1, b->len - n - 1);
	b->len -= n + 1;
	return (int)(n < len ? n : len - 1);
}

/* A dotted Python module name: identifiers separated by dots. */
static bool good_module(const char *s, size_t n)
{
	size_t i;
	bool start = true;

	if (n == 0)
		return false;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '.') {
			if (start)
				return false;
			start = true;
			continue;
		}
		if (!(isalnum(c) || c == '_') || (start && isdigit(c)))
			return false;
		start = false;
	}
	return !start;
}

int pm_warm_mode_parse(const char *s, enum pm_warm_mode *mode, char *mods, size_t modslen)
{
	const char *p;

	if (modslen)
		mods[0] = '\0';
	if (!s)
		return -1;
	if (!strcmp(s, "off")) {
		*mode = PM_WARM_OFF;
		return 0;
	}
	if (!strcmp(s, "on")) {
		*mode = PM_WARM_CONTRACT;
		return 0;
	}
	if (strncmp(s, "python:", 7) || strlen(s + 7) >= modslen || strlen(s + 7) >= PM_WARM_MODS_MAX)
		return -1;
	for (p = s + 7;;) {
		const char *c = strchr(p, ',');
		size_t n = c ? (size_t)(c - p) : strlen(p);
		if (!good_module(p, n))
			return -1;
		if (!c)
			break;
		p = c + 1;
	}
	strcpy(mods, s + 7);
	*mode = PM_WARM_PYTHON;
	return 0;
}

bool pm_warm_is_python(const char *argv0)
{
	const char *b = strrchr(argv0, '/');
	size_t i;

	b = b ? b + 1 : argv0;
	if (strncmp(b, "python", 6))
		return false;
	for (i = 6; b[i]; i++)
		if (!isdigit((unsigned char)b[i]) && b[i] != '.')
			return false;
	return true;
}

bool pm_warm_py_server_opt(const char *arg)
{
	static const char *const opts[] = { "-u", "-B", "-E", "-s", "-I", "-P" };
	size_t i;

	for (i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
		if (!strcmp(arg, opts[i]))
			return true;
	return false;
}

int pm_warm_python_argv(char *const *argv, const char *mods, const char *server, char **out,
			size_t max)
{
	size_t n = 0, i;

	if (!argv[0] || max < 5)
		return -1;
	out[n++] = argv[0];
	for (i = 1; argv[i] && pm_warm_py_server_opt(argv[i]); i++) {
		if (n >= max - 4)
			return -1;
		out[n++] = argv[i];
	}
	out[n++] = (char *)server;
	out[n++] = (char *)mods;
	out[n++] = (char *)"--";
	for (i = 1; argv[i]; i++) {
		if (n >= max - 1)
			return -1;
		out[n++] = argv[i];
	}
	out[n] = NULL;
	return (int)n;
}
