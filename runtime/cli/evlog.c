#include "evlog.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugstack.h"
#include "common/contract.h"
#include "common/hostlist.h"
#include "common/options.h"

static int site_state_dir(const struct pm_plugline *l, void *arg)
{
	struct pm_site s;
	char err[512];
	const char *b = strrchr(l->path, '/');

	if (strcmp(b ? b + 1 : l->path, "procmgr.so"))
		return 0;
	pm_site_init(&s);
	if (pm_site_parse(&s, l->argc, l->argv, l->file, err, sizeof(err)) == 0)
		snprintf(arg, PATH_MAX, "%s", s.state_dir);
	return 0;
}

void pm_evlog_state_dir(const char *given, char *dir, size_t len)
{
	char conf[PATH_MAX], found[PATH_MAX];
	struct pm_site s;

	pm_site_init(&s);
	snprintf(found, sizeof(found), "%s", s.state_dir);
	if (given)
		snprintf(found, sizeof(found), "%s", given);
	/* A node without plugstack.conf (a login node) takes the default
	 * without a word: the reader asked for events, not the file. */
	else if (pm_plugstack_default(PM_SLURMCONFDIR, conf, sizeof(conf)) == 0 &&
		 access(conf, F_OK) == 0)
		(void)pm_plugstack_read(conf, site_state_dir, found);
	snprintf(dir, len, "%s", found);
}

FILE *pm_evlog_open(const char *state_dir, unsigned job, unsigned step, char *path, size_t len)
{
	struct stat st;
	FILE *f;
	int fd;

	if (pm_path_events(path, len, state_dir, job, step)) {
		path[0] = '\0';
		errno = ENAMETOOLONG;
		return NULL;
	}
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		errno = EINVAL;
		return NULL;
	}
	f = fdopen(fd, "r");
	if (!f)
		close(fd);
	return f;
}

/* The first line of a command's output. */
static int first_line(const char *cmd, char *out, size_t len)
{
	FILE *p = popen(cmd, "r");
	int rc;

	out[0] = '\0';
	if (!p)
		return -1;
	if (!fgets(out, (int)len, p))
		out[0] = '\0';
	rc = pclose(p);
	out[strcspn(out, "\n")] = '\0';
	return rc == 0 && out[0] ? 0 : -1;
}

static int field(const char *text, const char *key, char *out, size_t len)
{
	const char *p = text;
	size_t k = strlen(key);

	while ((p = strstr(p, key))) {
		if ((p == text || p[-1] == ' ') && p[k] == '=') {
			p += k + 1;
			snprintf(out, len, "%.*s", (int)strcspn(p, " \n"), p);
			return 0;
		}
		p += k;
	}
	return -1;
}

void pm_evlog_where(unsigned job, const char *path, char *out, size_t len)
{
	char cmd[128], buf[16384], state[64] = "", nodes[8192] = "";
	char **names = NULL;
	int n;

	snprintf(cmd, sizeof(cmd), "scontrol show job -o %u 2>/dev/null", job);
	if (first_line(cmd, buf, sizeof(buf)) || field(buf, "JobState", state, sizeof(state))) {
		snprintf(out, len, "job %u is not known to Slurm any more: the log went with "
			 "state_dir/%u at the job's end", job, job);
		return;
	}
	if (strcmp(state, "RUNNING") && strcmp(state, "SUSPENDED") &&
	    strcmp(state, "COMPLETING")) {
		snprintf(out, len, "job %u is %s: the log went with state_dir/%u at the job's end",
			 job, state, job);
		return;
	}
	if (field(buf, "NodeList", nodes, sizeof(nodes)) ||
	    (n = pm_hostlist_expand(nodes, 10000000, &names)) <= 0) {
		snprintf(out, len, "it is %s on the step's first node, until job %u ends", path,
			 job);
		return;
	}
	snprintf(out, len, "it is %s on the step's first node (%s for a step on all of job %u's "
		 "nodes), until the job ends: run this there, as the job's user or root", path,
		 names[0], job);
	pm_hostlist_free(names, n);
}

int pm_evlog_parse_id(const char *spec, unsigned *job, unsigned *step)
{
	unsigned long j, s = 0;
	char *end;

	errno = 0;
	j = strtoul(spec, &end, 10);
	if (end == spec || errno || j > 0xffffffffUL || (*end && *end != '.') || *spec == '-')
		return -1;
	if (*end == '.') {
		const char *p = end + 1;
		s = strtoul(p, &end, 10);
		if (end == p || *end || errno || s > 0xffffffffUL || *p == '-')
			return -1;
	}
	*job = (unsigned)j;
	*step = (unsigned)s;
	return 0;
}
