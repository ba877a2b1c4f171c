#!/bin/bash
# The rank program of the integration tests. It logs what happens to it in
# $PM_LOG (one line per event) and behaves as the environment says:
#   FAIL_RANK, FAIL_GEN  which rank fails in which generation ("any": every one)
#   FAIL_HOW             exit:CODE (default exit:7) | kill (SIGKILL itself)
#   GRANDCHILD=MARK      leave a grandchild "sleep" in the process group, and
#                        one in a new session, both with MARK in argv
#   HANG_RANK            this rank heartbeats once, then hangs (gen 0); "all":
#                        every rank does, as in a collective that never ends
#   RUN=SECONDS          how long a healthy rank works (default 0)
#   TERM_DELAY=SECONDS   how long it takes to exit on SIGTERM (default 0)
gen=${PROCMGR_RESTART_COUNT:-x}
# t= (wall clock, s) last: the benchmarks time recoveries with it.
log() { echo "$1 rank=$RANK gen=$gen node=$SLURMD_NODENAME pid=$$ $2 t=$(date +%s.%N)" >>"$PM_LOG"; }
# Set before anything is logged: a stop may come as soon as "start" is seen.
trap 'log term; sleep "${TERM_DELAY:-0}"; exit 143' TERM
log start "local=$LOCAL_RANK world=$WORLD_SIZE lws=$LOCAL_WORLD_SIZE group=$GROUP_RANK master=$MASTER_ADDR:$MASTER_PORT telastic=$TORCHELASTIC_RESTART_COUNT max=$TORCHELASTIC_MAX_RESTARTS ports=$SLURM_STEP_RESV_PORTS"

if [ -n "${GRANDCHILD:-}" ] && [ "$gen" = 0 ]; then
	bash -c "exec -a $GRANDCHILD-pgrp sleep 300" &
	setsid bash -c "exec -a $GRANDCHILD-session sleep 300" &
fi
if { [ "${HANG_RANK:-}" = "$RANK" ] || [ "${HANG_RANK:-}" = all ]; } && [ "$gen" = 0 ]; then
	touch "$PROCMGR_HEARTBEAT"
	sleep 300 & wait
fi
if [ "$RANK" = "${FAIL_RANK:-}" ] && { [ "${FAIL_GEN:-0}" = any ] || [ "${FAIL_GEN:-0}" = "$gen" ]; }; then
	# FAIL_AFTER_ALL: fail only once every rank of this generation runs.
	if [ -n "${FAIL_AFTER_ALL:-}" ]; then
		for _ in $(seq 400); do
			[ "$(grep -c "^start .* gen=$gen " "$PM_LOG")" -ge "$WORLD_SIZE" ] && break
			sleep 0.05
		done
	fi
	how=${FAIL_HOW:-exit:7}
	case "$how" in
	kill) log fail "how=kill"; kill -9 $$ ;;
	exit:*) log fail "how=$how"; exit "${how#exit:}" ;;
	esac
fi
if [ -n "${PROCMGR_HEARTBEAT:-}" ] && [ -n "${BEAT:-}" ]; then touch "$PROCMGR_HEARTBEAT"; fi
sleep "${RUN:-0}" & wait
log done
