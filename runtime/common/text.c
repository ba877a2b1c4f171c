#include <stdarg.h>
#include "text.h"

#include <string.h>

/* The escape of c, or NULL when c stands for itself. */
static const char *escape(unsigned char c, char tmp[8])
{
	if (c == '"')
		return "\\\"";
	if (c == '\\')
		return "\\\\";
	if (c < 0x20) {
		snprintf(tmp, 8, "\\u%04x", c);
		return tmp;
	}
	return NULL;
}

void pm_json_escape(const char *s, char *buf, size_t len)
{
	size_t o = 0;
	char tmp[8];

	if (!len)
		return;
	for (; *s; s++) {
		const char *e = escape((unsigned char)*s, tmp);
		size_t n = e ? strlen(e) : 1;
		if (o + n >= len)
			break;
		if (e)
			memcpy(buf + o, e, n);
		else
			buf[o] = *s;
		o += n;
	}
	buf[o] = '\0';
}

void pm_json_print(FILE *f, const char *s)
{
	char tmp[8];

	fputc('"', f);
	for (; *s; s++) {
		const char *e = escape((unsigned char)*s, tmp);
		if (e)
			fputs(e, f);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

void pm_fmt_seconds(unsigned ms, char *buf, size_t len)
{
	char frac[8];
	size_t n;

	if (ms % 1000 == 0) {
		snprintf(buf, len, "%u", ms / 1000);
		return;
	}
	snprintf(frac, sizeof(frac), "%03u", ms % 1000);
	for (n = strlen(frac); n > 1 && frac[n - 1] == '0'; n--)
		frac[n - 1] = '\0';
	snprintf(buf, len, "%u.%s", ms / 1000, frac);
}

size_t pm_text_visible(char *s)
{
	unsigned char *p = (unsigned char *)s;
	size_t n = 0;

	for (; *p; p++) {
		if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f) {
			*p = '?';
			n++;
		} else if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {
			p[0] = '?';
			p[1] = '?';
			p++;
			n += 2;
		}
	}
	return n;
}

void pm_textbuf_put(struct pm_textbuf *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->full)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->off, o->len - o->off, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= o->len - o->off)
		o->full = true;
	else
		o->off += (size_t)n;
}

const char *pm_event_field(const char *fields, const char *key, bool *quoted)
{
	char pat[48];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(fields, pat);
	if (!p)
		return NULL;
	p += strlen(pat);
	*quoted = *p == '"';
	return *quoted ? p + 1 : p;
}
