#!/usr/bin/env bats
# A node crashed for real while srun waits (issue 32 item 13): its
# slurmstepd never reports its tasks' end, and Slurm would keep srun waiting
# until it marks the node DOWN, SlurmdTimeout later (300 s here, Slurm's
# default), long after every other rank ended. procmgr says so on srun's
# stderr and ends the step itself (scancel JOB.STEP): srun returns within
# KillWait + 2 s of the work's end with the ranks' exit status. A 3-node
# testbed of its own (like spares.bats: $PM_TESTBED_DIR-loss, NET+2,
# ${PM_TESTBED_PREFIX}ls) with the default SlurmdTimeout.

export PM_LOSS_DIR=${PM_LOSS_DIR:-$PM_TESTBED_DIR-loss}
export PM_LOSS_NET=${PM_LOSS_NET:-$((${PM_TESTBED_NET:-10} + 2))}
export PM_LOSS_PREFIX=${PM_LOSS_PREFIX:-${PM_TESTBED_PREFIX:-pmnode}ls}
export PM_TESTBED_DIR=$PM_LOSS_DIR PM_TESTBED_NET=$PM_LOSS_NET PM_TESTBED_PREFIX=$PM_LOSS_PREFIX
export SLURM_CONF=$PM_TESTBED_DIR/slurm.conf
load helpers

N=3

setup_file() {
	"$top/tests/cluster/testbed" down
	PM_TESTBED_SLURMD_TIMEOUT=300 "$top/tests/cluster/testbed" up $N >"$BATS_FILE_TMPDIR/env"
	. "$BATS_FILE_TMPDIR/env"
}

teardown_file() {
	"$top/tests/cluster/testbed" down
}

slurmd_of() { cat "$PM_TESTBED_DIR/slurmd-$PM_TESTBED_PREFIX$(($1 + 1)).pid"; }
# A crash of node index I: its slurmd, slurmstepd and all below at once.
crash() { kill -9 $(tb pids $(($1 + 1)) | sort -u); echo "$1" >>"$W/crashed"; }

teardown() {
	local i pid
	scancel --quiet -u root 2>/dev/null || true
	# The crashed slurmd back: Slurm never marked it DOWN; its job ends.
	for i in $(cat "$W/crashed" 2>/dev/null); do
		pid=$(slurmd_of "$i" 2>/dev/null) || true
		alive "$pid" 2>/dev/null || slurmd -N "$PM_TESTBED_PREFIX$((i + 1))" -f "$SLURM_CONF"
		rm -rf "$STATE"/*/0."$i".run
	done
	wait_until 60 nodes_idle $N || true
	pm_teardown
}

# Each rank works RUN seconds per generation; srun's output in $W/out; the
# time every rank of generation G had logged its end in $W/done.
launch() { # srun options...
	timeout 90 env PM_LOG="$PM_LOG" RUN=6 srun -N$N --ntasks-per-node=1 "$@" "$WORKER" \
		>"$W/out" 2>&1 &
	SRUN_PID=$!
	wait_until 30 started 2
}
ended() { [ "$(grep -c "^done .* gen=$1 " "$PM_LOG")" -ge "$2" ]; }

@test "a node lost, its rank moved to a spare: once every rank is done the step ends (scancel JOB.STEP), srun returns 0 within seconds, not at Slurm's DOWN" {
	launch --no-kill --procmgr-spares=1 --procmgr-restart=on-failure:2
	job=$(last_job)
	crash 1
	# Generation 1 on nodes 1 and 3 does its work and ends.
	wait_until 60 ended 1 2 || { cat "$W/out" "$PM_LOG"; return 1; }
	local t0=$SECONDS st=0
	wait "$SRUN_PID" || st=$?
	local took=$((SECONDS - t0))
	cat "$W/out"; cat "$PM_LOG"
	echo "srun returned $st, $took s after the work's end"
	[ "$st" -eq 0 ]
	# KillWait (2 s here) + 2 s, and the children's end: never the 300 s.
	[ "$took" -le 30 ]
	grep -q "procmgr: step $job.0 is over, but node ${PM_TESTBED_PREFIX}2 was lost: Slurm would keep srun waiting for its tasks until it marks the node DOWN (SlurmdTimeout); procmgr ends the step once every other rank has exited (scancel $job.0, safe now), and srun returns their exit status within KillWait + 2 s" "$W/out"
	grep -q '"event":"step_ended","step":"'"$job"'.0","reason":"a node was lost: its tasks never end"}' "$STATE/$job/0.events.jsonl"
}

@test "a node lost without spares: the step ends failed, srun returns the ranks' failure within seconds, not at Slurm's DOWN" {
	launch --no-kill --procmgr
	job=$(last_job)
	crash 1
	local t0=$SECONDS st=0
	wait_until 60 grep -q "procmgr: lost node ${PM_TESTBED_PREFIX}2" "$W/out" ||
		{ cat "$W/out" "$PM_LOG" "$STATE/$job/0.events.jsonl"; return 1; }
	wait "$SRUN_PID" || st=$?
	local took=$((SECONDS - t0))
	cat "$W/out"; cat "$PM_LOG"
	echo "srun returned $st, $took s after the crash"
	[ "$took" -le 40 ]
	# The give-up's status, as the surviving ranks exited with it; not a
	# kill (137), not the test's bound (124).
	[ "$st" -ne 0 ] && [ "$st" -ne 137 ] && [ "$st" -ne 124 ]
	grep -q "procmgr: step $job.0 is over, but node ${PM_TESTBED_PREFIX}2 was lost" "$W/out"
}
