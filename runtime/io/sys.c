#include "sys.h"

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

uint64_t pm_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

double pm_wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int pm_pidfd_open(pid_t pid)
{
	/* glibc 2.36 has no wrapper; pidfds are close-on-exec by design. */
	return (int)syscall(SYS_pidfd_open, pid, 0);
}
