/* procmgr restart JOBID[.STEP]: every rank of the step, now, counted as a
 * restart; said on srun's stderr and in the event log with who asked. */
#include "client.h"
#include "cmd.h"

#define USAGE \
	"usage: procmgr restart JOBID[.STEP] [--trial NAME]\n" \
	"  stops every rank of the step (grace period, then SIGKILL) and starts the next\n" \
	"  generation everywhere; counted as a restart. --trial NAME: in a sweep, only that\n" \
	"  running trial, on its slots. Only the job's user and root.\n"

int pm_cmd_restart(int argc, char **argv)
{
	return pm_client_control("restart", PM_Q_RESTART, argc, argv, USAGE);
}
