/* pm-scale-worker: the scale harness's rank command (--mode ranks). It
 * appends "start RANK GEN PID T" (T: wall-clock seconds, the event log's
 * clock) to $SCALE_LOG in one write, then waits to be stopped: the harness
 * fails a generation by killing one worker. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(void)
{
	const char *log = getenv("SCALE_LOG"), *rank = getenv("RANK"),
		   *gen = getenv("PROCMGR_RESTART_COUNT");
	struct timespec ts;
	char line[128];
	int fd, n;

	if (!log || !rank || !gen) {
		fprintf(stderr, "pm-scale-worker: SCALE_LOG, RANK and PROCMGR_RESTART_COUNT "
			"must be set (it runs under procmgr-rank)\n");
		return 2;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	n = snprintf(line, sizeof(line), "start %s %s %d %lld.%06ld\n", rank, gen, (int)getpid(),
		     (long long)ts.tv_sec, ts.tv_nsec / 1000);
	fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, line, (size_t)n) != n) {
		perror("pm-scale-worker");
		return 1;
	}
	close(fd);
	for (;;)
		pause();
}
