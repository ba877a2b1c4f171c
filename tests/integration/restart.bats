#!/usr/bin/env bats
# Supervised ranks and coordinated restart, on 4 nodes x 2 ranks.
load helpers

step() { # srun options... -- run the worker on 4 nodes, 8 ranks
	srun -N4 -n8 "$@" "$WORKER"
}

@test "ranks get the torchrun environment" {
	run step --procmgr
	[ "$status" -eq 0 ]
	[ "$(count start)" -eq 8 ]
	for r in 0 1 2 3 4 5 6 7; do
		grep -q "start rank=$r gen=0 node=${P}$((r / 2 + 1)) .* local=$((r % 2)) world=8 lws=2 group=$((r / 2)) master=${P}1:[0-9]* telastic=0 max=0 " "$PM_LOG" ||
			{ cat "$PM_LOG"; return 1; }
	done
	# MASTER_PORT is a port reserved for the step, the same for every rank.
	[ "$(grep -o 'master=[^ ]*' "$PM_LOG" | sort -u | wc -l)" -eq 1 ]
}

@test "one rank fails in generation 0: every rank restarts once, other nodes' ranks were stopped" {
	export FAIL_RANK=3 RUN=30 FAIL_AFTER_ALL=1
	# Healthy ranks would work 30 s in generation 0: they must be stopped,
	# then run generation 1 (where nobody fails) for a short while.
	run step --procmgr-restart=on-failure:2 --procmgr-verbose \
		--export=ALL,RUN=0 bash -c 'export RUN=$([ "$PROCMGR_RESTART_COUNT" = 0 ] && echo 30 || echo 0); exec "$0"' "$WORKER"
	echo "$output"; cat "$PM_LOG"
	[ "$status" -eq 0 ]
	[ "$(count 'start .*gen=0')" -eq 8 ]
	[ "$(count 'fail rank=3 gen=0')" -eq 1 ]
	for r in 0 1 2 3 4 5 6 7; do
		[ "$(count "start rank=$r gen=1 ")" -eq 1 ]
		[ "$(count "done rank=$r gen=1 ")" -eq 1 ]
		[ "$(count "done rank=$r gen=0 ")" -eq 0 ]
	done
	# The 7 others were told to stop (SIGTERM), on every node.
	[ "$(count 'term .*gen=0')" -eq 7 ]
	[ "$(grep 'term .*gen=0' "$PM_LOG" | grep -o 'node=[^ ]*' | sort -u | wc -l)" -eq 4 ]
	[[ "$output" == *"rank 3 on ${P}2 exited with code 7; restarting all 8 ranks"* ]]
	job=$(last_job)
	run events "$job" 0
	[[ "$output" == *'"event":"rank_failed","gen":0,"rank":3,"node":"'"${P}"'2"'* ]]
	[[ "$output" == *'"event":"start","gen":1,"restart":1'* ]]
	[[ "$output" == *'"event":"finish","gen":1'* ]]
}

@test "a rank killed with SIGKILL is a failure: all restart" {
	run step --procmgr-restart=on-failure:1 --export=ALL,FAIL_RANK=5,FAIL_HOW=kill
	[ "$status" -eq 0 ]
	[ "$(count 'fail rank=5 gen=0')" -eq 1 ]
	[ "$(count 'done .*gen=1')" -eq 8 ]
	run events "$(last_job)" 0
	[[ "$output" == *'"rank":5,"node":"'"${P}"'3","status":"was killed by signal 9 (Killed)"'* ]]
}

@test "grandchildren of a failed generation do not survive the restart" {
	mark=pmgc$$
	run step --procmgr-restart=on-failure:1 --export=ALL,FAIL_RANK=0,GRANDCHILD=$mark,RUN=1
	[ "$status" -eq 0 ]
	[ "$(count 'done .*gen=1')" -eq 8 ]
	! pgrep -f "$mark" || { pgrep -af "$mark"; return 1; }
}

@test "budget spent: srun exits with the failing rank's code and says which rank, node and how" {
	run step --procmgr-restart=on-failure:2 --export=ALL,FAIL_RANK=6,FAIL_GEN=any,FAIL_HOW=exit:42
	echo "$output"
	[ "$status" -eq 42 ]
	[ "$(count 'fail rank=6')" -eq 3 ]
	[[ "$output" == *"procmgr: rank 6 on ${P}4 exited with code 42 in generation 2; giving up after 2 restarts (restart=on-failure:2)"* ]]
	run events "$(last_job)" 0
	[[ "$output" == *'"event":"give_up","gen":2,"exit_code":42'* ]]
}

