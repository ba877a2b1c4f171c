/* bench/worker: the same worker for procmgr, the srun loop and torchrun.
 *
 *   worker FILE
 *
 * At start it appends "start <rank> <gen> <t> <envgen>" to FILE (one O_APPEND
 * write, t = CLOCK_REALTIME in seconds, to the microsecond). rank: RANK, else
 * SLURM_PROCID. gen: how many times this rank started before, from FILE, the
 * same for every method. envgen: the generation the launcher says it is:
 * BENCH_GEN (the srun loop), else PROCMGR_RESTART_COUNT, else
 * TORCHELASTIC_RESTART_COUNT, else -1 (bench/restart checks it against gen;
 * torchrun raises TORCHELASTIC_RESTART_COUNT only on the failing node).
 * In generation 0 the rank BENCH_FAIL_RANK (default 7) waits until
 * BENCH_WORLD (default 8) ranks of generation 0 have started, then
 * BENCH_SETTLE_MS (default 300), then appends "fail <t>" and exits 1; the
 * other ranks of generation 0 sleep until they are stopped. In any later
 * generation every rank exits 0 after BENCH_HOLD_MS (default 200). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char *env(const char *a, const char *b, const char *c, const char *d)
{
	const char *v;
	if ((v = getenv(a)) && *v) return v;
	if (b && (v = getenv(b)) && *v) return v;
	if (c && (v = getenv(c)) && *v) return v;
	return d;
}

static void put(const char *file, const char *line)
{
	int fd = open(file, O_WRONLY | O_APPEND | O_CREAT, 0666);
	if (fd < 0) { perror(file); exit(2); }
	if (write(fd, line, strlen(line)) < 0) { perror(file); exit(2); }
	close(fd);
}

static void msleep(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts)) ;
}

static int started(const char *file, int rank)
{
	char line[256];
	int n = 0, r, g;
	FILE *f = fopen(file, "r");
	if (!f) return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "start %d %d", &r, &g) == 2 && r == rank)
			n++;
	fclose(f);
	return n;
}

static int gen0_started(const char *file)
{
	char line[256];
	int n = 0, r, g;
	FILE *f = fopen(file, "r");
	if (!f) return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "start %d %d", &r, &g) == 2 && g == 0)
			n++;
	fclose(f);
	return n;
}

int main(int argc, char **argv)
{
	double t0 = now();
	char line[256];
	int rank, gen, envgen, fail_rank, world;

	if (argc != 2) { fprintf(stderr, "usage: worker FILE\n"); return 2; }
	rank = atoi(env("RANK", "SLURM_PROCID", NULL, "0"));
	envgen = atoi(env("BENCH_GEN", "PROCMGR_RESTART_COUNT", "TORCHELASTIC_RESTART_COUNT", "-1"));
	gen = started(argv[1], rank);
	fail_rank = atoi(env("BENCH_FAIL_RANK", NULL, NULL, "7"));
	world = atoi(env("BENCH_WORLD", NULL, NULL, "8"));
	snprintf(line, sizeof(line), "start %d %d %.6f %d\n", rank, gen, t0, envgen);
	put(argv[1], line);

	if (gen == 0) {
		if (rank != fail_rank) {
			for (;;) pause();
		}
		for (int i = 0; i < 60000 && gen0_started(argv[1]) < world; i += 5)
			msleep(5);
		msleep(atol(env("BENCH_SETTLE_MS", NULL, NULL, "300")));
		snprintf(line, sizeof(line), "fail %.6f\n", now());
		put(argv[1], line);
		return 1;
	}
	msleep(atol(env("BENCH_HOLD_MS", NULL, NULL, "200")));
	return 0;
}
