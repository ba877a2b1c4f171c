/* The failing rank's error: torch's error file, stderr's tail, and the
 * report text made of them. */
#include "errinfo.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* ---- a small JSON reader: the whole document is checked, and the
 * strings at the paths torch writes are kept ---- */

#define JSON_DEPTH 32

struct jp {
	const char *p, *end;
	char *msg, *trace;
	size_t msglen, tracelen;
	bool have_msg;
};

static void ws(struct jp *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static int hex4(struct jp *j, unsigned *out)
{
	unsigned v = 0;
	int i;

	if (j->end - j->p < 4)
		return -1;
	for (i = 0; i < 4; i++) {
		char c = *j->p++;
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

/* Appends what fits, always NUL-terminated; never cuts a UTF-8 sequence. */
static void put(char *out, size_t len, size_t *off, const char *s, size_t n)
{
	if (!out || !len || *off + n >= len) {
		if (out && len)
			*off = len; /* full: nothing more, not even a shorter piece */
		return;
	}
	memcpy(out + *off, s, n);
	*off += n;
	out[*off] = '\0';
}

static size_t utf8(unsigned cp, char *b)
{
	if (cp < 0x80) {
		b[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		b[0] = (char)(0xc0 | (cp >> 6));
		b[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		b[0] = (char)(0xe0 | (cp >> 12));
		b[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		b[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	b[0] = (char)(0xf0 | (cp >> 18));
	b[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	b[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	b[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* At the opening quote: the string decoded into out (NULL: skipped). */
static int string(struct jp *j, char *out, size_t len)
{
	size_t off = 0;
	char b[4];

	if (out && len)
		out[0] = '\0';
	j->p++;
	while (j->p < j->end) {
		unsigned char c = (unsigned char)*j->p++;
		if (c == '"')
			return 0;
		if (c < 0x20)
			return -1;
		if (c != '\\') {
			/* A multi-byte sequence goes whole or not at all. */
			size_t k = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
			size_t i;
			if ((size_t)(j->end - j->p) < k - 1)
				k = 1;
			for (i = 1; i < k; i++)
				if (((unsigned char)j->p[i - 1] & 0xc0) != 0x80)
					k = 1; /* not UTF-8: byte by byte */
			b[0] = (char)c;
			memcpy(b + 1, j->p, k - 1);
			j->p += k - 1;
			put(out, len, &off, b, k);
			continue;
		}
		if (j->p >= j->end)
			return -1;
		c = (unsigned char)*j->p++;
		switch (c) {
		case '"': case '\\': case '/':
			b[0] = (char)c;
			put(out, len, &off, b, 1);
			break;
		case 'b': put(out, len, &off, "\b", 1); break;
		case 'f': put(out, len, &off, "\f", 1); break;
		case 'n': put(out, len, &off, "\n", 1); break;
		case 'r': put(out, len, &off, "\r", 1); break;
		case 't': put(out, len, &off, "\t", 1); break;
		case 'u': {
			unsigned cp, lo;
			if (hex4(j, &cp))
				return -1;
			if (cp >= 0xd800 && cp < 0xdc00) {
				if (j->end - j->p < 6 || j->p[0] != '\\' || j->p[1] != 'u')
					return -1;
				j->p += 2;
				if (hex4(j, &lo) || lo < 0xdc00 || lo >= 0xe000)
					return -1;
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			} else if (cp >= 0xdc00 && cp < 0xe000) {
				return -1;
			}
			if (!cp)
				cp = ' '; /* a NUL would end our text early */
			put(out, len, &off, b, utf8(cp, b));
			break;
		}
		default:
			return -1;
		}
	}
	return -1;
}

static int literal(struct jp *j, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(j->end - j->p) < n || memcmp(j->p, word, n))
		return -1;
	j->p += n;
	return 0;
}

static int number(struct jp *j)
{
	const char *s = j->p;

	if (j->p < j->end && *j->p == '-')
		j->p++;
	while (j->p < j->end && ((*j->p >= '0' && *j->p <= '9') || *j->p == '.' ||
				 *j->p == 'e' || *j->p == 'E' || *j->p == '+' || *j->p == '-'))
		j->p++;
	return j->p > s && (j->p[-1] >= '0' && j->p[-1] <= '9') ? 0 : -1;
}

/* What is kept: path is where the value sits (0: the document; 1: top-level
 * "message"; 2: message.message; 3: message.extraInfo; 4: its py_callstack). */
enum { AT_NONE = -1, AT_TOP, AT_MESSAGE, AT_MSG_MSG, AT_EXTRA, AT_CALLSTACK };

static int value(struct jp *j, int at, int depth);

static int child_path(int at, const char *key)
{
	if (at == AT_TOP && !strcmp(key, "message"))
		return AT_MESSAGE;
	if (at == AT_MESSAGE && !strcmp(key, "message"))
		return AT_MSG_MSG;
	if (at == AT_MESSAGE && !strcmp(key, "extraInfo"))
		return AT_EXTRA;
	if (at == AT_EXTRA && !strcmp(key, "py_callstack"))
		return AT_CALLSTACK;
	return AT_NONE;
}

static int object(struct jp *j, int at, int depth)
{
	char key[32];

	j->p++;
	ws(j);
	if (j->p < j->end && *j->p == '}') {
		j->p++;
		return 0;
	}
	for (;;) {
		ws(j);
		if (j->p >= j->end || *j->p != '"' || string(j, key, sizeof(key)))
			return -1;
		ws(j);
		if (j->p >= j->end || *j->p++ != ':')
			return -1;
		if (value(j, at == AT_NONE ? AT_NONE : child_path(at, key), depth + 1))
			return -1;
		ws(j);
		if (j->p >= j->end)
			return -1;
		if (*j->p == '}') {
			j->p++;
			return 0;
		}
		if (*j->p++ != ',')
			return -1;
	}
}

static int array(struct jp *j, int depth)
{
	j->p++;
	ws(j);
	if (j->p < j->end && *j->p == ']') {
		j->p++;
		return 0;
	}
	for (;;) {
		if (value(j, AT_NONE, depth + 1))
			return -1;
		ws(j);
		if (j->p >= j->end)
			return -1;
		if (*j->p == ']') {
			j->p++;
			return 0;
		}
		if (*j->p++ != ',')
			return -1;
	}
}

static int value(struct jp *j, int at, int depth)
{
	if (depth > JSON_DEPTH)
		return -1;
	ws(j);
	if (j->p >= j->end)
		return -1;
	switch (*j->p) {
	case '{':
		return object(j, at, depth);
	case '[':
		return array(j, depth);
	case '"':
		if (at == AT_MESSAGE || at == AT_MSG_MSG) {
			j->have_msg = true;
			return string(j, j->msg, j->msglen);
		}
		if (at == AT_CALLSTACK)
			return string(j, j->trace, j->tracelen);
		return string(j, NULL, 0);
	case 't':
		return literal(j, "true");
	case 'f':
		return literal(j, "false");
	case 'n':
		return literal(j, "null");
	default:
		return number(j);
	}
}

int pm_errfile_parse(const char *json, size_t len, char *msg, size_t msglen, char *trace,
		     size_t tracelen)
{
	struct jp j = { .p = json, .end = json + len, .msg = msg, .trace = trace,
			.msglen = msglen, .tracelen = tracelen };

	if (msg && msglen)
		msg[0] = '\0';
	if (trace && tracelen)
		trace[0] = '\0';
	if (value(&j, AT_TOP, 0))
		goto bad;
	ws(&j);
	if (j.p != j.end || !j.have_msg)
		goto bad;
	return 0;
bad:
	if (msg && msglen)
		msg[0] = '\0';
	if (trace && tracelen)
		trace[0] = '\0';
	return -1;
}

/* ---- stderr's tail ---- */

void pm_tail_reset(struct pm_tail *t)
{
	t->head = 0;
	t->len = 0;
}

void pm_tail_feed(struct pm_tail *t, const char *data, size_t n)
{
	if (n >= PM_TAIL_BYTES) {
		data += n - PM_TAIL_BYTES;
		n = PM_TAIL_BYTES;
	}
	while (n) {
		size_t room = PM_TAIL_BYTES - t->head, k = n < room ? n : room;
		memcpy(t->buf + t->head, data, k);
		t->head = (t->head + k) % PM_TAIL_BYTES;
		t->len = t->len + k > PM_TAIL_BYTES ? PM_TAIL_BYTES : t->len + k;
		data += k;
		n -= k;
	}
}

void pm_tail_lines(const struct pm_tail *t, unsigned max_lines, char *out, size_t len)
{
	char lin[PM_TAIL_BYTES + 1];
	size_t start = (t->head + PM_TAIL_BYTES - t->len) % PM_TAIL_BYTES, i, n = t->len, from;
	unsigned lines = 0;

	if (!len)
		return;
	for (i = 0; i < n; i++)
		lin[i] = t->buf[(start + i) % PM_TAIL_BYTES];
	lin[n] = '\0';
	for (i = 0; i < n; i++)
		if (!lin[i])
			lin[i] = ' ';
	/* The ring's first line may be a piece of one: drop it. */
	from = 0;
	if (t->len == PM_TAIL_BYTES) {
		char *nl = memchr(lin, '\n', n);
		from = nl ? (size_t)(nl - lin) + 1 : n;
	}
	while (n > from && lin[n - 1] == '\n')
		n--;
	/* Walk back max_lines line starts. */
	i = n;
	while (i > from && lines < max_lines) {
		i--;
		while (i > from && lin[i - 1] != '\n')
			i--;
		lines++;
	}
	n -= i;
	if (n >= len)
		n = len - 1;
	memcpy(out, lin + i, n);
	out[n] = '\0';
}

/* ---- report texts ---- */

void pm_err_compose(const char *summary, const char *detail, char *out, size_t len)
{
	size_t off = 0, n;

	if (!len)
		return;
	out[0] = '\0';
	n = strcspn(summary, "\n");
	put(out, len, &off, summary, n < len - 1 ? n : len - 1);
	if (!detail || !*detail)
		return;
	n = strlen(detail);
	if (off + 1 + n >= len)
		n = len - off - 2 < len ? len - off - 2 : 0;
	if (off + 1 < len - 1) {
		put(out, len, &off, "\n", 1);
		put(out, len, &off, detail, n);
	}
}

static bool blank(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return false;
	return true;
}

/* A crash under faulthandler ends with "Extension modules: ..." (and
 * other threads' frames): the useful line is "Fatal Python error: X" with
 * the crashing thread's innermost frame, the first "  File" line after
 * "Current thread ... (most recent call first):". */
static bool fatal_summary(const char *tail, char *sum, size_t len)
{
	const char *f = NULL, *p, *cur, *fr;
	const char *tag = "Fatal Python error: ";

	for (p = tail; (p = strstr(p, tag)); p++)
		if (p == tail || p[-1] == '\n')
			f = p;
	if (!f)
		return false;
	cur = strstr(f, "\nCurrent thread ");
	fr = strstr(cur ? cur : f, "\n  File \"");
	if (fr) {
		const char *name = fr + 9, *q = strchr(name, '"'), *line, *in;
		size_t eol = strcspn(fr + 1, "\n");
		line = q ? strstr(q, ", line ") : NULL;
		in = line ? strstr(line, " in ") : NULL;
		if (q && line && in && in < fr + 1 + eol) {
			int n = snprintf(sum, len, "%.*s, in %.*s (%.*s, line %.*s)",
					 (int)strcspn(f, "\n"), f, (int)(fr + 1 + eol - in - 4), in + 4,
					 (int)(q - name), name, (int)(in - line - 7), line + 7);
			return n > 0;
		}
	}
	snprintf(sum, len, "%.*s", (int)strcspn(f, "\n"), f);
	return true;
}

/* Where the last max lines of s start (trailing newlines are no lines). */
static const char *last_lines(const char *s, unsigned max)
{
	const char *p = s + strlen(s);
	unsigned n = 0;

	while (p > s && p[-1] == '\n')
		p--;
	while (p > s && n < max) {
		p--;
		while (p > s && p[-1] != '\n')
			p--;
		n++;
	}
	return p;
}

void pm_err_from_tail(const char *all, char *out, size_t len)
{
	const char *tail = last_lines(all, PM_TAIL_LINES);
	const char *end = tail + strlen(tail), *s, *e = end;
	char sum[PM_ERR_SUMMARY_MAX + 1];
	size_t n;

	if (!len)
		return;
	out[0] = '\0';
	if (fatal_summary(all, sum, sizeof(sum))) {
		pm_err_compose(sum, tail, out, len);
		return;
	}
	while (e > tail) {
		s = e;
		while (s > tail && s[-1] != '\n')
			s--;
		if (!blank(s, (size_t)(e - s))) {
			const char *t = tail;
			n = (size_t)(e - s) < sizeof(sum) - 1 ? (size_t)(e - s) : sizeof(sum) - 1;
			memcpy(sum, s, n);
			sum[n] = '\0';
			/* A tail of that one line says no more than the summary. */
			while (*t && (*t == '\n' || blank(t, strcspn(t, "\n"))))
				t += strcspn(t, "\n") + (t[strcspn(t, "\n")] ? 1 : 0);
			pm_err_compose(sum, t == s ? "" : tail, out, len);
			return;
		}
		e = s > tail ? s - 1 : tail;
	}
}

void pm_err_summary(const char *text, char *out, size_t len)
{
	size_t n = strcspn(text, "\n"), i, k;

	if (!len)
		return;
	while (n && (text[n - 1] == ' ' || text[n - 1] == '\r' || text[n - 1] == '\t'))
		n--;
	k = n > PM_ERR_SUMMARY_MAX ? PM_ERR_SUMMARY_MAX : n;
	if (k >= len)
		k = len - 1;
	/* Cut on a character boundary. */
	while (k < n && k && ((unsigned char)text[k] & 0xc0) == 0x80)
		k--;
	for (i = 0; i < k; i++)
		out[i] = (unsigned char)text[i] < 0x20 ? ' ' : text[i];
	out[k] = '\0';
	if (k < n && k + 3 < len)
		memcpy(out + k, "...", 4);
}

const char *pm_err_detail(const char *text)
{
	const char *nl = strchr(text, '\n');

	return nl ? nl + 1 : "";
}

void pm_err_exit_line(int code, const char *error, char *out, size_t len)
{
	char same[2][48], sum[PM_ERR_SUMMARY_MAX + 4];
	int n;

	if (!len)
		return;
	n = snprintf(out, len, "exited with code %d", code);
	if (!error || n < 0 || (size_t)n >= len)
		return;
	pm_err_summary(error, sum, sizeof(sum));
	snprintf(same[0], sizeof(same[0]), "exit code %d", code);
	snprintf(same[1], sizeof(same[1]), "exited with code %d", code);
	if (blank(sum, strlen(sum)) || !strcmp(sum, same[0]) || !strcmp(sum, same[1]))
		return;
	snprintf(out + n, len - (size_t)n, " (%s)", sum);
}

void pm_err_from_stdout(const char *tail, char *out, size_t len)
{
	const char *e = tail + strlen(tail), *s;
	char sum[PM_ERR_SUMMARY_MAX + 4];

	if (!len)
		return;
	out[0] = '\0';
	while (e > tail) {
		s = e;
		while (s > tail && s[-1] != '\n')
			s--;
		if (!blank(s, (size_t)(e - s))) {
			/* One byte past the summary's bound: pm_err_summary then
			 * cuts it with "...". */
			char line[PM_ERR_SUMMARY_MAX + 2];
			size_t n = (size_t)(e - s), i = 0;

			while (i < n && (s[i] == ' ' || s[i] == '\t'))
				i++;
			n -= i;
			if (n > sizeof(line) - 1)
				n = sizeof(line) - 1;
			memcpy(line, s + i, n);
			line[n] = '\0';
			pm_err_summary(line, sum, sizeof(sum));
			snprintf(out, len, "no error output; stdout's last line: \"%s\"", sum);
			return;
		}
		e = s > tail ? s - 1 : tail;
	}
}
