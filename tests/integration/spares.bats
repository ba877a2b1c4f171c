#!/usr/bin/env bats
# Hot spares (--procmgr-spares): a lost node's ranks move to a spare inside
# the same step. A 6-node testbed of its own beside the run script's (its
# directory, NET and node names derived from that one's: $PM_TESTBED_DIR-spares,
# NET+1, ${PM_TESTBED_PREFIX}sp), with SlurmdTimeout=5 so that Slurm's own DOWN (which ends srun's wait for the
# lost node's tasks) comes in about 25 s. Faults are real: a node crashed
# (its slurmd, slurmstepd and everything below killed at once), stopped
# (SIGSTOP of the same), cut off (nft drop of its address), unhealthy.

# Each may be set (PM_SPARES_DIR, _NET, _PREFIX); derived once: bats sources
# this file again for every test, with what the first time exported.
export PM_SPARES_DIR=${PM_SPARES_DIR:-$PM_TESTBED_DIR-spares}
export PM_SPARES_NET=${PM_SPARES_NET:-$((${PM_TESTBED_NET:-10} + 1))}
export PM_SPARES_PREFIX=${PM_SPARES_PREFIX:-${PM_TESTBED_PREFIX:-pmnode}sp}
export PM_TESTBED_DIR=$PM_SPARES_DIR PM_TESTBED_NET=$PM_SPARES_NET PM_TESTBED_PREFIX=$PM_SPARES_PREFIX
export SLURM_CONF=$PM_TESTBED_DIR/slurm.conf
load helpers

DROP_TABLE=pm_spares_drop
N=6
# 4 active nodes (ranks 0-3, one per node) and 2 spares, srun and job with
# --no-kill; every rank works RUN seconds per generation.
SRUN=(srun --no-kill -N$N --ntasks-per-node=1 --procmgr-spares=2
      --procmgr-restart=on-failure:3 --procmgr-grace=1)

setup_file() {
	"$top/tests/cluster/testbed" down
	PM_TESTBED_SLURMD_TIMEOUT=5 "$top/tests/cluster/testbed" up $N >"$BATS_FILE_TMPDIR/env"
	# Its own reserved ports (MASTER_PORT), not the run script's testbed's.
	. "$BATS_FILE_TMPDIR/env"
}

teardown_file() {
	nft delete table inet "$DROP_TABLE" 2>/dev/null || true
	"$top/tests/cluster/testbed" down
}

node_addr() { "$top/tests/cluster/testbed" addr "$1"; }

slurmd_of() { cat "$PM_TESTBED_DIR/slurmd-$PM_TESTBED_PREFIX$(($1 + 1)).pid"; }
tree_of() { local c; echo "$1"; for c in $(pgrep -P "$1"); do tree_of "$c"; done; }
# A crash: the slurmd of node index I (0-based; the step spans all nodes in
# order), its slurmstepd and all below, at once; found through this
# testbed's files, so never another testbed's.
node_pids() { tb pids $(($1 + 1)) | sort -u; }
crash() { freeze_or_kill -9 "$1"; echo "$1" >>"$W/crashed"; }
# Signal a node's processes; what was hit goes to the record.
freeze_or_kill() {
	local pids
	pids=$(node_pids "$2")
	ps -o pid=,stat=,args= -p "$(echo $pids | tr ' ' ,)" | cut -c1-100 >>"$W/hit"
	kill "$1" $pids
}

# Bring every node back for the next test: stopped ones continued, then
# killed with what they ran; dead slurmd started again, until all are idle.
revive() {
	local i pid
	nft delete table inet "$DROP_TABLE" 2>/dev/null || true
	# What this test signalled (the record), and this testbed's steps.
	for pid in $(awk '{ print $1 }' "$W/hit" 2>/dev/null) \
		$(for s in $(tb stepds); do tree_of "$s"; done) $(our_procs); do
		kill -CONT "$pid" 2>/dev/null || true
	done
	for ((i = 0; i < N; i++)); do
		pid=$(slurmd_of $i 2>/dev/null) || true
		if [ -z "$pid" ] || ! alive "$pid" || [[ "$(ps -o stat= -p "$pid")" == T* ]]; then
			kill -CONT "$pid" 2>/dev/null || true
			kill -9 "$pid" 2>/dev/null || true
			slurmd -N "$PM_TESTBED_PREFIX$((i + 1))" -f "$SLURM_CONF"
		fi
	done
	scontrol update nodename="$PM_TESTBED_PREFIX[1-$N]" state=resume 2>/dev/null || true
	wait_until 60 all_idle
}
all_idle() { nodes_idle $N; }

