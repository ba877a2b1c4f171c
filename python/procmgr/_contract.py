"""The names and limits the procmgr module shares with procmgr's C side,
each with the C name it mirrors. tests/python/test_contract.py reads those
headers and fails on any difference, both ways: a value changed on one
side, a name here that the header lacks, a PROCMGR_ name spelt out in
another of the module's files."""
from __future__ import annotations

# runtime/common/contract.h: the task environment procmgr-rank sets.
ENV_HEARTBEAT = "PROCMGR_HEARTBEAT"  # PM_ENV_HEARTBEAT
ENV_RESTART_COUNT = "PROCMGR_RESTART_COUNT"  # PM_ENV_RESTART_COUNT
ENV_WARM_FD = "PROCMGR_WARM_FD"  # PM_ENV_WARM_FD
ENV_STATE_SOCK = "PROCMGR_STATE_SOCK"  # PM_ENV_STATE_SOCK
ENV_RESULT_FILE = "PROCMGR_RESULT_FILE"  # PM_ENV_RESULT_FILE
ENV_TE_RESTART_COUNT = "TORCHELASTIC_RESTART_COUNT"  # PM_ENV_TE_RESTART_COUNT
ENV_TE_USE_AGENT_STORE = "TORCHELASTIC_USE_AGENT_STORE"  # PM_ENV_TE_USE_AGENT_STORE
ENV_RANK = "RANK"  # PM_ENV_RANK
ENV_LOCAL_RANK = "LOCAL_RANK"  # PM_ENV_LOCAL_RANK
ENV_WORLD_SIZE = "WORLD_SIZE"  # PM_ENV_WORLD_SIZE
ENV_MASTER_ADDR = "MASTER_ADDR"  # PM_ENV_MASTER_ADDR
ENV_MASTER_PORT = "MASTER_PORT"  # PM_ENV_MASTER_PORT

# runtime/common/stateproto.h: the state socket's protocol.
STATE_REPLY_MAX = 16384  # PM_SP_REPLY_MAX
# The requests (stateproto.c's table of verbs; PM_SP_BEGIN ...).
STATE_BEGIN = "begin"  # PM_SP_BEGIN
STATE_COMMIT = "commit"  # PM_SP_COMMIT
STATE_SWAP = "swap"  # PM_SP_SWAP
STATE_ABORT = "abort"  # PM_SP_ABORT
STATE_LOAD = "load"  # PM_SP_LOAD
STATE_LIST = "list"  # PM_SP_LIST

# runtime/sweep/sweep_metric.h: what procmgr.report may write.
RESULT_NAME_MAX = 32  # PM_METRIC_NAME_MAX
RESULT_VALUE_MAX = 32  # PM_METRIC_VALUE_MAX

# runtime/common/warm.h: the fork server's exit when it refuses.
WARM_REFUSED_EXIT = 78  # PM_WARM_REFUSED_EXIT

# The module's own switches, read by no C code (docs/user-guide.md).
ENV_STATE_SWAP = "PROCMGR_STATE_SWAP"  # python only
ENV_STATE_PREPARE = "PROCMGR_STATE_PREPARE"  # python only
ENV_OPEN_STORE = "PROCMGR_OPEN_STORE"  # python only
