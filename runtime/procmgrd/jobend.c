/* The step's end where the user will look, and the job's end when srun is
 * gone. A batch script's srun runs on the batch host; when that node is
 * lost, the script and srun went with it: nobody collects the step's
 * result, and Slurm keeps the job RUNNING (with its step) until it
 * declares the node DOWN, SlurmdTimeout later (300 s by default; with
 * --no-kill not even then for the batch script's own absence). So the root
 * writes the result to --procmgr-output-dir (which the user chose, a shared
 * file system at best) and the event log, and ends the job itself: the
 * surviving nodes go back to the cluster at once.
 *
 * Any other node lost: its slurmstepd never reports its tasks' end, and
 * srun waits for them until Slurm marks the node DOWN (SlurmdTimeout: 6.5
 * minutes with the default 300 s), after every other rank has ended. The
 * job's user may end the step (scancel JOB.STEP: slurmctld tells srun the
 * step is complete; srun waits KillWait + 2 s for the tasks still out and
 * returns the exit status of those that ended, slurm-notes.md, "Ending a
 * step whose node is lost"): the root does, once its children's procmgrds
 * (which leave after their node's tasks) are gone, and says so on srun's
 * stderr first. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/text.h"
#include "io/outdir.h"
#include "io/safefile.h"
#include "io/sys.h"
#include "step.h"
#include "gen_int.h"

/* How long procmgrd waits for scancel, and before it for its children
 * to leave: the plugin waits 5 s for procmgrd in all. */
#define PM_SCANCEL_WAIT_MS 3000
#define PM_CHILDREN_WAIT_MS 1500

void pm_step_srun_lost(struct pm_step *s, int node)
{
	char f[512];

	if (s->srun_node_id < 0 || node != s->srun_node_id || s->srun_lost)
		return;
	s->srun_lost = true;
	pm_log(s, "srun's node %s is lost: srun is gone with it; the job ends with the step",
	       s->names[node]);
	snprintf(f, sizeof(f), "\"gen\":%u,\"node\":\"%s\"", s->gen.gen, s->names[node]);
	pm_event(&s->events, "srun_lost", f);
}

static void result_text(struct pm_step *s, char *buf, size_t len)
{
	const struct pm_msg *m = &s->gen.end_msg;
	bool ok = m->type == PM_MSG_FINISH;
	char when[64], srun[400];
	time_t now = time(NULL);
	struct tm tm;

	localtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S%z", &tm);
	if (s->srun_lost)
		snprintf(srun, sizeof(srun), "lost with node %s: procmgr ended job %u (scancel) "
			 "once the step was over", s->names[s->srun_node_id], s->job);
	else if (s->srun_node_id >= 0)
		snprintf(srun, sizeof(srun), "on node %s", s->names[s->srun_node_id]);
	else
		snprintf(srun, sizeof(srun), "not on a node of the step");
	snprintf(buf, len,
		 "job=%u step=%u\n"
		 "result=%s\n"
		 "exit_code=%d\n"
		 "generation=%u\n"
		 "restarts=%d\n"
		 "message=%.1500s\n"
		 "srun=%s\n"
		 "root=%s\n"
		 "time=%s\n",
		 s->job, s->stepid, ok ? "succeeded" : s->cancelled ? "cancelled" : "failed",
		 ok ? 0 : m->status ? m->status : 1, s->gen.gen, s->gen.restarts,
		 ok ? "every rank succeeded" : m->text_len ? m->text : "(none)", srun,
		 s->names[s->node], when);
}

/* DIR/result.JOB.STEP, replaced whole. */
static void write_result(struct pm_step *s)
{
	char text[4096], name[64], err[512];
	int dfd;

	if (!s->opts.output_dir[0])
		return;
	result_text(s, text, sizeof(text));
	snprintf(name, sizeof(name), "result.%u.%u", s->job, s->stepid);
	dfd = pm_outdir_open(s->opts.output_dir, err, sizeof(err));
	if (dfd < 0 || pm_safefile_write(dfd, name, text, strlen(text), 0644, err, sizeof(err)))
		pm_log(s, "cannot write the step's result in %s: %s", s->opts.output_dir, err);
	else
		pm_log(s, "the step's result is in %s/%s", s->opts.output_dir, name);
	if (dfd >= 0)
		close(dfd);
}

