/* procmgr stop JOBID[.STEP]: end the step cleanly, as its own end would. */
#include "client.h"
#include "cmd.h"

#define USAGE \
	"usage: procmgr stop JOBID[.STEP] [--trial NAME]\n" \
	"  ends every rank of the step (SIGTERM, grace period, SIGKILL); each task exits 0\n" \
	"  and srun returns. --trial NAME: in a sweep, only that trial (it ends failed,\n" \
	"  \"stopped\"; a queued one never runs). Only the job's user and root.\n"

int pm_cmd_stop(int argc, char **argv)
{
	return pm_client_control("stop", PM_Q_STOP, argc, argv, USAGE);
}
