/* The step's end where the user will look, and the job's end when srun is
 * gone. A batch script's srun runs on the batch host; when that node is
 * lost, the script and srun went with it: nobody collects the step's
 * result, and Slurm keeps the job RUNNING (with its step) until it
 * declares the node DOWN, SlurmdTimeout later (300 s by default; with
 * --no-kill not even then for the batch script's own absence). So the root
 * writes the result to --procmgr-output-dir (which the user chose, a shared
 * file system at best) and the event log, and ends the job itself: the
 * surviving nodes go back to the cluster at once. */
#include <errno.h>
#include <fcntl.h>
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

/* How long procmgrd waits for scancel: the plugin waits 5 s for procmgrd. */
#define PM_SCANCEL_WAIT_MS 3000

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

static void scancel(struct pm_step *s)
{
	char job[16], f[256];
	uint64_t t0 = pm_now_ms();
	int status = 0;
	pid_t pid;

	snprintf(job, sizeof(job), "%u", s->job);
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
	snprintf(f, sizeof(f), "\"job\":%u,\"reason\":\"srun lost with node %s\",\"scancel\":%d",
		 s->job, s->names[s->srun_node_id],
		 WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	pm_event(&s->events, "job_cancelled", f);
	pm_log(s, "ended job %s (scancel: %s %d)", job,
	       WIFEXITED(status) ? "exit" : "signal",
	       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

void pm_step_jobend(struct pm_step *s)
{
	if (!s->gen.root || !pm_gen_terminal(&s->gen) || s->gen.end_msg.rank == -2)
		return;
	write_result(s);
	if (s->srun_lost)
		scancel(s);
}
