#include "sweep_status.h"

#include <stdlib.h>
#include <string.h>

#include "common/text.h"

int pm_trials_st_add(struct pm_trials_st *a, const char *line)
{
	struct pm_trial_st t;
	int n = 0;

	if (strncmp(line, "trial ", 6))
		return 0;
	memset(&t, 0, sizeof(t));
	if (sscanf(line + 6, "%71s %15s %511s %d %llu %15s %n", t.name, t.state, t.slots,
		   &t.restarts, &t.runtime_ms, t.exit, &n) != 6 || !n)
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
	fprintf(f, "%-20s %-10s %-24s %-8s %-8s %-5s %s\n", "TRIAL", "STATE", "SLOTS", "RESTARTS",
		"RUNTIME", "EXIT", "ERROR");
	for (i = 0; i < a->n; i++) {
		const struct pm_trial_st *t = &a->t[i];
		fmt_s(t->runtime_ms, rt, sizeof(rt));
		fprintf(f, "%-20s %-10s %-24s %-8d %-8s %-5s %s\n", t->name, t->state, t->slots,
			t->restarts, !strcmp(t->state, "queued") ? "-" : rt, t->exit,
			strcmp(t->error, "-") ? t->error : "");
	}
}

void pm_trials_st_json(FILE *f, const struct pm_trials_st *a)
{
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
		fprintf(f, ",\"restarts\":%d,\"runtime_ms\":%llu,\"exit\":%s,\"error\":", t->restarts,
			t->runtime_ms, strcmp(t->exit, "-") ? t->exit : "null");
		if (strcmp(t->error, "-"))
			pm_json_print(f, t->error);
		else
			fputs("null", f);
		fputc('}', f);
	}
	fputc(']', f);
}

void pm_trials_st_free(struct pm_trials_st *a)
{
	free(a->t);
	memset(a, 0, sizeof(*a));
}
