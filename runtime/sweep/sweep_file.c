#include "sweep_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool blank(char c)
{
	return c == ' ' || c == '\t';
}

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-';
}

int pm_sweep_name_check(const char *name, size_t len, char *err, size_t errlen)
{
	size_t i;

	if (len == 0 || len > PM_SWEEP_NAME_MAX) {
		snprintf(err, errlen, "a trial name has 1 to %d characters, not %zu",
			 PM_SWEEP_NAME_MAX, len);
		return -1;
	}
	for (i = 0; i < len; i++)
		if (!name_char(name[i])) {
			snprintf(err, errlen,
				 "trial name '%.*s' has '%c'; a name is made of letters, digits, "
				 "'.', '_' and '-' (it goes into file names)",
				 (int)len, name, name[i]);
			return -1;
		}
	if (name[0] == '.' || name[0] == '-') {
		snprintf(err, errlen, "trial name '%.*s' starts with '%c'; start it with a letter, "
			 "a digit or '_'", (int)len, name, name[0]);
		return -1;
	}
	return 0;
}

struct ctx {
	const char *what;
	int lineno, default_ranks, step_ranks;
	char *err;
	size_t errlen;
};

#define REFUSE(c, ...)                                                                   \
	do {                                                                             \
		int o_ = snprintf((c)->err, (c)->errlen, "%s:%d: ", (c)->what, (c)->lineno); \
		if (o_ >= 0 && (size_t)o_ < (c)->errlen)                                 \
			snprintf((c)->err + o_, (c)->errlen - o_, __VA_ARGS__);          \
		return -1;                                                               \
	} while (0)

/* ranks=VALUE: plain decimal, no sign, no blanks, 1..step_ranks. */
static int parse_ranks(struct ctx *c, const char *v, size_t vl, int *ranks)
{
	long n = 0;
	size_t i;

	if (vl == 0 || vl > 9)
		REFUSE(c, "ranks='%.*s' is not a number; write ranks=N with N from 1 to %d",
		       (int)(vl > 32 ? 32 : vl), v, c->step_ranks);
	for (i = 0; i < vl; i++) {
		if (v[i] < '0' || v[i] > '9')
			REFUSE(c, "ranks='%.*s' is not a number; write ranks=N with N from 1 to %d",
			       (int)vl, v, c->step_ranks);
		n = n * 10 + (v[i] - '0');
	}
	if (n < 1)
		REFUSE(c, "ranks=%ld: a trial has at least 1 rank", n);
	if (n > c->step_ranks)
		REFUSE(c, "the trial asks for %ld ranks, but the step has %d; ask for 1 to %d",
		       n, c->step_ranks, c->step_ranks);
	*ranks = (int)n;
	return 0;
}

/* The words between '[' and ']' (p..end). */
static int parse_prefix(struct ctx *c, const char *p, const char *end, struct pm_trial *t)
{
	bool named = false, ranked = false;
	char why[256];

	if (p == end)
		REFUSE(c, "empty prefix '[]'; write [NAME], [ranks=N] or [NAME ranks=N], or no "
			  "prefix at all");
	while (p < end) {
		const char *w = p, *eq;
		size_t wl;

		while (w < end && blank(*w))
			w++;
		if (w == end)
			break;
		for (p = w; p < end && !blank(*p); p++)
			;
		wl = p - w;
		eq = memchr(w, '=', wl);
		if (!eq) {
			if (named)
				REFUSE(c, "two names, '%s' and '%.*s'; a prefix has at most one name",
				       t->name, (int)(wl > 64 ? 64 : wl), w);
			if (pm_sweep_name_check(w, wl, why, sizeof(why)))
				REFUSE(c, "%s", why);
			memcpy(t->name, w, wl);
			t->name[wl] = '\0';
			named = true;
		} else if (eq - w == 5 && !memcmp(w, "ranks", 5)) {
			if (ranked)
				REFUSE(c, "ranks= is given twice; give it once");
			if (parse_ranks(c, eq + 1, wl - 6, &t->ranks))
				return -1;
			ranked = true;
		} else {
			REFUSE(c, "unknown key '%.*s'; a prefix takes a NAME and ranks=N, as in "
				  "[lr0.1 ranks=2]", (int)(eq - w > 32 ? 32 : eq - w), w);
		}
	}
	return 0;
}