teardown() {
	local i
	scancel --quiet -u root 2>/dev/null || true
	revive
	# A crashed node's run directory went with its disk: here all nodes
	# share one state_dir, so it is removed as the node's reboot would.
	for i in $(cat "$W/crashed" 2>/dev/null); do rm -rf "$STATE"/*/0.$i.run; done
	pm_teardown
}

# Lines of srun's output and the worker log for the record.
show() {
	echo "--- srun:"; cat "$W/out" 2>/dev/null || echo "$output"
	echo "--- ranks:"; cat "$PM_LOG"
	echo "--- signalled:"; cat "$W/hit" 2>/dev/null || true
	echo "--- procmgrd:"; cat "$STATE"/*/0.*.log 2>/dev/null | grep -v "^$" | tail -n 60 || true
}

# Every rank 0-3 started exactly once in generation G; rank R on node NODE.
gen_ranks_once() {
	local g=$1 r
	for r in 0 1 2 3; do
		[ "$(grep -c "^start rank=$r gen=$g " "$PM_LOG")" = 1 ] || return 1
	done
	[ "$(grep -c "^start .* gen=$g " "$PM_LOG")" = 4 ]
}
ran_on() { grep -q "^start rank=$1 gen=$2 node=$3 " "$PM_LOG"; }

# Every rank ran again in generation 1 (the fault's test goes on with the
# record shown), then srun has returned: it waits for Slurm's DOWN.
recovered() {
	wait_until 40 gen_ranks_once 1 || { show; false; }
	wait $SRUN_PID || rc=$?
	show
	echo "srun returned ${rc:-0}"
}

launch() { # env for the worker, as VAR=VALUE words
	env "$@" PM_LOG="$PM_LOG" timeout 120 "${SRUN[@]}" "$WORKER" >"$W/out" 2>&1 &
	SRUN_PID=$!
	wait_until 30 started 4
}

@test "spares: srun refuses --procmgr-spares without --no-kill, before anything starts" {
	run timeout 30 srun -N$N --ntasks-per-node=1 --procmgr-spares=2 --procmgr-restart=on-failure \
		"$WORKER"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"--procmgr-spares=2 needs srun --no-kill"* ]]
	[ "$(count start)" = 0 ]
	run timeout 30 srun --no-kill -N$N --ntasks-per-node=1 --procmgr-spares=2 "$WORKER"
	[ "$status" -ne 0 ]
	[[ "$output" == *"--procmgr-spares=2 needs restarts"* ]]
	run timeout 30 srun --no-kill -N$N -n8 --procmgr-spares=$N --procmgr-restart=on-failure "$WORKER"
	[ "$status" -ne 0 ]
	[[ "$output" == *"needs more than $N nodes"* ]]
	[ "$(count start)" = 0 ]
}

@test "spares: ranks run on the active nodes only, WORLD_SIZE counts them, spares run nothing" {
	run env RUN=0 PM_LOG="$PM_LOG" timeout 60 "${SRUN[@]}" "$WORKER"
	echo "$output"; cat "$PM_LOG"
	[ "$status" -eq 0 ]
	gen_ranks_once 0
	for r in 0 1 2 3; do ran_on $r 0 "$PM_TESTBED_PREFIX$((r + 1))"; done
	grep -q "world=4 " "$PM_LOG"
	! grep -q "node=${PM_TESTBED_PREFIX}[56] " "$PM_LOG"
	grep -q "master=${PM_TESTBED_PREFIX}1:" "$PM_LOG"
}

