#include "torchenv.h"

#include <stddef.h>

#include "contract.h"

static int dflt(const char *name, const char *value, pm_env_isset_fn isset,
		pm_env_set_fn set, void *ctx)
{
	return isset(ctx, name) ? 0 : set(ctx, name, value);
}

int pm_torchenv_defaults(unsigned ntasks_local, pm_env_isset_fn isset, pm_env_set_fn set,
			 void *ctx)
{
	int rc = 0;

	/* torchrun's --role, "default" unless given. */
	rc |= dflt(PM_ENV_ROLE_NAME, "default", isset, set, ctx);
	/* A failed NCCL collective raises instead of hanging forever: the
	 * rank exits and procmgr restarts the step. torch 2 reads the
	 * TORCH_ name, older ones the bare one. */
	rc |= dflt("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1", isset, set, ctx);
	rc |= dflt("NCCL_ASYNC_ERROR_HANDLING", "1", isset, set, ctx);
	/* Several ranks each running one OpenMP thread per core would
	 * oversubscribe the node; torchrun says 1 and so do we. */
	if (ntasks_local > 1)
		rc |= dflt("OMP_NUM_THREADS", "1", isset, set, ctx);
	return rc ? -1 : 0;
}