@test "restart=never: the step ends with the rank's code and procmgr's message" {
	run step --procmgr-restart=never --export=ALL,FAIL_RANK=1,FAIL_HOW=exit:3,RUN=30
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$(count 'start .*gen=1')" -eq 0 ]
	[[ "$output" == *"procmgr: rank 1 on ${P}1 exited with code 3 in generation 0; not restarting (restart=never)"* ]]
}

@test "an ordinary user's step restarts too, and its files are the user's" {
	run as_user srun -N4 -n8 --procmgr-restart=on-failure:1 --export=ALL,FAIL_RANK=7 "$WORKER"
	[ "$status" -eq 0 ]
	[ "$(count 'done .*gen=1')" -eq 8 ]
	job=$(last_job)
	[ "$(stat -c %U "$STATE/$job")" = nobody ]
	[ "$(stat -c %U "$STATE/$job/0.events.jsonl")" = nobody ]
	# ours only: another testbed may run beside
	for p in $(our_procs); do [ "$(stat -c %u /proc/"$p" 2>/dev/null)" != 0 ]; done
	# A procmgrd with nothing to say leaves no empty log behind.
	[ -z "$(find "$STATE/$job" -name '*.log' -empty)" ] || { ls -l "$STATE/$job"; return 1; }
}

@test "restart delay grows and a rank hung without heartbeat is restarted; one that never beats is left alone" {
	run step --procmgr-restart=on-failure:1 --procmgr-hang-timeout=1 --procmgr-verbose \
		--export=ALL,HANG_RANK=2,RUN=2
	echo "$output"; cat "$PM_LOG"
	[ "$status" -eq 0 ]
	# Rank 2 hung in generation 0; the others ran 2 s without any heartbeat
	# and were not judged.
	[[ "$output" == *"rank 2 on ${P}2 hung: no heartbeat for 1 s"* ]]
	[ "$(count 'done .*gen=1')" -eq 8 ]
	run events "$(last_job)" 0
	[[ "$output" == *'"rank":2,"node":"'"${P}"'2","status":"hung (no heartbeat)","hung":true'* ]]
	[ "$(grep -c '"event":"rank_failed"' <<<"$output")" -eq 1 ]
}

@test "every rank hung in the same instant: all stop and generation 1 runs" {
	# All 8 ranks beat once and block, as behind a collective that never
	# returns: every supervisor judges its own rank hung within milliseconds
	# of the others, and the root's STOP reaches each while it is still
	# ending its rank (which takes 0.5 s to exit on SIGTERM).
	run timeout 60 srun -N4 -n8 --procmgr-restart=on-failure:1 --procmgr-hang-timeout=1 \
		--export=ALL,HANG_RANK=all,TERM_DELAY=0.5 "$WORKER"
	echo "$output"; cat "$PM_LOG"
	[ "$status" -eq 0 ]
	[ "$(count 'done .*gen=1')" -eq 8 ]
	run events "$(last_job)" 0
	[ "$(grep -c '"event":"stopped"' <<<"$output")" -eq 1 ]
	[ "$(grep -c '"event":"start"' <<<"$output")" -eq 1 ]
	grep -q '"hung":true' <<<"$output"
}

@test "a command that cannot run ends the step at once, without restarts" {
	run timeout 60 srun -N4 -n8 --procmgr-restart=on-failure:3 /nonexistent/train
	echo "$output"
	[ "$status" -eq 127 ]
	[[ "$output" == *"cannot run /nonexistent/train: No such file or directory"* ]]
	[[ "$output" == *"cannot run its command (exited with code 127) in generation 0; not restarting"* ]]
	run events "$(last_job)" 0
	[[ "$output" == *'"cannot_run":true'* ]]
	[[ "$output" != *'"event":"start"'* ]]
}

@test "scancel during a restart leaves no process of the job on any node" {
	cat >job.sh <<-EOS
	#!/bin/bash
	#SBATCH -N4 -n8
	srun -N4 -n8 --procmgr-restart=on-failure:3 --procmgr-restart-delay=30 --export=ALL,FAIL_RANK=4,PM_LOG=$PM_LOG $WORKER
	EOS
	job=$(sbatch --parsable -o "$W/out" job.sh)
	# Wait for the restart to be under way (the stop done, the delay running).
	wait_until 30 grep -q '"event":"stopped"' "$STATE/$job/0.events.jsonl"
	scancel "$job"
	wait_until 30 bash -c "! squeue -h -j $job 2>/dev/null | grep -q ."
	wait_until 15 no_leftovers
	[ -z "$(our_workers)" ]
	[ "$(count 'start .*gen=1')" -eq 0 ]
}

