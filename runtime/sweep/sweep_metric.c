#include "sweep_metric.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c == '-';
}

static bool blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

int pm_metric_parse(const char *line, size_t n, struct pm_metric *m, char *err, size_t errlen)
{
	const char *s = line, *e = line + n, *eq, *v;
	char num[PM_METRIC_VALUE_MAX + 1], *end;
	size_t k, i;
	double d;

	memset(m, 0, sizeof(*m));
	while (s < e && blank(*s))
		s++;
	while (e > s && blank(e[-1]))
		e--;
	eq = memchr(s, '=', (size_t)(e - s));
	if (!eq) {
		snprintf(err, errlen, "'%.*s' is not NAME=VALUE (e.g. loss=0.25)",
			 (int)((size_t)(e - s) > 60 ? 60 : (size_t)(e - s)), s);
		return -1;
	}
	k = (size_t)(eq - s);
	if (!k || k > PM_METRIC_NAME_MAX) {
		snprintf(err, errlen, "the result's name has %zu characters; it has 1 to %d", k,
			 PM_METRIC_NAME_MAX);
		return -1;
	}
	for (i = 0; i < k; i++)
		if (!name_char(s[i])) {
			snprintf(err, errlen, "the result's name '%.*s' has '%c'; a name has letters, "
				 "digits, '_', '.' and '-'", (int)k, s, s[i] < 0x20 ? '?' : s[i]);
			return -1;
		}
	v = eq + 1;
	k = (size_t)(e - v);
	if (!k || k > PM_METRIC_VALUE_MAX) {
		snprintf(err, errlen, "the value of %.*s has %zu characters; a value is a number of "
			 "1 to %d", (int)(eq - s), s, k, PM_METRIC_VALUE_MAX);
		return -1;
	}
	memcpy(num, v, k);
	num[k] = '\0';
	errno = 0;
	d = strtod(num, &end);
	/* strtod takes "nan", "inf" and hex too: a result is a plain number. */
	if (*end || end == num || errno == ERANGE || !isfinite(d) || strpbrk(num, "xXnNiI")) {
		snprintf(err, errlen, "the value of %.*s, '%s', is not a finite decimal number "
			 "(e.g. 0.25, -3, 1e-4)", (int)(eq - s), s, num);
		return -1;
	}
	memcpy(m->name, s, (size_t)(eq - s));
	m->name[eq - s] = '\0';
	memcpy(m->value, num, k + 1);
	m->v = d;
	return 0;
}

int pm_metric_from_text(const char *buf, size_t n, struct pm_metric *m, char *err,
			size_t errlen)
{
	const char *e = buf + n, *s;

	memset(m, 0, sizeof(*m));
	while (e > buf) {
		size_t i;
		bool empty = true;

		s = e;
		while (s > buf && s[-1] != '\n')
			s--;
		for (i = 0; s + i < e; i++)
			if (!blank(s[i]))
				empty = false;
		if (!empty) {
			/* A NUL inside is no text. */
			if (memchr(s, '\0', (size_t)(e - s))) {
				snprintf(err, errlen, "its last line has a NUL byte: not NAME=VALUE");
				return -1;
			}
			return pm_metric_parse(s, (size_t)(e - s), m, err, errlen) ? -1 : 1;
		}
		e = s > buf ? s - 1 : buf;
	}
	return 0;
}

void pm_metric_format(const struct pm_metric *m, char *buf, size_t len)
{
	snprintf(buf, len, "%s=%s", m->name, m->value);
}

void pm_metric_encode(struct pm_msg *msg, const struct pm_metric *m, const char *error)
{
	char text[PM_WIRE_TEXT_MAX + 1];
	size_t off = 0;

	text[0] = '\0';
	msg->count &= ~(uint32_t)PM_FLAG_RESULT;
	if (m && m->name[0]) {
		pm_metric_format(m, text, sizeof(text));
		off = strlen(text);
		msg->count |= PM_FLAG_RESULT;
		if (error && *error)
			text[off++] = '\n';
		text[off] = '\0';
	}
	if (error)
		snprintf(text + off, sizeof(text) - off, "%s", error);
	pm_msg_set_text(msg, text);
}

int pm_metric_decode(const struct pm_msg *msg, struct pm_metric *m, const char **error)
{
	const char *nl;
	char why[160];

	memset(m, 0, sizeof(*m));
	*error = msg->text;
	if (!(msg->count & PM_FLAG_RESULT))
		return 0;
	nl = strchr(msg->text, '\n');
	*error = nl ? nl + 1 : msg->text + msg->text_len;
	if (pm_metric_parse(msg->text, nl ? (size_t)(nl - msg->text) : msg->text_len, m, why,
			    sizeof(why))) {
		memset(m, 0, sizeof(*m));
		return -1;
	}
	return 1;
}

int pm_metric_cmp(const char *a, const char *b, bool descending)
{
	struct pm_metric x, y;
	char why[160];
	bool hx = a && *a && !pm_metric_parse(a, strlen(a), &x, why, sizeof(why));
	bool hy = b && *b && !pm_metric_parse(b, strlen(b), &y, why, sizeof(why));
	int c;

	if (!hx || !hy)
		return hx == hy ? 0 : hx ? -1 : 1;
	/* Trials that report different names sort by name first. */
	c = strcmp(x.name, y.name);
	if (c)
		return c < 0 ? -1 : 1;
	if (x.v == y.v)
		return 0;
	return (x.v < y.v) != descending ? -1 : 1;
}