void pm_step_lost_at_end(struct pm_step *s, int first, unsigned nlost, bool silent)
{
	char more[32] = "";

	/* srun went with its node: the job ends instead (scancel below). */
	if (s->srun_lost || s->cancelled || first < 0 || first >= s->nnodes)
		return;
	if (nlost > 1)
		snprintf(more, sizeof(more), " (and %u more)", nlost - 1);
	if (silent) {
		/* Down or cut off: from here the two look the same, and a
		 * scancel of the step would end the side that goes on. */
		pm_gen_tell(&s->gen, "procmgr: step %u.%u is over here, but node %s%s went silent "
			    "(down, or cut off from this node): srun waits for its tasks until "
			    "Slurm marks it DOWN (SlurmdTimeout) or they end; if it is down, "
			    "scancel %u.%u ends the wait", s->job, s->stepid, s->names[first], more,
			    s->job, s->stepid);
		return;
	}
	s->end_step = true;
	pm_gen_tell(&s->gen, "procmgr: step %u.%u is over, but node %s%s was lost: Slurm would "
		    "keep srun waiting for its tasks until it marks the node DOWN (SlurmdTimeout); "
		    "procmgr ends the step once every other rank has exited (scancel %u.%u, safe "
		    "now), and srun returns their exit status within KillWait + 2 s", s->job,
		    s->stepid, s->names[first], more, s->job, s->stepid);
}

/* Until every child still linked has closed its end (its procmgrd left,
 * after its node's tasks ended), at most ms: what scancel would kill there
 * is then gone, and only the lost nodes' tasks are out. */
static void children_gone(struct pm_step *s, unsigned ms)
{
	uint64_t end = pm_now_ms() + ms;

	for (;;) {
		struct pollfd pfd[64];
		int i, n = 0;
		uint64_t now;

		for (i = 0; i < s->children_cap && n < 64; i++) {
			struct pm_conn *c = s->children[i];
			if (c && c->w.fd >= 0)
				pfd[n++] = (struct pollfd){ .fd = c->w.fd, .events = POLLRDHUP };
		}
		if (!n)
			return;
		now = pm_now_ms();
		if (now >= end || poll(pfd, (nfds_t)n, (int)(end - now)) < 0) {
			pm_log(s, "children still linked after %u ms: ending the step anyway", ms);
			return;
		}
		for (i = 0; i < n; i++)
			if (!(pfd[i].revents & (POLLRDHUP | POLLHUP | POLLERR)))
				break;
		if (i == n)
			return;
		/* Not all: wait for the rest (those closed stay ready). */
		usleep(10000);
	}
}

static void scancel(struct pm_step *s, bool step)
{
	char job[32], f[256];
	uint64_t t0 = pm_now_ms();
	int status = 0;
	pid_t pid;

	if (step) {
		snprintf(job, sizeof(job), "%u.%u", s->job, s->stepid);
		/* Before: the step's SIGKILL may reach this procmgrd too. */
		snprintf(f, sizeof(f), "\"step\":\"%s\",\"reason\":\"a node was lost: its tasks "
			 "never end\"", job);
		pm_event(&s->events, "step_ended", f);
	} else {
		snprintf(job, sizeof(job), "%u", s->job);
	}
	pid = fork();
	if (pid < 0) {
		pm_log(s, "cannot end job %s: fork: %m", job);
		return;
	}
	if (pid == 0) {
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			dup2(fd, STDIN_FILENO);
		execlp("scancel", "scancel", job, (char *)NULL);
		fprintf(stderr, "procmgrd: cannot run scancel: %s\n", strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (pm_now_ms() - t0 > PM_SCANCEL_WAIT_MS) {
			pm_log(s, "scancel %s has not returned in %d ms; left running", job,
			       PM_SCANCEL_WAIT_MS);
			return;
		}
		usleep(20000);
	}
	if (!step) {
		snprintf(f, sizeof(f), "\"job\":%u,\"reason\":\"srun lost with node %s\","
			 "\"scancel\":%d", s->job, s->names[s->srun_node_id],
			 WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
		pm_event(&s->events, "job_cancelled", f);
	}
	pm_log(s, "ended %s %s (scancel: %s %d)", step ? "step" : "job", job,
	       WIFEXITED(status) ? "exit" : "signal",
	       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

void pm_step_jobend(struct pm_step *s)
{
	if (!s->gen.root || !pm_gen_terminal(&s->gen) || s->gen.end_msg.rank == -2)
		return;
	write_result(s);
	if (s->srun_lost) {
		scancel(s, false);
	} else if (s->end_step && !s->cancelled) {
		children_gone(s, PM_CHILDREN_WAIT_MS);
		scancel(s, true);
	}
}
