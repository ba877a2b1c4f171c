#include "guard.h"

#include "common/contract.h"
#include "health/health.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

int pm_guard_init(struct pm_guard *g, const char *list, const char *node,
		  const char *report, unsigned timeout_ms, char *err, size_t errlen)
{
	struct pm_health_ctx ctx = { .timeout_ms = timeout_ms };
	char why[512];
	int n;

	memset(g, 0, sizeof(*g));
	g->timer_w.fd = g->periodic.pipe_w.fd = g->between.pipe_w.fd = -1;
	g->periodic.g = g->between.g = g;
	g->node = node;
	snprintf(g->report, sizeof(g->report), "%s", report ? report : "");
	n = pm_checks_parse(list, NULL, 0, why, sizeof(why));
	if (n < 0) {
		snprintf(err, errlen, "health checks '%s': %s", list, why);
		return -1;
	}
	if (n == 0)
		return 0;
	g->checks = calloc((size_t)n, sizeof(*g->checks));
	if (!g->checks || pm_checks_parse(list, g->checks, n, why, sizeof(why)) != n) {
		snprintf(err, errlen, "health checks: %s", g->checks ? why : strerror(errno));
		return -1;
	}
	g->n = n;
	return pm_health_open(&g->h, &ctx, err, errlen);
}

/* why is pm_report_format's "check: reason": the plugin reads it back with
 * pm_report_parse to re-run the check before draining. */
static void write_report(struct pm_guard *g, const char *why)
{
	FILE *f;

	if (!g->report[0])
		return;
	f = fopen(g->report, "we");
	if (!f)
		return;
	fprintf(f, "%s\n", why);
	fclose(f);
}

int pm_guard_run(struct pm_guard *g, char *why, size_t len)
{
	struct pm_health_result *res;
	int i, bad;

	if (g->n == 0)
		return 0;
	res = calloc((size_t)g->n, sizeof(*res));
	if (!res) {
		snprintf(why, len, "health checks: out of memory");
		return -1;
	}
	bad = pm_health_run(g->h, g->checks, g->n, res);
	for (i = 0; bad && i < g->n; i++) {
		char reason[sizeof(res[i].reason) + 32];
		if (res[i].status == PM_HEALTH_OK)
			continue;
		snprintf(reason, sizeof(reason), "%s%s",
			 res[i].status == PM_HEALTH_ERROR ? "could not check: " : "",
			 res[i].reason);
		pm_report_format(why, len, res[i].check, reason);
		write_report(g, why);
		break;
	}
	free(res);
	return bad ? -1 : 0;
}

static void job_end(struct pm_guard_job *j)
{
	if (j->pipe_w.fd >= 0) {
		pm_loop_del(j->g->loop, &j->pipe_w);
		close(j->pipe_w.fd);
		j->pipe_w.fd = -1;
	}
	if (j->child > 0)
		waitpid(j->child, NULL, 0);
	j->child = 0;
}

static void on_result(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct pm_guard_job *j = w->arg;
	struct pm_guard *g = j->g;
	ssize_t n;
	(void)l;
	(void)ev;

	while ((n = read(w->fd, j->buf + j->len, sizeof(j->buf) - 1 - j->len)) > 0)
		j->len += (size_t)n;
	if (n < 0 && errno == EAGAIN)
		return;
	/* EOF: the run is over. */
	job_end(j);
	j->buf[j->len] = '\0';
	j->buf[strcspn(j->buf, "\n")] = '\0';
	if (j->len)
		write_report(g, j->buf);
	if (j == &g->between) {
		if (g->on_checked)
			g->on_checked(g->arg, j->len ? j->buf : NULL);
	} else if (j->len && g->on_fail) {
		g->on_fail(g->arg, j->buf);
	}
}

/* The child writes the first failure, or nothing, and exits. */
static int job_start(struct pm_guard *g, struct pm_guard_job *j)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC))
		return -1;
	j->child = fork();
	if (j->child < 0) {
		close(p[0]);
		close(p[1]);
		j->child = 0;
		return -1;
	}
	if (j->child == 0) {
		char why[1024];
		close(p[0]);
		signal(SIGTERM, SIG_DFL);
		if (pm_guard_run(g, why, sizeof(why)))
			(void)!write(p[1], why, strlen(why));
		_exit(0);
	}
	close(p[1]);
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	j->len = 0;
	j->pipe_w = (struct pm_watch){ .fd = p[0], .fn = on_result, .arg = j };
	if (pm_loop_add(g->loop, &j->pipe_w, EPOLLIN)) {
		close(p[0]);
		j->pipe_w.fd = -1;
		kill(j->child, SIGKILL);
		job_end(j);
		return -1;
	}
	return 0;
}

static void on_timer(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct pm_guard *g = w->arg;
	(void)l;
	(void)ev;

	pm_timer_ack(w->fd);
	if (g->periodic.child > 0) /* the last run is still going: skip this one */
		return;
	if (job_start(g, &g->periodic))
		fprintf(stderr, "procmgrd: cannot start the periodic health checks: %s\n",
			strerror(errno));
}

int pm_guard_start(struct pm_guard *g, struct pm_loop *l, char *why, size_t len)
{
	if (g->n == 0)
		return 1;
	g->loop = l;
	if (g->between.child > 0)
		return 0; /* one is going: its result counts */
	if (job_start(g, &g->between)) {
		snprintf(why, len, "cannot start the health checks: %s", strerror(errno));
		return -1;
	}
	return 0;
}

int pm_guard_periodic(struct pm_guard *g, struct pm_loop *l, unsigned interval_ms)
{
	if (g->n == 0 || interval_ms == 0)
		return 0;
	g->loop = l;
	g->timer_w = (struct pm_watch){ .fd = pm_timer_new(), .fn = on_timer, .arg = g };
	if (g->timer_w.fd < 0 || pm_loop_add(l, &g->timer_w, EPOLLIN))
		return -1;
	return pm_timer_set(g->timer_w.fd, interval_ms, interval_ms);
}

void pm_guard_free(struct pm_guard *g, struct pm_loop *l)
{
	struct pm_guard_job *jobs[] = { &g->periodic, &g->between };
	size_t i;

	for (i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++) {
		if (jobs[i]->child > 0)
			kill(jobs[i]->child, SIGKILL);
		job_end(jobs[i]);
	}
	if (g->timer_w.fd >= 0) {
		pm_loop_del(l, &g->timer_w);
		close(g->timer_w.fd);
	}
	if (g->h)
		pm_health_close(g->h);
	free(g->checks);
}
