#!/usr/bin/env bats
# A sweep (--procmgr-sweep) that loses a node, with spares
# (--procmgr-spares): on spares.bats' 6-node testbed (its directory, NET+1
# and names derived from the run script's the same way, SlurmdTimeout=5), 4
# nodes x 2 slots in the pool and 2 spares. Faults for real: a node's
# slurmd, slurmstepd and all below killed at once, through this testbed's
# pid files. (A node lost without spares: sweep.bats.)

export PM_SPARES_DIR=${PM_SPARES_DIR:-$PM_TESTBED_DIR-spares}
export PM_SPARES_NET=${PM_SPARES_NET:-$((${PM_TESTBED_NET:-10} + 1))}
export PM_SPARES_PREFIX=${PM_SPARES_PREFIX:-${PM_TESTBED_PREFIX:-pmnode}sp}
export PM_TESTBED_DIR=$PM_SPARES_DIR PM_TESTBED_NET=$PM_SPARES_NET PM_TESTBED_PREFIX=$PM_SPARES_PREFIX
export SLURM_CONF=$PM_TESTBED_DIR/slurm.conf
load helpers

N=6

setup_file() {
	"$top/tests/cluster/testbed" down
	PM_TESTBED_SLURMD_TIMEOUT=5 "$top/tests/cluster/testbed" up $N >"$BATS_FILE_TMPDIR/env"
	. "$BATS_FILE_TMPDIR/env"
}

teardown_file() {
	"$top/tests/cluster/testbed" down
}

# Node index I (0-based): its slurmd, slurmstepd and all below, at once.
crash() {
	local pids
	pids=$(tb pids $(($1 + 1)) | sort -u)
	echo "$1" >>"$W/crashed"
	kill -9 $pids 2>/dev/null || true # some exit as their parents die
}
all_idle() { nodes_idle $N; }
revive() {
	local i pid
	for ((i = 0; i < N; i++)); do
		pid=$(cat "$PM_TESTBED_DIR/slurmd-$PM_TESTBED_PREFIX$((i + 1)).pid" 2>/dev/null) || true
		if [ -z "$pid" ] || ! alive "$pid"; then
			slurmd -N "$PM_TESTBED_PREFIX$((i + 1))" -f "$SLURM_CONF"
		fi
	done
	scontrol update nodename="$PM_TESTBED_PREFIX[1-$N]" state=resume 2>/dev/null || true
	wait_until 60 all_idle
}
teardown() {
	local i
	scancel --quiet -u root 2>/dev/null || true
	revive
	for i in $(cat "$W/crashed" 2>/dev/null); do rm -rf "$STATE"/*/*.$i.run; done
	pm_teardown
}

rows() { awk -F'\t' -v s="$2" 'NR > 1 && $2 == s' "$1" | wc -l; }
lines() { wc -l <"$1" 2>/dev/null || echo 0; }

# trial.sh: each rank says where it started (and its pid), waits for go,
# then says it ran to its end.
waiting_trial() {
	cat >trial.sh <<-EOF
	#!/bin/sh
	echo "\$PROCMGR_TRIAL \$RANK \$SLURMD_NODENAME \$\$" >>$W/started
	while [ ! -e $W/go ]; do sleep 0.1; done
	echo "\$PROCMGR_TRIAL \$RANK" >>$W/ran
	EOF
	chmod 0755 trial.sh
}

sweep() { # srun options...
	timeout 300 srun --no-kill -N$N --ntasks-per-node=2 -O --procmgr-spares=2 \
		--procmgr-sweep=trials.txt "$@" true >out 2>&1 &
	SRUN_PID=$!
}

show() {
	echo "--- srun:"; cat "$W/out" 2>/dev/null
	echo "--- journal:"; cat "$W/trials.txt.journal" 2>/dev/null || true
	echo "--- procmgrd:"; cat "$STATE"/*/0.*.log 2>/dev/null | grep -i sweep | tail -n 40 || true
	echo "--- squeue, sinfo:"; squeue -h -o '%i %T %R %N' 2>&1; sinfo -h -N -o '%N %T %E' 2>&1 | sort -u
	scontrol show job 2>&1 | grep -E 'JobId|JobState|NodeList|Reason' || true
}