# A client of the control tree that is not procmgrd: sends HELLO with a
# credential and prints what the port answers.
hello() { # port credential node
	/usr/bin/python3 -c '
import os, socket, struct, sys
port, cred, node = int(sys.argv[1]), sys.argv[2].encode(), int(sys.argv[3])
s = socket.create_connection((sys.argv[4], port), timeout=10)
payload = struct.pack(">IiiiIH", 0, -1, node, 0, 0, len(cred)) + cred
s.sendall(struct.pack(">HBBI", 0x504d, 1, 1, len(payload)) + payload)
data = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
print("closed without answer" if len(data) < 30 else
      "type=%d text=%s" % (data[3], data[30:].decode()))
' "$@" "${P}1"
}

@test "the control port refuses a bad credential, another job's, another user's, and garbage" {
	srun -N4 -n8 --procmgr --export=ALL,RUN=60 "$WORKER" >"$W/out" 2>&1 &
	pid=$!
	wait_until 30 started 8
	ports=$(grep -o 'ports=[0-9]*' "$PM_LOG" | head -n1 | cut -d= -f2)
	job=$(last_job)
	sock=$PM_TESTBED_DIR/munge/munge.socket
	# node 1 to node 0, with a nonce: what a child's HELLO carries.
	hs() { echo "procmgr-tree v2 hello job=$1 step=0 from=$2 to=0 nonce=0123456789abcdef0123456789abcdef"; }

	run hello "$ports" "not-a-credential" 1
	echo "$output"
	[[ "$output" == "type=7 text="*"invalid munge credential"* ]]
	run hello "$ports" "$(munge -S "$sock" -n -s "$(hs $((job + 1)) 1)")" 1
	[[ "$output" == "type=7 text=credential for another job or step"* ]]
	run hello "$ports" "$(runuser -u nobody -- munge -S "$sock" -n -s "$(hs "$job" 1)")" 1
	[[ "$output" == "type=7 text=credential of uid 65534, not the job's user (uid 0)"* ]]
	# The old form, and a credential captured on another link (node 2's).
	run hello "$ports" "$(munge -S "$sock" -n -s "procmgr-tree v1 job=$job step=0")" 1
	[[ "$output" == "type=7 text=credential is not a procmgr hello"* ]]
	run hello "$ports" "$(munge -S "$sock" -n -s "$(hs "$job" 2)")" 1
	[[ "$output" == "type=7 text=credential for another link (from node 2 to node 0)"* ]]
	# A valid credential, but node 1 is connected already.
	run hello "$ports" "$(munge -S "$sock" -n -s "$(hs "$job" 1)")" 1
	[[ "$output" == "type=7 text=node 1 is already connected"* ]]
	run bash -c "printf 'GET / HTTP/1.0\r\n\r\n' | timeout 5 /usr/bin/python3 -c 'import socket,sys; s=socket.create_connection((\"${P}1\", $ports)); s.sendall(sys.stdin.buffer.read()); print(len(s.recv(100)))'"
	[ "$output" = 0 ]
	grep -q "refused tree connection: from node 1: invalid munge credential" "$STATE/$job/0.0.log"
	grep -q "bad magic" "$STATE/$job/0.0.log"
	# The step itself was not disturbed: every rank still runs, nothing
	# failed or was given up.
	[ "$(grep -c '^term \|^done ' "$PM_LOG")" -eq 0 ]
	run events "$job" 0
	[[ "$output" != *rank_failed* && "$output" != *give_up* ]]
	scancel "$job"
	wait $pid || true
}

@test "losing a node's procmgrd ends the step with a clear message instead of hanging" {
	srun -N4 -n8 --procmgr-restart=on-failure:3 --export=ALL,RUN=60 "$WORKER" >"$W/out" 2>&1 &
	pid=$!
	wait_until 30 started 8
	job=$(last_job)
	# procmgrd of node 2 (the third): its rundir holds the socket.
	victim=$(procmgrd_of "$job" 2)
	[ -n "$victim" ]
	kill -9 "$victim"
	wait $pid && st=0 || st=$?
	cat "$W/out"
	[ "$st" -ne 0 ]
	grep -q "procmgr: lost node ${P}3" "$W/out"
	[ "$(count 'start .*gen=1')" -eq 0 ]
}
