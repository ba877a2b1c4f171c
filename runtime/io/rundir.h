/* A step's run directory on a node (socket, heartbeat files): removed by
 * procmgrd as it ends, or by the plugin, as root, if procmgrd was killed. */
#ifndef PM_RUNDIR_H
#define PM_RUNDIR_H

/* Remove path and the files in it, following no link (the directory may
 * be the user's and the caller root). 0 if it is gone, else -1 and errno. */
int pm_rundir_remove(const char *path);

#endif
