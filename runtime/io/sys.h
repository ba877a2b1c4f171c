/* Thin wrappers of the system calls several programs need. */
#ifndef PM_SYS_H
#define PM_SYS_H

#include <stdint.h>
#include <sys/types.h>

/* Milliseconds on CLOCK_MONOTONIC, and seconds on CLOCK_REALTIME (for the
 * event log, read beside other machines' clocks). */
uint64_t pm_now_ms(void);
double pm_wall_s(void);
/* A pidfd for pid (close-on-exec), or -1 and errno. */
int pm_pidfd_open(pid_t pid);

#endif
