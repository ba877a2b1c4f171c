#include "sweep_status.h"

#include <stdlib.h>
#include <string.h>

#include "common/text.h"
#include "sweep/sweep_metric.h"

int pm_trials_st_add(struct pm_trials_st *a, const char *line)
{
	struct pm_trial_st t;
	int n = 0;

	if (strncmp(line, "trial ", 6))
		return 0;
	memset(&t, 0, sizeof(t));
	if (sscanf(line + 6, "%71s %15s %511s %d %llu %15s %79s %n", t.name, t.state, t.slots,
		   &t.restarts, &t.runtime_ms, t.exit, t.result, &n) != 7 || !n)
		return -1;
	snprintf(t.error, sizeof(t.error), "%s", line + 6 + n);
	if (a->n == a->cap) {
		int c = a->cap ? a->cap * 2 : 64;
		void *p = realloc(a->t, (size_t)c * sizeof(*a->t));
		if (!p)
			return -1;
		a->t = p;
		a->cap = c;
	}
	a->t[a->n++] = t;
	return 1;
}

static void counts(const struct pm_trials_st *a, int *done, int *running, int *queued,
		   int *failed)
{
	int i;

	*done = *running = *queued = *failed = 0;
	for (i = 0; i < a->n; i++) {
		const char *s = a->t[i].state;
		if (!strcmp(s, "done"))
			(*done)++;
		else if (!strcmp(s, "failed"))
			(*failed)++;
		else if (!strcmp(s, "queued") || !strcmp(s, "requeued"))
			(*queued)++;
		else
			(*running)++; /* starting, running, restarting */
	}
}

void pm_trials_st_summary(const struct pm_trials_st *a, char *buf, size_t len)
{
	int d, r, q, f;

	counts(a, &d, &r, &q, &f);
	snprintf(buf, len, "%d trial%s: %d done, %d running, %d queued, %d failed", a->n,
		 a->n == 1 ? "" : "s", d, r, q, f);
}

static void fmt_s(unsigned long long ms, char *buf, size_t len)
{
	snprintf(buf, len, ms < 10000 ? "%.2fs" : "%.0fs", ms / 1000.0);
}

void pm_trials_st_print(FILE *f, const struct pm_trials_st *a)
{
	char sum[160], rt[32];
	int i;

	pm_trials_st_summary(a, sum, sizeof(sum));
	fprintf(f, "sweep: %s\n", sum);
	fprintf(f, "%-20s %-10s %-24s %-8s %-8s %-5s %-16s %s\n", "TRIAL", "STATE", "SLOTS",
		"RESTARTS", "RUNTIME", "EXIT", "RESULT", "ERROR");
	for (i = 0; i < a->n; i++) {
		const struct pm_trial_st *t = &a->t[i];
		fmt_s(t->runtime_ms, rt, sizeof(rt));
		fprintf(f, "%-20s %-10s %-24s %-8d %-8s %-5s %-16s %s\n", t->name, t->state,
			t->slots, t->restarts, !strcmp(t->state, "queued") ? "-" : rt, t->exit,
			t->result, strcmp(t->error, "-") ? t->error : "");
	}
}

void pm_trials_st_json(FILE *f, const struct pm_trials_st *a)
{
	struct pm_metric m;
	char why[160];
	int i, d, r, q, fl;

	counts(a, &d, &r, &q, &fl);
	fprintf(f, ",\"sweep\":{\"trials\":%d,\"done\":%d,\"running\":%d,\"queued\":%d,"
		"\"failed\":%d},\"trials\":[", a->n, d, r, q, fl);
	for (i = 0; i < a->n; i++) {
		const struct pm_trial_st *t = &a->t[i];
		fprintf(f, "%s{\"trial\":", i ? "," : "");
		pm_json_print(f, t->name);
		fprintf(f, ",\"state\":\"%s\",\"slots\":", t->state);
		pm_json_print(f, strcmp(t->slots, "-") ? t->slots : "");
		fprintf(f, ",\"restarts\":%d,\"runtime_ms\":%llu,\"exit\":%s,", t->restarts,
			t->runtime_ms, strcmp(t->exit, "-") ? t->exit : "null");
		if (!pm_metric_parse(t->result, strlen(t->result), &m, why, sizeof(why))) {
			fputs("\"metric\":", f);
			pm_json_print(f, m.name);
			fprintf(f, ",\"value\":%.15g,", m.v);
		} else {
			fputs("\"metric\":null,\"value\":null,", f);
		}
		fputs("\"error\":", f);
		if (strcmp(t->error, "-"))
			pm_json_print(f, t->error);
		else
			fputs("null", f);
		fputc('}', f);
	}
	fputc(']', f);
}

int pm_trials_st_sort_check(const char *key, char *why, size_t len)
{
	if (!strcmp(key, "result") || !strcmp(key, "-result"))
		return 0;
	snprintf(why, len, "unknown sort key '%s': result (the lowest value first) or -result "
		 "(the highest first)", key);
	return -1;
}

static bool by_desc;

static const char *result_of(const struct pm_trial_st *t)
{
	return strcmp(t->result, "-") ? t->result : NULL;
}

static int by_result(const void *x, const void *y)
{
	const struct pm_trial_st *a = x, *b = y;
	int c = pm_metric_cmp(result_of(a), result_of(b), by_desc);

	/* qsort is not stable: the file's order breaks ties. */
	return c ? c : a->order - b->order;
}

int pm_trials_st_sort(struct pm_trials_st *a, const char *key)
{
	char why[160];
	int i;

	if (pm_trials_st_sort_check(key, why, sizeof(why)))
		return -1;
	by_desc = key[0] == '-';
	for (i = 0; i < a->n; i++)
		a->t[i].order = i;
	qsort(a->t, (size_t)a->n, sizeof(*a->t), by_result);
	return 0;
}

void pm_trials_st_free(struct pm_trials_st *a)
{
	free(a->t);
	memset(a, 0, sizeof(*a));
}