@test "sweep, spares: the spares run nothing until a node is lost; its trials requeued, a spare's slots join the pool, all complete once" {
	waiting_trial
	for i in $(seq 1 16); do echo "[t$i] $W/trial.sh"; done >trials.txt
	sweep --procmgr-restart=on-failure:1
	wait_until 60 bash -c "[ \$(cat $W/started 2>/dev/null | wc -l) -ge 8 ]" || { show; false; }
	job=$(last_job)
	# 4 nodes x 2 slots: the spares (nodes 5 and 6) run nothing.
	[ "$(lines started)" -eq 8 ]
	[ "$(awk '{ print $3 }' started | grep -c "${P}[56]$")" -eq 0 ]
	victim=${P}3
	on_victim=$(awk -v v="$victim" '$3 == v { print $1 }' started | sort -u)
	[ -n "$on_victim" ]
	t0=$(date +%s.%N)
	crash 2
	wait_until 60 grep -q '"event":"spare_joined"' "$STATE/$job/0.events.jsonl" || { show; false; }
	# The lost node's trials start again, elsewhere (a spare's slots too).
	wait_until 60 bash -c "[ \$(wc -l <$W/started) -ge 10 ]" || { show; false; }
	echo "# a node's loss to its trials running again: $(echo "$(date +%s.%N) - $t0" | bc) s" >&3
	touch go
	wait_until 120 grep -q "procmgr: sweep of 16 trials" out || { show; false; }
	show
	[ "$(rows trials.txt.results done)" -eq 16 ]
	# Each trial ran to its end once; requeued, not charged a restart.
	[ "$(lines ran)" -eq 16 ]
	[ "$(sort -u ran | wc -l)" -eq 16 ]
	for t in $on_victim; do
		[ "$(awk -v t="$t" -v v="$victim" '$1 == t && $3 != v' started | wc -l)" -eq 1 ]
		[ "$(awk -F'\t' -v t="$t" '$1 == t { print $4 }' trials.txt.results)" -eq 0 ]
	done
	[ "$(awk '{ print $3 }' started | grep -c "${P}[56]$")" -ge 1 ]
	grep -q "procmgr: lost node $victim (.*); its .*; spare ${P}[56]'s 2 slots join the pool" out
	events "$job" 0 | grep -q '"event":"spare_joined","node":"'"${P}5"'","lost":"'"$victim"'"'
	grep -q "procmgr: sweep of 16 trials: 16 done, 0 failed" out
}

@test "sweep, spares: losing the root, the next node rebuilds the queue from the journal; every trial once in the results" {
	waiting_trial
	{
		for i in $(seq 1 6); do echo "[q$i] echo \$PROCMGR_TRIAL >>$W/quick"; done
		for i in $(seq 1 12); do echo "[w$i] $W/trial.sh"; done
	} >trials.txt
	sweep --procmgr-restart=on-failure:1
	# The quick trials ended (the journal has them), 8 waiters run.
	wait_until 60 bash -c "[ \$(cat $W/trials.txt.journal 2>/dev/null | grep -c done) -ge 6 ]" || { show; false; }
	wait_until 60 bash -c "[ \$(cat $W/started 2>/dev/null | wc -l) -ge 8 ]" || { show; false; }
	job=$(last_job)
	t0=$(date +%s.%N)
	crash 0
	# Node 2 takes the root's place and the queue: its mark in the journal.
	wait_until 60 grep -q '^#root 1$' trials.txt.journal || { show; false; }
	wait_until 60 grep -q '"event":"sweep_takeover"' "$STATE/$job/0.events.jsonl" || { show; false; }
	# The old root's waiters stopped, and started again under the new root.
	wait_until 60 bash -c "[ \$(wc -l <$W/started) -ge 16 ]" || { show; false; }
	echo "# the root's loss to its trials running again: $(echo "$(date +%s.%N) - $t0" | bc) s" >&3
	touch go
	wait_until 120 grep -q "procmgr: sweep of 18 trials" out || { show; false; }
	show
	wait $SRUN_PID || rc=$?
	echo "# srun returned ${rc:-0}" >&3
	# Every trial once in the results, done; the quick ones never again.
	[ "$(awk -F'\t' 'NR > 1 { print $1 }' trials.txt.results | sort | uniq -d | wc -l)" -eq 0 ]
	[ "$(rows trials.txt.results done)" -eq 18 ]
	[ "$(lines quick)" -eq 6 ]
	[ "$(sort -u quick | wc -l)" -eq 6 ]
	[ "$(lines ran)" -eq 12 ]
	[ "$(sort -u ran | wc -l)" -eq 12 ]
	# Nothing ran on the lost root after its loss; a spare took slots.
	[ "$(awk '{ print $3 }' started | tail -n 8 | grep -c "^${P}1$")" -eq 0 ]
	grep -q "procmgr: the sweep's root ${P}1 was lost; ${P}2 took its place: 6 of 18 trials had ended" out
	grep -q "procmgr: sweep of 18 trials: 18 done, 0 failed" out
	# The machine replaced nothing and started no generation.
	! grep -q "generation\|move to spare" out
	events "$job" 0 | grep -q '"event":"root_moved"'
	# scancel then leaves nothing behind (the crashed node's run
	# directory went with its disk: teardown removes it).
	scancel "$job" 2>/dev/null || true
	wait_until 30 nothing_left_but_node0 || {
		for p in $(our_procs); do ps -o pid=,stat=,args= -p "$p"; done
		find "$STATE" -name '*.run' -o -name sock; false
	}
}
nothing_left_but_node0() {
	[ -z "$(our_procs)" ] &&
		[ -z "$(find "$STATE" -path '*.0.run' -prune -o \( -name '*.run' -o -name sock \) -print 2>/dev/null)" ]
}
