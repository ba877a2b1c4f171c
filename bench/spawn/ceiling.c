/* The machine's ceiling for starting short commands: N runs of a command
 * (default /bin/true), at most J at once, started by one process with
 * posix_spawn (glibc's: the child shares the parent's memory until exec,
 * no page tables copied), no Slurm and no procmgr. A sweep's trial cannot
 * start faster than this; bench/sweep's `raw` (shell loops, a fork of bash
 * per run) is the ceiling of a shell, not of the machine.
 *
 *   pm-spawn-ceiling N J [CMD ARG...]
 *
 * Prints: runs=N at_once=J drain_s=S starts_per_s=R */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	char *def[] = { "/bin/true", NULL };
	char **cmd = argc > 3 ? argv + 3 : def;
	long n, j, started = 0, running = 0, failed = 0;
	double t0;

	if (argc < 3 || (n = atol(argv[1])) < 1 || (j = atol(argv[2])) < 1) {
		fprintf(stderr, "usage: pm-spawn-ceiling N J [CMD ARG...] (N runs, J at once)\n");
		return 2;
	}
	t0 = now();
	while (started < n || running > 0) {
		int st;
		while (started < n && running < j) {
			pid_t pid;
			int e = posix_spawnp(&pid, cmd[0], NULL, NULL, cmd, environ);
			if (e) {
				fprintf(stderr, "pm-spawn-ceiling: cannot run %s: %s\n", cmd[0], strerror(e));
				return 1;
			}
			started++;
			running++;
		}
		if (wait(&st) > 0) {
			running--;
			if (!WIFEXITED(st) || WEXITSTATUS(st))
				failed++;
		}
	}
	double d = now() - t0;
	printf("runs=%ld at_once=%ld drain_s=%.3f starts_per_s=%.1f failed=%ld\n", n, j, d,
	       (double)n / d, failed);
	return failed ? 1 : 0;
}