@test "spares: a crashed node's rank moves to a spare, every rank runs again together" {
	launch RUN=8
	crash 2
	recovered
	gen_ranks_once 1
	ran_on 2 1 "${PM_TESTBED_PREFIX}5"
	ran_on 0 1 "${PM_TESTBED_PREFIX}1"
	grep -q "lost node ${PM_TESTBED_PREFIX}3 (.*); its rank 2 move to spare ${PM_TESTBED_PREFIX}5" "$W/out"
	grep -q "^${PM_TESTBED_PREFIX}3$" "$STATE"/*/0.exclude
	job=$(last_job)
	events "$job" 0 | grep -q '"event":"node_replaced".*"node":"'"${PM_TESTBED_PREFIX}3"'","spare":"'"${PM_TESTBED_PREFIX}5"'"'
}

@test "spares: a stopped node (SIGSTOP, a hung machine) is lost at the peer timeout and replaced" {
	launch RUN=12
	freeze_or_kill -STOP 1
	recovered
	ran_on 1 1 "${PM_TESTBED_PREFIX}5"
	grep -q "lost node ${PM_TESTBED_PREFIX}2 (no heartbeat for 5 s); its rank 1 move to spare" "$W/out"
}

@test "spares: a node cut off (its traffic dropped) is replaced, and ends its own part" {
	launch RUN=12
	nft add table inet "$DROP_TABLE"
	nft add chain inet "$DROP_TABLE" input '{ type filter hook input priority 0; }'
	nft add rule inet "$DROP_TABLE" input ip saddr "$(node_addr 4)" drop
	nft add rule inet "$DROP_TABLE" input ip daddr "$(node_addr 4)" drop
	recovered
	ran_on 3 1 "${PM_TESTBED_PREFIX}5"
	grep -q "lost node ${PM_TESTBED_PREFIX}4 (.*); its rank 3 move to spare" "$W/out"
	# Its own rank was ended there, not left running.
	grep -q "^term rank=3 gen=0 node=${PM_TESTBED_PREFIX}4 " "$PM_LOG"
}

@test "spares: a node that fails its health check between generations is replaced" {
	cat >"$W/check" <<EOF
#!/bin/sh
[ ! -e $W/sick-\$SLURMD_NODENAME ] || { echo "marked sick"; exit 1; }
EOF
	cat >"$W/rank" <<EOF
#!/bin/bash
[ "\$RANK" = 1 ] && [ "\$PROCMGR_RESTART_COUNT" = 0 ] && touch $W/sick-\$SLURMD_NODENAME
exec $WORKER
EOF
	chmod +x "$W/check" "$W/rank"
	rc=0
	env FAIL_RANK=1 PM_LOG="$PM_LOG" timeout 60 "${SRUN[@]}" --procmgr-health="script:$W/check" \
		"$W/rank" >"$W/out" 2>&1 || rc=$?
	show
	[ "$rc" -eq 0 ]
	gen_ranks_once 1
	ran_on 1 1 "${PM_TESTBED_PREFIX}5"
	grep -q "lost node ${PM_TESTBED_PREFIX}2 (failed a health check: .*marked sick.*); its rank 1 move to spare" "$W/out"
}

@test "spares: losing node 0 moves the root and MASTER_ADDR, and the step goes on" {
	launch RUN=8
	crash 0
	wait_until 40 gen_ranks_once 1 || { show; false; }
	# procmgr status finds the new root (node 0 is gone).
	run timeout 20 "$PROCMGR" status "$(last_job).0"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == *"generation 1"* ]]
	recovered
	ran_on 0 1 "${PM_TESTBED_PREFIX}5"
	grep -q "^start rank=1 gen=1 .* master=${PM_TESTBED_PREFIX}5:" "$PM_LOG"
	job=$(last_job)
	events "$job" 0 | grep -q '"event":"root_moved".*"root":"'"${PM_TESTBED_PREFIX}2"'"'
	events "$job" 0 | grep -q '"event":"node_replaced".*"node":"'"${PM_TESTBED_PREFIX}1"'"'
}

# The root and one more node lost at once: the new root must still declare
# the other lost (its stop deadline goes on after the election), give both
# slots to the spares and start the next generation. Today: no generation
# starts, for ever.
root_and_one_more() {
	local pids
	launch RUN=10
	# Both nodes at once: all their processes stopped first, then killed,
	# so that neither acts on the other's loss before it goes too.
	pids=$({ node_pids 0; node_pids "$1"; } | sort -u)
	ps -o pid=,stat=,args= -p "$(echo $pids | tr ' ' ,)" | cut -c1-100 >>"$W/hit"
	printf '0\n%s\n' "$1" >>"$W/crashed"
	kill -STOP $pids
	kill -9 $pids
	wait_until 40 gen_ranks_once 1 || { show; false; }
	recovered
	job=$(last_job)
	grep -q "lost node ${PM_TESTBED_PREFIX}$(($1 + 1)) (.*); its rank $1 move to spare" "$W/out"
	# Both slots went to the spares, one each.
	grep -q "^start rank=0 gen=1 node=${PM_TESTBED_PREFIX}[56] " "$PM_LOG"
	grep -q "^start rank=$1 gen=1 node=${PM_TESTBED_PREFIX}[56] " "$PM_LOG"
	events "$job" 0 | grep -q '"event":"root_moved"'
	events "$job" 0 | grep -q '"event":"node_replaced".*"node":"'"${PM_TESTBED_PREFIX}1"'"'
	events "$job" 0 | grep -q '"event":"node_replaced".*"node":"'"${PM_TESTBED_PREFIX}$(($1 + 1))"'"'
}

@test "spares: losing nodes 0 and 1 at once (the root and its successor): both replaced, the step goes on" {
	root_and_one_more 1
}

@test "spares: losing nodes 0 and 3 at once: both replaced, the step goes on" {
	root_and_one_more 3
}

@test "spares: a partition that cuts off the root and node 1: the other side goes on with the spares" {
	launch RUN=12
	nft add table inet "$DROP_TABLE"
	nft add chain inet "$DROP_TABLE" input '{ type filter hook input priority 0; }'
	for i in 1 2; do
		nft add rule inet "$DROP_TABLE" input ip saddr "$(node_addr $i)" drop
		nft add rule inet "$DROP_TABLE" input ip daddr "$(node_addr $i)" drop
	done
	recovered
	ran_on 0 1 "${PM_TESTBED_PREFIX}5"
	ran_on 1 1 "${PM_TESTBED_PREFIX}6"
	# The side cut off ended its own ranks, not left them running.
	grep -q "^term rank=0 gen=0 node=${PM_TESTBED_PREFIX}1 " "$PM_LOG"
	grep -q "^term rank=1 gen=0 node=${PM_TESTBED_PREFIX}2 " "$PM_LOG"
}

# Another user floods node 1's control port with connections that never
# say hello (reopening each one closed) while node 0 crashes: nodes 2-5
# must still reach node 1, their new parent, and the step go on. The
# owner's procmgr status meanwhile answers or says busy, never "has the
# step ended?".
@test "spares: a flood of silent connections from another user does not turn a lost root into a failed step" {
	launch RUN=12
	port=$(grep -o 'ports=[0-9]*' "$PM_LOG" | head -n1 | cut -d= -f2)
	runuser -u nobody -- /usr/bin/python3 - "${PM_TESTBED_PREFIX}2" "$port" "$W/flood.stop" \
		>"$W/flood" 2>&1 <<-'PY' &
	import os, select, socket, sys, time
	host, port, stop = sys.argv[1], int(sys.argv[2]), sys.argv[3]
	socks, opened, said = set(), 0, False
	def more():
	    global opened, said
	    while len(socks) < 200:
	        try:
	            socks.add(socket.create_connection((host, port), timeout=2))
	            opened += 1
	        except OSError:
	            return
	        if not said and len(socks) >= 20:
	            print("open", len(socks), flush=True)
	            said = True
	t0 = time.time()
	while not os.path.exists(stop) and time.time() - t0 < 60:
	    r, _, _ = select.select(list(socks), [], [], 0.2)
	    for s in r:
	        try:
	            gone = not s.recv(100)
	        except OSError:
	            gone = True
	        if gone:
	            socks.discard(s)
	            s.close()
	    more()
	print("opened %d in %.1f s" % (opened, time.time() - t0), flush=True)
	PY
	flood=$!
	wait_until 20 grep -q "^open" "$W/flood"
	crash 0
	wait_until 40 gen_ranks_once 1 || { touch "$W/flood.stop"; wait $flood; cat "$W/flood"; show; false; }
	run timeout 30 "$PROCMGR" status "$(last_job).0"
	echo "status during the flood: $output"
	[[ "$output" != *"has the step ended"* ]]
	[ "$status" -eq 0 ] || [[ "$output" == *"refused: busy"* ]]
	touch "$W/flood.stop"
	wait $flood || true
	cat "$W/flood"
	recovered
	ran_on 0 1 "${PM_TESTBED_PREFIX}5"
	events "$(last_job)" 0 | grep -q '"event":"root_moved".*"root":"'"${PM_TESTBED_PREFIX}2"'"'
}

@test "spares: two nodes lost one after the other take both spares; a third ends the step naming all" {
	launch RUN=10
	crash 2
	wait_until 40 gen_ranks_once 1 || { show; false; }
	crash 3
	wait_until 40 gen_ranks_once 2 || { show; false; }
	ran_on 2 2 "${PM_TESTBED_PREFIX}5"
	ran_on 3 2 "${PM_TESTBED_PREFIX}6"
	crash 1
	wait $SRUN_PID || rc=$?
	show
	echo "srun returned ${rc:-0}"
	[ "${rc:-0}" -ne 0 ]
	grep -q "no spare left; ending the step" "$W/out"
	grep -q "Next time: --exclude=${PM_TESTBED_PREFIX}3,${PM_TESTBED_PREFIX}4,${PM_TESTBED_PREFIX}2" "$W/out"
	grep -qx "${PM_TESTBED_PREFIX}3,${PM_TESTBED_PREFIX}4,${PM_TESTBED_PREFIX}2" "$STATE"/*/0.exclude
}