/* One line, NUL-terminated at s's end, '\r' dropped. Returns 1 for a trial
 * (in *t), 0 for a blank or comment line, -1 for a refusal. */
static int parse_line(struct ctx *c, char *s, struct pm_trial *t)
{
	size_t cl;

	while (blank(*s))
		s++;
	if (*s == '\0' || *s == '#')
		return 0;
	snprintf(t->name, sizeof(t->name), "%d", c->lineno);
	t->ranks = c->default_ranks;
	t->line = c->lineno;
	if (s[0] == '[' && s[1] != '\0' && !blank(s[1])) {
		char *close = strchr(s, ']');

		if (!close)
			REFUSE(c, "'[' opens a prefix that has no ']'; write [NAME ranks=N] COMMAND "
				  "(the shell's test command is '[ ' with a blank)");
		if (parse_prefix(c, s + 1, close, t))
			return -1;
		for (s = close + 1; blank(*s); s++)
			;
		/* sh would take "#..." for a comment and succeed doing nothing. */
		if (*s == '\0' || *s == '#')
			REFUSE(c, "trial '%s' has no command after its prefix%s", t->name,
			       *s == '#' ? " ('#' starts a comment)" : "");
	}
	cl = strlen(s);
	if (cl > PM_SWEEP_CMD_MAX)
		REFUSE(c, "the command has %zu bytes; a trial's command has at most %d", cl,
		       PM_SWEEP_CMD_MAX);
	t->cmd = s;
	return 1;
}

