#include "admit.h"

#include <errno.h>
#include <stdio.h>

enum pm_admit_verdict pm_admit_decide(const struct pm_admit_cfg *cfg,
				      const struct pm_admit_now *now)
{
	/* The reserve first: whatever the shares say, these descriptors are
	 * the tree's, the command's and the supervisors'. */
	if (now->fd_limit && (unsigned long)now->fd + 1 + cfg->reserve > now->fd_limit)
		return PM_ADMIT_RESERVE;
	if (cfg->per_peer && now->peer >= cfg->per_peer)
		return PM_ADMIT_PEER_FULL;
	if (cfg->per_socket && now->socket >= cfg->per_socket)
		return PM_ADMIT_SOCKET_FULL;
	return PM_ADMIT_TAKE;
}

int pm_admit_why(enum pm_admit_verdict v, const struct pm_admit_cfg *cfg,
		 const struct pm_admit_now *now, const char *what, const char *who, char *buf,
		 size_t len)
{
	switch (v) {
	case PM_ADMIT_TAKE:
		return snprintf(buf, len, "taken");
	case PM_ADMIT_PEER_FULL:
		return snprintf(buf, len,
				"refused: %s holds %u connections to %s, at most %u are allowed "
				"(close one first)", who, now->peer, what, cfg->per_peer);
	case PM_ADMIT_SOCKET_FULL:
		return snprintf(buf, len,
				"refused: %s holds %u connections, at most %u are allowed; try again "
				"once fewer are open", what, now->socket, cfg->per_socket);
	case PM_ADMIT_RESERVE:
		return snprintf(buf, len,
				"refused: procmgrd has %u of its %u descriptors in use; the last %u "
				"are kept for the step's tree, the procmgr command and the "
				"supervisors, not %s", now->fd + 1, now->fd_limit, cfg->reserve, what);
	}
	return snprintf(buf, len, "refused");
}

unsigned pm_admit_reserve(unsigned nchildren, unsigned ntasks)
{
	return PM_ADMIT_RESERVE_BASE + 2 * nchildren + 3 * ntasks;
}

unsigned pm_admit_backoff_ms(unsigned failures)
{
	unsigned ms = 50;

	while (failures-- > 1 && ms < 1000)
		ms *= 2;
	return ms < 1000 ? ms : 1000;
}

bool pm_admit_starved(int err)
{
	return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
}