# A DDP job saving its state to procmgr every step; rank R's node crashed
# while that rank waits at step 25 (the others block in its collective).
# Node i's buddy is node (i+3)%6 (half the ring away, spares included).
ddp_spare() { # name, rank to crash
	/usr/bin/python3 -c 'import torch' 2>/dev/null ||
		skip "no torch for /usr/bin/python3: apt-get install python3-torch (tests/install-deps)"
	ddp() { # name, then VAR=VALUE for the ranks
		local name=$1; shift
		stacks_before_timeout 150 env "$@" "${SRUN[@]}" --procmgr-grace=5 /usr/bin/python3 \
			"$top/examples/ddp_train.py" --ckpt-dir "$W/ckpt.$name" --steps 40 \
			--ckpt-every 10 >"$W/$name.out" 2>&1
	}
	loss() { sed -n 's/^final loss: \([^ ]*\) .*/\1/p' "$W/$1.out"; }
	ddp plain || { cat "$W/plain.out"; false; }
	ddp "$1" CRASH_RANK=$2 CRASH_STEP=25 CRASH_MARKER="$W/crashed" CRASH_HOW=wait &
	local pid=$!
	wait_until 120 test -e "$W/crashed" || { cat "$W/$1.out"; false; }
	crash "$2"
	wait $pid || rc=$?
	cat "$W/plain.out" "$W/$1.out"
	cat "$STATE"/*/0.*.log | grep "state replication" || true
	echo "srun returned ${rc:-0}"
	echo "# final loss: $(loss plain) unbroken, $(loss "$1") after a node crash" >&3
	grep "rank $2 gen 1\] resumed\|every rank training again" "$W/$1.out" | sed 's/^/# /' >&3
	[ -n "$(loss plain)" ]
	[ "$(loss plain)" = "$(loss "$1")" ]
	grep -q "lost node ${PM_TESTBED_PREFIX}$(($2 + 1)) (.*); its rank $2 move to spare ${PM_TESTBED_PREFIX}5" "$W/$1.out"
	# Every rank from procmgr's memory, the spare's from the buddy's copy
	# of the lost node's rank: not from the disk's step 20.
	[ "$(grep -c "gen 1\] resumed from step 25 (procmgr's copy" "$W/$1.out")" -eq 4 ]
	! grep -q "resumed from step 20" "$W/$1.out"
	job=$(last_job)
	events "$job" 0 | grep '"event":"state_re'
	events "$job" 0 | grep -q '"event":"state_replicated"'
	events "$job" 0 | grep '"event":"state_restored"' | grep "\"rank\":$2," |
		grep -q '"node":"'"${PM_TESTBED_PREFIX}5"'".*"train_step":25,.*"from_node":"'"${PM_TESTBED_PREFIX}$(($2 + 1))"'"'
}

@test "spares: a DDP (gloo) job survives a node crash; the spare, its buddy, has its state; same loss as a run without" {
	# Node 1's buddy is node 4, the spare that takes its slot: the
	# replicas are there already.
	ddp_spare crash1 1
	grep -q "state replication: node ${PM_TESTBED_PREFIX}2 lost; its state is here already" "$STATE"/*/0.4.log
}

