#include "sweep_results.h"
#include "sweep_metric.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

void pm_sr_from_queue(const struct pm_sq *q, int i, const char *name, uint64_t now_ms,
		      struct pm_sr_trial *out)
{
	const struct pm_sq_trial *t = &q->t[i];
	bool ended = t->state == PM_TS_DONE || t->state == PM_TS_FAILED;
	uint64_t to = ended ? t->end_ms : now_ms;

	out->name = name;
	out->state = t->state;
	out->exit_code = t->exit_code;
	out->restarts = t->restarts;
	out->requeues = t->requeues;
	out->runtime_ms = t->first_start_ms && to > t->first_start_ms ? to - t->first_start_ms : 0;
	out->error = t->error;
	out->result = t->result;
}

/* An appender that remembers whether anything was cut. */
struct out {
	char *b;
	size_t len, off;
	bool cut;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int w;

	if (o->cut)
		return;
	va_start(ap, fmt);
	w = vsnprintf(o->b + o->off, o->len - o->off, fmt, ap);
	va_end(ap);
	if (w < 0 || (size_t)w >= o->len - o->off) {
		o->cut = true;
		o->b[o->off] = '\0';
		return;
	}
	o->off += w;
}

static void putc_(struct out *o, char c)
{
	if (o->cut || o->off + 1 >= o->len) {
		o->cut = true;
		return;
	}
	o->b[o->off++] = c;
	o->b[o->off] = '\0';
}

static void put_seconds(struct out *o, uint64_t ms)
{
	put(o, "%llu.%03u", (unsigned long long)(ms / 1000), (unsigned)(ms % 1000));
}

const char *pm_sr_tsv_header(void)
{
	return "trial\tstate\texit\trestarts\truntime_s\terror\tmetric\tvalue\n";
}

static int finish(struct out *o, char *buf, size_t len)
{
	if (o->cut) {
		if (len)
			buf[0] = '\0';
		return -1;
	}
	return (int)o->off;
}

/* The result's parts, or false when it has none (or the queue holds
 * something that is no result). */
static bool result_of(const struct pm_sr_trial *t, struct pm_metric *m)
{
	char why[160];

	return t->result && *t->result &&
	       !pm_metric_parse(t->result, strlen(t->result), m, why, sizeof(why));
}

/* An error as one line: its own line ends and tabs become blanks. */
static void put_oneline(struct out *o, const char *e)
{
	for (; *e; e++)
		putc_(o, *e == '\t' || *e == '\n' || *e == '\r' ? ' ' : *e);
}

int pm_sr_tsv_line(const struct pm_sr_trial *t, char *buf, size_t len)
{
	struct out o = { buf, len, 0, len == 0 };
	struct pm_metric m;

	put(&o, "%s\t%s\t", t->name, pm_ts_name(t->state));
	if (t->exit_code >= 0)
		put(&o, "%d", t->exit_code);
	else
		putc_(&o, '-');
	put(&o, "\t%d\t", t->restarts);
	put_seconds(&o, t->runtime_ms);
	putc_(&o, '\t');
	if (!t->error || !*t->error)
		putc_(&o, '-');
	else
		put_oneline(&o, t->error);
	if (result_of(t, &m))
		put(&o, "\t%s\t%s", m.name, m.value);
	else
		put(&o, "\t-\t-");
	putc_(&o, '\n');
	return finish(&o, buf, len);
}

static void put_json_string(struct out *o, const char *s)
{
	putc_(o, '"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\') {
			putc_(o, '\\');
			putc_(o, (char)c);
		} else if (c == '\n') {
			put(o, "\\n");
		} else if (c == '\t') {
			put(o, "\\t");
		} else if (c < 0x20 || c == 0x7f) {
			put(o, "\\u%04x", c);
		} else {
			putc_(o, (char)c);
		}
	}
	putc_(o, '"');
}

int pm_sr_json_line(const struct pm_sr_trial *t, char *buf, size_t len)
{
	struct out o = { buf, len, 0, len == 0 };
	struct pm_metric m;

	put(&o, "{\"trial\":");
	put_json_string(&o, t->name);
	put(&o, ",\"state\":\"%s\",\"exit\":", pm_ts_name(t->state));
	if (t->exit_code >= 0)
		put(&o, "%d", t->exit_code);
	else
		put(&o, "null");
	put(&o, ",\"restarts\":%d,\"requeues\":%d,\"runtime_s\":", t->restarts, t->requeues);
	put_seconds(&o, t->runtime_ms);
	put(&o, ",\"error\":");
	if (t->error)
		put_json_string(&o, t->error);
	else
		put(&o, "null");
	/* The value as JSON reads it (".5" as written is no JSON number). */
	if (result_of(t, &m)) {
		put(&o, ",\"metric\":");
		put_json_string(&o, m.name);
		put(&o, ",\"value\":%.15g", m.v);
	} else {
		put(&o, ",\"metric\":null,\"value\":null");
	}
	put(&o, "}\n");
	return finish(&o, buf, len);
}

void pm_sr_count(const struct pm_sr_trial *t, int n, struct pm_sr_counts *c)
{
	int i;

	memset(c, 0, sizeof(*c));
	c->total = n;
	for (i = 0; i < n; i++)
		switch (t[i].state) {
		case PM_TS_DONE:
			c->done++;
			break;
		case PM_TS_FAILED:
			c->failed++;
			break;
		case PM_TS_QUEUED:
			c->queued++;
			break;
		case PM_TS_REQUEUED:
			c->requeued++;
			break;
		default:
			c->running++;
			break;
		}
}

size_t pm_sr_summary(const struct pm_sr_trial *t, int n, const char *results, char *buf,
		     size_t len)
{
	struct out o = { buf, len, 0, len == 0 };
	struct pm_sr_counts c;
	int i, listed = 0;

	if (len)
		buf[0] = '\0';
	pm_sr_count(t, n, &c);
	put(&o, "procmgr: sweep of %d trial%s: %d done, %d failed", c.total,
	    c.total == 1 ? "" : "s", c.done, c.failed);
	if (c.running)
		put(&o, ", %d running", c.running);
	if (c.queued + c.requeued)
		put(&o, ", %d never started", c.queued + c.requeued);
	if (results)
		put(&o, "; results in %s", results);
	putc_(&o, '\n');
	for (i = 0; i < n; i++) {
		if (t[i].state != PM_TS_FAILED)
			continue;
		if (listed++ == PM_SR_LIST_MAX) {
			put(&o, "procmgr: ... and %d more failed trial%s\n", c.failed - PM_SR_LIST_MAX,
			    c.failed - PM_SR_LIST_MAX == 1 ? "" : "s");
			break;
		}
		put(&o, "procmgr: trial %s failed", t[i].name);
		if (t[i].restarts)
			put(&o, " after %d restart%s", t[i].restarts, t[i].restarts == 1 ? "" : "s");
		put(&o, ": ");
		put_oneline(&o, t[i].error ? t[i].error : "no error line");
		putc_(&o, '\n');
	}
	return o.off;
}

int pm_sr_exit_code(const struct pm_sr_trial *t, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (t[i].state != PM_TS_DONE)
			return 1;
	return 0;
}
