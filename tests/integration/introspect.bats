#!/usr/bin/env bats
# procmgr status, events, stacks, restart and stop on a running step, through
# its control tree: as the job's user (nobody), as root, and as another user
# (daemon), who is refused.
load helpers

STUCK=$top/tests/integration/stuck.py

# A step of nobody's on 4 nodes x 2 ranks, Python rank 3 stuck in spin();
# its job id in $job once every rank runs.
python_step() {
	cp "$STUCK" "$W/stuck.py"
	chmod 0644 "$W/stuck.py"
	as_user timeout 90 srun -N4 -n8 --procmgr "$@" --export=ALL,STUCK_RANK=3 \
		/usr/bin/python3 "$W/stuck.py" >"$W/out" 2>&1 &
	pid=$!
	wait_until 30 started 8
	job=$(last_job)
}

# gdb's py-bt (python3-dbg) reads the frames of Python up to 3.12; with
# Debian 13's 3.13 it prints "(unable to read python frame information)",
# so a Python rank's stack names no function there. Says so on the TAP
# output when it is the case.
py_frames_readable() {
	/usr/bin/python3 -c 'import sys; sys.exit(sys.version_info >= (3, 13))' && return 0
	echo "# $BATS_TEST_DESCRIPTION: Python frames not checked: gdb's py-bt cannot read Python $(/usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')'s frames" >&3
	return 1
}

# The step ends (srun returns) within the deadline; its exit status in $rc.
step_ends() {
	local deadline=$((SECONDS + $1))
	while kill -0 "$pid" 2>/dev/null; do
		[ $SECONDS -lt $deadline ] || return 1
		sleep 0.1
	done
	rc=0
	wait "$pid" || rc=$?
}

refused() { # COMMAND ARGS...: as daemon, a clear refusal naming the owner
	run runuser -u daemon -- "$PROCMGR" "$@"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"job $job belongs to nobody; only nobody and root may query it (you are daemon)"* ]]
}

@test "procmgr status: every rank and node, as the job's user and as root; JSON has the documented fields; another user is refused" {
	python_step
	run as_user "$PROCMGR" status "$job"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "step $job.0: 8 ranks on 4 nodes: 8 running; generation 0" ]]
	[ "$(grep -c ' running ' <<<"$output")" -ge 12 ] # 8 ranks, 4 nodes
	for r in 0 1 2 3 4 5 6 7; do
		grep -Eq "^$r +$((r % 2)) +pmnode$((r / 2 + 1)) +[0-9]+ +running +0 " <<<"$output"
	done
	# Each pid is the rank's own Python process.
	for p in $(awk '$5 == "running" && $1 ~ /^[0-9]+$/ && NF == 9 { print $4 }' <<<"$output"); do
		grep -q "pid=$p\$" "$PM_LOG"
	done
	run "$PROCMGR" status "$job.0" --json
	[ "$status" -eq 0 ]
	/usr/bin/python3 - "$output" <<'PY'
import json, sys
d = json.loads(sys.argv[1])
assert set(d) == {"job", "step", "summary", "ranks", "nodes"}, d.keys()
assert set(d["summary"]) == {"text", "nodes", "nodes_answering", "ranks", "running", "done",
                             "failed", "other", "gen_min", "gen_max"}
assert d["summary"]["ranks"] == 8 and d["summary"]["running"] == 8
assert d["summary"]["nodes"] == 4 and d["summary"]["nodes_answering"] == 4
assert [r["rank"] for r in d["ranks"]] == list(range(8))
for r in d["ranks"]:
    assert set(r) == {"rank", "local_rank", "node", "node_id", "pid", "state", "gen",
                      "restarts", "heartbeat_age_ms", "cpu_ms", "rss_kb"}, r.keys()
    assert r["state"] == "running" and r["pid"] > 0 and r["rss_kb"] > 0
    assert r["node"] == "pmnode%d" % (r["rank"] // 2 + 1)
for n in d["nodes"]:
    assert set(n) == {"node_id", "name", "phase", "gen", "ranks", "health"}, n.keys()
    assert n["phase"] == "running" and n["ranks"] == 2
PY
	# Without a step: the running steps of the current job, as in a batch script.
	run env SLURM_JOB_ID="$job" "$PROCMGR" status
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "step $job.0: 8 ranks on 4 nodes: 8 running; generation 0" ]]
	refused status "$job"
	as_user "$PROCMGR" stop "$job"
	step_ends 30
}

@test "procmgr stacks: the stuck Python rank stands out in spin(), the others are grouped in work(); another user is refused" {
	python_step
	run as_user "$PROCMGR" stacks "$job"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "step $job.0: stacks of 8 ranks, "* ]]
	if py_frames_readable; then
	[[ "${lines[0]}" == "step $job.0: stacks of 8 ranks, 2 distinct" ]]
	[[ "$output" == *"== ranks 0-2,4-7 (7) in work =="* ]]
	[[ "$output" == *"== rank 3 (1) in spin =="* ]]
	[[ "$output" == *'File "'"$W"'/stuck.py", line 18, in spin'* ]]
	run "$PROCMGR" stacks "$job.0" --rank 3,5 --json
	[ "$status" -eq 0 ]
	/usr/bin/python3 - "$output" <<'PY'
import json, sys
d = json.loads(sys.argv[1])
assert d["ranks"] == 2
g = {x["top"]: x["ranks"] for x in d["groups"]}
assert g == {"spin": [3], "work": [5]}, g
PY
	fi
	run "$PROCMGR" stacks "$job" --rank 3-1
	[ "$status" -eq 2 ]
	[[ "$output" == *"bad rank list '3-1' (allowed: ranks and ranges such as 0-3,7)"* ]]
	refused stacks "$job"
	as_user "$PROCMGR" stop "$job"
	step_ends 30
}