@test "spares: a DDP (gloo) job survives a node crash; its buddy hands the state to the spare; same loss as a run without" {
	# Node 2's buddy is node 5; the spare that takes its slot is node 4.
	ddp_spare crash2 2
	grep -q "state replication: node ${PM_TESTBED_PREFIX}3 lost, its state (.* blobs) to the spare ${PM_TESTBED_PREFIX}5" "$STATE"/*/0.5.log
	grep -q "handed us node ${PM_TESTBED_PREFIX}3's state" "$STATE"/*/0.4.log
}

# procmgr status --json counts at least N standbys ready (the spares' too).
standbys_ready() {
	"$PROCMGR" status "$(last_job)" --json >"$W/st.json" 2>/dev/null &&
		[ "$(grep -o '"standby":"ready"' "$W/st.json" | wc -l)" -ge "$1" ]
}

# A DDP job with --procmgr-warm=$1 whose rank 1's node crashes once every
# standby (the spares' too) is ready: the spare takes rank 1 from its
# standby, the job ends with the unbroken run's loss.
ddp_warm_spare() {
	local warm=$1
	/usr/bin/python3 -c 'import torch' 2>/dev/null ||
		skip "no torch for /usr/bin/python3: apt-get install python3-torch (tests/install-deps)"
	ddp() { # name, then VAR=VALUE for the ranks
		local name=$1; shift
		stacks_before_timeout 180 env PYTHONPATH="$top/python" "$@" "${SRUN[@]}" --procmgr-grace=5 \
			"$warm" /usr/bin/python3 "$top/examples/ddp_train.py" \
			--ckpt-dir "$W/ckpt.$name" --steps 40 --ckpt-every 10 >"$W/$name.out" 2>&1
	}
	loss() { sed -n 's/^final loss: \([^ ]*\) .*/\1/p' "$W/$1.out"; }
	ddp plain || { cat "$W/plain.out"; false; }
	ddp crash CRASH_RANK=1 CRASH_STEP=25 CRASH_MARKER="$W/crashed" CRASH_HOW=wait &
	local pid=$!
	wait_until 120 test -e "$W/crashed" || { cat "$W/crash.out"; false; }
	# Every supervisor's standby waits, the spares' two too, before the crash.
	wait_until 60 standbys_ready 6 || { cat "$W/st.json" "$W/crash.out"; false; }
	cat "$W/st.json"
	grep -Eq '"rank":-1,[^}]*"state":"spare",[^}]*"standby":"ready"' "$W/st.json"
	crash 1
	wait $pid || rc=$?
	cat "$W/plain.out" "$W/crash.out"
	echo "srun returned ${rc:-0}"
	echo "# final loss: $(loss plain) unbroken, $(loss crash) warm after a node crash" >&3
	[ -n "$(loss plain)" ]
	[ "$(loss plain)" = "$(loss crash)" ]
	grep -q "lost node ${PM_TESTBED_PREFIX}2 (.*); its rank 1 move to spare ${PM_TESTBED_PREFIX}5" "$W/crash.out"
	# Every rank of generation 1, the spare's rank 1 too, from a standby.
	grep -q "procmgr: rank 1: generation 1 starts (warm)" "$W/crash.out"
	[ "$(grep -c "procmgr: rank [0-3]: generation 1 starts (warm)" "$W/crash.out")" -eq 4 ]
	! grep -q "starts cold" "$W/crash.out"
}

@test "spares, warm: a DDP job's crashed node is replaced by a spare whose standby takes its rank; same loss as a run without" {
	ddp_warm_spare --procmgr-warm=on
}

@test "spares, python fork server: a DDP job's crashed node is replaced by a spare whose fork server forks its rank; same loss as a run without" {
	ddp_warm_spare --procmgr-warm=python:torch,torch.distributed,torch.nn.parallel
	! grep -q "refused" "$W/crash.out"
}