static uint32_t hash(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

/* Names are unique: an open-addressing set, linear in the trials. */
static int check_unique(struct ctx *c, const struct pm_sweep *sw)
{
	size_t cap = 16, i;
	int *slot, k;

	while (cap < 2 * (size_t)sw->n)
		cap *= 2;
	slot = malloc(cap * sizeof(*slot));
	if (!slot) {
		snprintf(c->err, c->errlen, "%s: out of memory for %d trial names", c->what, sw->n);
		return -1;
	}
	for (i = 0; i < cap; i++)
		slot[i] = -1;
	for (k = 0; k < sw->n; k++) {
		const struct pm_trial *t = &sw->trials[k];

		for (i = hash(t->name) & (cap - 1); slot[i] >= 0; i = (i + 1) & (cap - 1))
			if (!strcmp(sw->trials[slot[i]].name, t->name)) {
				int other = sw->trials[slot[i]].line;

				c->lineno = t->line;
				free(slot);
				REFUSE(c, "duplicate trial name '%s' (line %d has it too); names "
					  "must be unique, and a line without a name is named by its "
					  "number", t->name, other);
			}
		slot[i] = k;
	}
	free(slot);
	return 0;
}

void pm_sweep_free(struct pm_sweep *s)
{
	free(s->trials);
	free(s->text);
	memset(s, 0, sizeof(*s));
}

int pm_sweep_parse(const char *buf, size_t len, const char *what, int default_ranks,
		   int step_ranks, struct pm_sweep *out, char *err, size_t errlen)
{
	struct ctx c = { what, 0, default_ranks, step_ranks, err, errlen };
	size_t lines = 1, i, cap;
	const char *nul;
	char *p, *end;

	memset(out, 0, sizeof(*out));
	if (step_ranks < 1 || default_ranks < 1 || default_ranks > step_ranks) {
		snprintf(err, errlen, "%s: the default ranks per trial (%d) must be from 1 to the "
			 "step's %d ranks", what, default_ranks, step_ranks);
		return -1;
	}
	nul = memchr(buf, '\0', len);
	for (i = 0; i < len; i++)
		if (buf[i] == '\n' && (!nul || buf + i < nul))
			lines++;
	if (nul) {
		c.lineno = (int)lines;
		snprintf(err, errlen, "%s:%d: a NUL byte; a trials file is text", what, c.lineno);
		return -1;
	}
	cap = lines < PM_SWEEP_TRIALS_MAX ? lines : PM_SWEEP_TRIALS_MAX;
	out->text = malloc(len + 1);
	out->trials = malloc(cap * sizeof(*out->trials));
	if (!out->text || !out->trials) {
		snprintf(err, errlen, "%s: out of memory for %zu bytes of trials", what, len);
		goto fail;
	}
	memcpy(out->text, buf, len);
	out->text[len] = '\0';
	end = out->text + len;
	for (p = out->text; p < end;) {
		char *nl = memchr(p, '\n', end - p), *eol = nl ? nl : end;
		struct pm_trial t;
		int r;

		c.lineno++;
		*eol = '\0';
		if (eol > p && eol[-1] == '\r')
			eol[-1] = '\0';
		r = parse_line(&c, p, &t);
		if (r < 0)
			goto fail;
		if (r > 0) {
			if ((size_t)out->n == cap) {
				snprintf(err, errlen, "%s:%d: more than %d trials; split the sweep",
					 what, c.lineno, PM_SWEEP_TRIALS_MAX);
				goto fail;
			}
			out->trials[out->n++] = t;
		}
		p = eol + 1;
	}
	if (out->n == 0) {
		snprintf(err, errlen, "%s: no trials: every line is blank or a '#' comment; write "
			 "one command per line", what);
		goto fail;
	}
	if (check_unique(&c, out))
		goto fail;
	return 0;
fail:
	pm_sweep_free(out);
	return -1;
}

int pm_sweep_read(const char *path, int default_ranks, int step_ranks, struct pm_sweep *out,
		  char *err, size_t errlen)
{
	struct stat st;
	char *buf;
	size_t len = 0;
	ssize_t r;
	int fd, rc;

	memset(out, 0, sizeof(*out));
	/* O_NONBLOCK: a FIFO in its place must not hang srun; it is refused below. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open the trials file %s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "the trials file %s is not a regular file", path);
		close(fd);
		return -1;
	}
	if ((unsigned long long)st.st_size > PM_SWEEP_FILE_MAX) {
		snprintf(err, errlen, "the trials file %s has %lld bytes; at most %u are read",
			 path, (long long)st.st_size, PM_SWEEP_FILE_MAX);
		close(fd);
		return -1;
	}
	/* One byte more than the size: a file that grew is refused, not cut. */
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		snprintf(err, errlen, "out of memory reading the trials file %s", path);
		close(fd);
		return -1;
	}
	while ((r = read(fd, buf + len, (size_t)st.st_size + 1 - len)) > 0)
		len += r;
	if (r < 0 || len > (size_t)st.st_size) {
		if (r < 0)
			snprintf(err, errlen, "cannot read the trials file %s: %s", path,
				 strerror(errno));
		else
			snprintf(err, errlen, "the trials file %s changed while it was read", path);
		free(buf);
		close(fd);
		return -1;
	}
	close(fd);
	rc = pm_sweep_parse(buf, len, path, default_ranks, step_ranks, out, err, errlen);
	free(buf);
	return rc;
}

int pm_sweep_simple_argv(const char *cmd, char *buf, size_t buflen, char **argv, int max)
{
	size_t n = strlen(cmd), i;
	int words = 0;
	bool in = false;

	if (n >= buflen || max < 2)
		return 0;
	for (i = 0; i < n; i++) {
		char c = cmd[i];

		if (c == ' ' || c == '\t') {
			buf[i] = '\0';
			in = false;
			continue;
		}
		if (!name_char(c) && !strchr("/=:,+@%", c))
			return 0;
		buf[i] = c;
		if (!in) {
			if (words == max - 1)
				return 0;
			argv[words++] = buf + i;
			in = true;
		}
	}
	buf[n] = '\0';
	argv[words] = NULL;
	if (!words || strchr(argv[0], '='))
		return 0;
	return words;
}