@test "procmgr restart: every rank restarts, counted, said on srun's stderr and in the event log with who asked; another user is refused" {
	python_step --procmgr-restart=on-failure:1
	refused restart "$job"
	run as_user "$PROCMGR" restart "$job"
	echo "$output"
	[ "$status" -eq 0 ]
	wait_until 30 started 16
	[ "$(count 'gen=1 ')" -eq 8 ]
	run "$PROCMGR" events "$job" --json
	echo "$output"
	[[ "$output" == *'"event":"restart_requested","gen":0,"by":"nobody (uid 65534)"'* ]]
	[[ "$output" == *'"event":"start","gen":1,"restart":1'* ]]
	run "$PROCMGR" events "$job"
	[[ "$output" == *" restart_requested gen=0 by=\"nobody (uid 65534)\""* ]]
	refused events "$job"
	# Generation 1 runs: a second restart is still allowed by hand.
	run "$PROCMGR" status "$job" --json
	[[ "$output" == *'"gen_min":1,"gen_max":1'* ]]
	as_user "$PROCMGR" stop "$job"
	step_ends 30
	grep -q "nobody (uid 65534) asked for a restart; restarting all 8 ranks (restart 1)" "$W/out"
}

@test "procmgr stop: the step ends cleanly (exit 0) within the grace period, said with who asked; another user is refused" {
	python_step --procmgr-grace=5
	refused stop "$job"
	kill -0 "$pid"
	run "$PROCMGR" stop "$job"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == "procmgr: step $job.0: stopping every rank" ]]
	step_ends 20
	cat "$W/out"
	[ "$rc" -eq 0 ]
	grep -q "root (uid 0) asked to stop the step; ending it in generation 0" "$W/out"
	grep -q '"event":"stop_requested","gen":0,"by":"root (uid 0)"' "$STATE/$job/0.events.jsonl"
	# Once ended, the step cannot be asked anything: a clear error.
	run "$PROCMGR" status "$job"
	[ "$status" -eq 1 ]
	[[ "$output" == "procmgr status: "* ]]
}

@test "procmgr events --follow prints the log as it grows and returns when the step ends" {
	python_step
	as_user "$PROCMGR" events "$job" --follow --json >"$W/follow" 2>&1 &
	fpid=$!
	wait_until 10 grep -q '"event":"launch"' "$W/follow"
	as_user "$PROCMGR" stop "$job"
	step_ends 30
	wait_until 10 grep -q '"event":"stop_requested"' "$W/follow"
	# The step's end ends it.
	wait_until 15 bash -c "! kill -0 $fpid 2>/dev/null"
	wait "$fpid"
}

@test "a hang: every rank's stack is taken before anything is stopped; the grouped summary with the hung rank's function on srun's stderr, in the event log and in state_dir" {
	cp "$STUCK" "$W/stuck.py"
	chmod 0644 "$W/stuck.py"
	run as_user timeout 90 srun -N2 -n4 --procmgr --procmgr-hang-timeout=2 \
		--export=ALL,STUCK_RANK=3 /usr/bin/python3 "$W/stuck.py"
	echo "$output"
	[ "$status" -eq 1 ]
	job=$(last_job)
	[[ "$output" == *"procmgr: stacks at the hang of generation 0: 4 ranks, "*" (kept in state_dir/$job/0.hang.RANK.stack on each node)"* ]]
	[[ "$(events "$job" 0)" == *'"event":"hang","gen":0,"rank":3'* ]]
	py_frames_readable || return 0
	[[ "$output" == *"procmgr: stacks at the hang of generation 0: 4 ranks, 2 distinct (kept in state_dir/$job/0.hang.RANK.stack on each node)"* ]]
	[[ "$output" == *"procmgr:   ranks 0-2 in work"* ]]
	[[ "$output" == *"procmgr:   rank 3 in spin"* ]]
	[[ "$output" == *"procmgr: rank 3 (hung first) was in spin:"* ]]
	[[ "$output" == *'File "'"$W"'/stuck.py", line 18, in spin'* ]]
	# Taken before the stop: the stacks of the others are in work(), not
	# in a signal handler or gone.
	grep -q 'in work' "$STATE/$job/0.hang.0.stack"
	grep -q 'in spin' "$STATE/$job/0.hang.3.stack"
	run events "$job" 0
	[[ "$output" == *'"event":"hang_stacks","gen":0,"rank":3,"top":"spin","ranks":4,"groups":[{"ranks":"0-2","top":"work"},{"ranks":"3","top":"spin"}]'* ]]
	[[ "$output" == *'"event":"hang","gen":0,"rank":3'* ]]
}

@test "procmgr status and help: bad input says what is allowed" {
	run "$PROCMGR" status 12x
	[ "$status" -eq 1 ]
	[[ "$output" == *"bad step '12x' (allowed: JOBID or JOBID.STEP, such as 12 or 12.1)"* ]]
	run "$PROCMGR" stacks
	[ "$status" -eq 2 ]
	[[ "$output" == *"JOBID[.STEP] is needed"* ]]
	run "$PROCMGR" help status
	[ "$status" -eq 0 ]
	[[ "$output" == "usage: procmgr status"* ]]
	run "$PROCMGR" status 999999
	[ "$status" -eq 1 ]
	[[ "$output" == *"no running step 999999.0"* ]]
}
