/* Text helpers every part shares. Pure. */
#ifndef PM_TEXT_H
#define PM_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* s as the body of a JSON string (no quotes) into buf, cut at a whole
 * escape if buf is too small. */
void pm_json_escape(const char *s, char *buf, size_t len);
/* s as a JSON string, quotes included, onto f. */
void pm_json_print(FILE *f, const char *s);
/* Make s safe to print on a terminal, in place: every control character
 * but newline and tab (ESC above all: the job user's text must not drive
 * root's terminal), DEL and the C1 controls (U+0080-U+009F in UTF-8)
 * become '?'. Returns how many bytes were replaced. */
size_t pm_text_visible(char *s);
/* A duration as people and Slurm's users write it in seconds: "30",
 * "1.5", "0.25" (no trailing zeros). */
void pm_fmt_seconds(unsigned ms, char *buf, size_t len);

/* A value quoted in a message is cut after PM_QMAX characters, so that what
 * follows it (the option or key, what is allowed) still fits. Use as
 * "'%.*s%s'" with PM_Q(s). */
#define PM_QMAX 64
#define PM_Q(s) (int)(strlen(s) > PM_QMAX ? PM_QMAX : strlen(s)), (s), \
	(strlen(s) > PM_QMAX ? "..." : "")

/* Where member key's value starts in procmgr's own events' JSON members
 * (after the colon and any opening quote; *quoted says which), NULL if
 * absent. Strings in them are escaped, so a quoted key inside a message
 * ("\"gen\":") never matches: the first match is the member. */
const char *pm_event_field(const char *fields, const char *key, bool *quoted);

/* A text built piece by piece into a caller's buffer: once a piece does not
 * fit, full is set and nothing more is added (the caller says the text is
 * cut, or drops it). */
struct pm_textbuf {
	char *buf;
	size_t len, off;
	bool full;
};
void pm_textbuf_put(struct pm_textbuf *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
