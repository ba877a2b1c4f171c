/* procmgr stacks JOBID[.STEP] [--rank LIST] [--native] [--json]: the
 * ranks' stacks, taken now on every node at once, grouped: identical
 * stacks shown once with their rank list, the biggest group first, so
 * that the outlier (the rank stuck elsewhere) comes last. By default each
 * rank's main thread only, by its Python frames where it has them
 * (common/stacks.h's pm_stack_brief): the other threads (a communication
 * library's) differ between ranks waiting alike and would split every
 * group; --native shows every thread. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cliargs.h"
#include "client.h"
#include "cmd.h"
#include "common/stacks.h"
#include "common/text.h"

#define USAGE \
	"usage: procmgr stacks JOBID[.STEP] [--rank LIST] [--native] [--json]\n" \
	"  the stacks of the step's running ranks, taken now (gdb on each node, with\n" \
	"  python3-dbg for Python frames; else eu-stack), identical stacks shown once\n" \
	"  with their ranks: each rank's main thread, by its Python frames where it\n" \
	"  has them, else by its native frames.\n" \
	"  --rank LIST  only these ranks, such as 0-3,7\n" \
	"  --native     every thread's native frames and every Python frame\n" \
	"  --json       {\"groups\":[{\"ranks\":[...],\"top\":...,\"stack\":...}],\"missing\":[...],\n" \
	"               \"notes\":[...]}\n"

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

static int show(const struct pm_target *t, struct answers *a, int json, int native)
{
	const char **texts = calloc((size_t)(a->n ? a->n : 1), sizeof(char *));
	char **views = calloc((size_t)(a->n ? a->n : 1), sizeof(char *));
	int *ranks = calloc((size_t)(a->n ? a->n : 1), sizeof(int));
	int *group = calloc((size_t)(a->n ? a->n : 1), sizeof(int));
	int *members = calloc((size_t)(a->n ? a->n : 1), sizeof(int));
	int *taken = calloc((size_t)(a->n ? a->n : 1), sizeof(int));
	struct pm_stack_where *w = calloc(1, sizeof(*w));
	int i, g, ng, nt = 0, first = 1, rc = 1;

	if (!texts || !views || !ranks || !group || !members || !taken || !w) {
		fprintf(stderr, "procmgr stacks: out of memory\n");
		goto out;
	}
	for (i = 0; i < a->n; i++) {
		const char *text = a->st[i].text ? a->st[i].text : "";
		size_t len = strlen(text) + 1;
		/* The job user's text, on a terminal that may be root's: no
		 * escape sequence gets through (JSON escapes its own). */
		if (!json && a->st[i].text)
			pm_text_visible(a->st[i].text);
		pm_stack_where(text, w);
		if (!w->taken)
			continue;
		views[nt] = malloc(len);
		if (!views[nt]) {
			fprintf(stderr, "procmgr stacks: out of memory\n");
			goto out;
		}
		if (native)
			memcpy(views[nt], text, len);
		else
			pm_stack_brief(text, views[nt], len);
		texts[nt] = views[nt];
		ranks[nt] = a->st[i].rank;
		taken[nt++] = i;
	}
	ng = pm_stack_group(texts, ranks, nt, group);
	if (json)
		printf("{\"job\":%u,\"step\":%u,\"ranks\":%d,\"taken\":%d,\"native\":%s,\"groups\":[",
		       t->job, t->step, a->n, nt, native ? "true" : "false");
	else
		printf("step %u.%u: stacks of %d rank%s, %d taken, %d distinct%s%s\n", t->job,
		       t->step, a->n, a->n == 1 ? "" : "s", nt, ng, native ? "" :
		       " (each rank's main thread, by its Python frames where it has them; "
		       "--native for every thread)", nt < a->n ? "; not taken: see below" : "");
	for (g = 0; g < ng; g++) {
		char list[4096], top[128];
		int k = 0, j = -1;
		for (i = 0; i < nt; i++)
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
			printf("\n== rank%s %s (%d) in %s ==\n%s", k == 1 ? "" : "s", list, k, top,
			       texts[j]);
		}
	}
	/* The stacks not taken, each with why: never a group of their own. */
	if (json)
		printf("],\"missing\":[");
	else if (nt < a->n)
		printf("\n");
	for (i = 0; i < a->n; i++) {
		int j;
		for (j = 0; j < nt && taken[j] != i; j++)
			;
		if (j < nt)
			continue;
		pm_stack_where(a->st[i].text ? a->st[i].text : "", w);
		if (json) {
			printf("%s{\"rank\":%d,\"why\":", first ? "" : ",", a->st[i].rank);
			pm_json_print(stdout, w->why);
			printf("}");
		} else if (!strncmp(a->st[i].text ? a->st[i].text : "", "procmgr: ", 9)) {
			printf("%.*s\n", (int)strcspn(a->st[i].text, "\n"), a->st[i].text);
		} else {
			printf("procmgr: no stack for rank %d: %s\n", a->st[i].rank, w->why);
		}
		first = 0;
	}
	if (json) {
		printf("],\"notes\":[");
		print_notes(a->notes, 1);
		printf("]}\n");
	} else if (a->notes) {
		printf("\n");
		print_notes(a->notes, 0);
	}
	rc = 0;
out:
	for (i = 0; views && i < nt; i++)
		free(views[i]);
	free(texts), free(views), free(ranks), free(group), free(members), free(taken), free(w);
	return rc;
}

int pm_cmd_stacks(int argc, char **argv)
{
	const char *id = NULL, *list = "-";
	struct answers a = { 0 };
	struct pm_target t;
	struct pm_msg end;
	char why[1024];
	int i, json = 0, native = 0, rc;

	const struct pm_cli_opt opts[] = { { "--json", NULL, &json, NULL, NULL },
					   { "--native", NULL, &native, NULL, NULL },
					   { "--rank", NULL, NULL, &list, pm_ranks_check },
					   { NULL } };

	rc = pm_cli_args("stacks", argc, argv, opts, &id, true, USAGE);
	if (rc)
		return rc == 1 ? 0 : rc;
	rc = pm_client_resolve("stacks", id, &t);
	if (rc)
		return rc;
	rc = 1;
	/* Each node's tools are bounded (20 s, up to PM_STACKS_MAX_MS on a
	 * loaded node); the tree adds little. */
	if (pm_client_ask(&t, PM_Q_STACKS, list, PM_STACKS_MAX_MS + 10000, collect, &a, &end, why,
			  sizeof(why)))
		fprintf(stderr, "procmgr stacks: %s\n", why);
	else
		rc = show(&t, &a, json, native);
	for (i = 0; i < a.n; i++)
		free(a.st[i].text);
	free(a.st);
	free(a.notes);
	return rc;
}
