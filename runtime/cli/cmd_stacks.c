/* procmgr stacks JOBID[.STEP] [--rank LIST] [--json]: the ranks' native
 * and Python stacks, taken now on every node at once, grouped: identical
 * stacks shown once with their rank list, the biggest group first, so
 * that the outlier (the rank stuck elsewhere) comes last. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cliargs.h"
#include "client.h"
#include "cmd.h"
#include "common/stacks.h"
#include "common/text.h"

#define USAGE \
	"usage: procmgr stacks JOBID[.STEP] [--rank LIST] [--json]\n" \
	"  the native and Python stacks of the step's running ranks, taken now (gdb on\n" \
	"  each node, with python3-dbg for Python frames; else eu-stack), identical\n" \
	"  stacks shown once with their ranks.\n" \
	"  --rank LIST  only these ranks, such as 0-3,7\n" \
	"  --json       {\"groups\":[{\"ranks\":[...],\"top\":...,\"stack\":...}],\"notes\":[...]}\n"

struct stack {
	int rank;
	char *text;
	size_t len;
};

struct answers {
	struct stack *st;
	int n, cap;
	char *notes;
	size_t nlen;
};

static int append(char **buf, size_t *len, const char *text, size_t n)
{
	char *p = realloc(*buf, *len + n + 1);

	if (!p)
		return -1;
	memcpy(p + *len, text, n);
	*len += n;
	p[*len] = '\0';
	*buf = p;
	return 0;
}

/* A rank's stack may come in several frames, in order. */
static int collect(void *arg, const struct pm_msg *m)
{
	struct answers *a = arg;
	int i;

	if (m->rank < 0)
		return append(&a->notes, &a->nlen, m->text, m->text_len) ? 1 : 0;
	for (i = 0; i < a->n && a->st[i].rank != m->rank; i++)
		;
	if (i == a->n) {
		if (a->n == a->cap) {
			int c = a->cap ? a->cap * 2 : 16;
			void *p = realloc(a->st, (size_t)c * sizeof(*a->st));
			if (!p)
				return 1;
			a->st = p;
			a->cap = c;
		}
		a->st[a->n++] = (struct stack){ .rank = m->rank };
	}
	return append(&a->st[i].text, &a->st[i].len, m->text, m->text_len) ? 1 : 0;
}

static void print_notes(const char *notes, int json)
{
	char *copy, *line, *save = NULL;
	int first = 1;

	if (!notes)
		return;
	copy = strdup(notes);
	for (line = copy ? strtok_r(copy, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (json) {
			printf("%s", first ? "" : ",");
			pm_json_print(stdout, line);
		} else {
			pm_text_visible(line);
			printf("%s\n", line);
		}
		first = 0;
	}
	free(copy);
}

static int show(const struct pm_target *t, struct answers *a, int json)
{
	const char **texts = calloc((size_t)(a->n ? a->n : 1), sizeof(char *));
	int *ranks = calloc((size_t)(a->n ? a->n : 1), sizeof(int));
	int *group = calloc((size_t)(a->n ? a->n : 1), sizeof(int));
	int *members = calloc((size_t)(a->n ? a->n : 1), sizeof(int));
	int i, g, ng;

	if (!texts || !ranks || !group || !members) {
		fprintf(stderr, "procmgr stacks: out of memory\n");
		free(texts), free(ranks), free(group), free(members);
		return 1;
	}
	for (i = 0; i < a->n; i++) {
		/* The job user's text, on a terminal that may be root's: no
		 * escape sequence gets through (JSON escapes its own). */
		if (!json && a->st[i].text)
			pm_text_visible(a->st[i].text);
		texts[i] = a->st[i].text ? a->st[i].text : "";
		ranks[i] = a->st[i].rank;
	}
	ng = pm_stack_group(texts, ranks, a->n, group);
	if (json)
		printf("{\"job\":%u,\"step\":%u,\"ranks\":%d,\"groups\":[", t->job, t->step, a->n);
	else
		printf("step %u.%u: stacks of %d rank%s, %d distinct\n", t->job, t->step, a->n,
		       a->n == 1 ? "" : "s", ng);
	for (g = 0; g < ng; g++) {
		char list[4096], top[128];
		int k = 0, j = -1;
		for (i = 0; i < a->n; i++)
			if (group[i] == g) {
				members[k++] = ranks[i];
				j = i;
			}
		if (pm_ranks_format(members, k, list, sizeof(list)))
			snprintf(list, sizeof(list), "%d ranks", k);
		pm_stack_top(texts[j], top, sizeof(top));
		if (json) {
			printf("%s{\"ranks\":[", g ? "," : "");
			for (i = 0; i < k; i++)
				printf("%s%d", i ? "," : "", members[i]);
			printf("],\"count\":%d,\"top\":", k);
			pm_json_print(stdout, top);
			printf(",\"stack\":");
			pm_json_print(stdout, texts[j]);
			printf("}");
		} else {
			printf("\n== rank%s %s (%d) in %s ==\n%s", k == 1 ? "" : "s", list, k,
			       top[0] ? top : "?", texts[j]);
		}
	}
	if (json) {
		printf("],\"notes\":[");
		print_notes(a->notes, 1);
		printf("]}\n");
	} else if (a->notes) {
		printf("\n");
		print_notes(a->notes, 0);
	}
	free(texts), free(ranks), free(group), free(members);
	return 0;
}

int pm_cmd_stacks(int argc, char **argv)
{
	const char *id = NULL, *list = "-";
	struct answers a = { 0 };
	struct pm_target t;
	struct pm_msg end;
	char why[1024];
	int i, json = 0, rc;

	const struct pm_cli_opt opts[] = { { "--json", NULL, &json, NULL, NULL },
					   { "--rank", NULL, NULL, &list, pm_ranks_check },
					   { NULL } };

	rc = pm_cli_args("stacks", argc, argv, opts, &id, true, USAGE);
	if (rc)
		return rc == 1 ? 0 : rc;
	rc = pm_client_resolve("stacks", id, &t);
	if (rc)
		return rc;
	rc = 1;
	/* Each node's tools are bounded (PM_STACKS_MS, 20 s); the tree adds little. */
	if (pm_client_ask(&t, PM_Q_STACKS, list, 30000, collect, &a, &end, why, sizeof(why)))
		fprintf(stderr, "procmgr stacks: %s\n", why);
	else
		rc = show(&t, &a, json);
	for (i = 0; i < a.n; i++)
		free(a.st[i].text);
	free(a.st);
	free(a.notes);
	return rc;
}
