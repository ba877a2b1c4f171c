#!/usr/bin/env bats
# Goodput (issue 35): examples/ddp_train.py with a rank crashing at step
# 25 (the disk's checkpoint of step 20: steps 20..24 are computed again);
# the goodput line on srun's stderr at the step's end, and `procmgr
# goodput --json` after the job from the step's event log: one incident
# whose phases sum to its lost seconds. A plain script without heartbeats:
# what cannot be known is said, not zeros.
load helpers

PY=/usr/bin/python3

# The JSON of procmgr goodput, checked by a Python expression over it (g).
gp_check() {
	"$PY" -c 'import json, sys; g = json.load(open(sys.argv[1])); ok = eval(sys.argv[2]);
print(sys.argv[2], "->", ok); sys.exit(0 if ok else 1)' "$W/gp.json" "$1"
}

@test "goodput: a crash in DDP training is on srun's stderr and in procmgr goodput --json, its phases summing to what it lost" {
	"$PY" -c 'import torch' 2>/dev/null ||
		skip "no torch for $PY: apt-get install python3-torch (tests/install-deps)"
	run timeout 180 srun -N2 -n4 --procmgr-restart=on-failure:1 \
		--export=ALL,CRASH_RANK=1,CRASH_STEP=25,CRASH_MARKER="$W/crashed" \
		"$PY" "$top/examples/ddp_train.py" --ckpt-dir "$W/ckpt" --steps 40 --ckpt-every 10 \
		--state-every 0
	echo "$output"
	[ "$status" -eq 0 ]
	[ -e "$W/crashed" ]
	# srun's line at the step's end: a figure, the incident, its phases.
	line=$(grep '^procmgr: goodput ' <<<"$output")
	echo "# $line" >&3
	[[ "$line" =~ ^procmgr:\ goodput\ [0-9.]+%\ \(useful\ [0-9.]+\ s\ of\ [0-9.]+\ s\ wall:\ 40\ steps\ at ]]
	[[ "$line" == *"; 1 incident lost "*": detection "*", stop "*", start "*", re-initialisation "*", recompute "*", slowdown "* ]]
	# After the job, from the log it left on the step's first node.
	job=$(last_job)
	"$PROCMGR" goodput "$job.0" --json >"$W/gp.json"
	cat "$W/gp.json"
	echo "# $(cat "$W/gp.json")" >&3
	gp_check 'g["known"] and g["why_unknown"] is None and g["ended"]'
	gp_check '0 < g["goodput"] <= 1 and abs(g["useful_s"] - g["goodput"] * g["wall_s"]) < 0.01 * g["wall_s"]'
	gp_check 'g["steps"] == 40 and g["steady_step_s"] > 0'
	gp_check 'len(g["incidents"]) == 1 and g["incidents"][0]["cause"] == "crash" and g["incidents"][0]["gen"] == 0'
	gp_check 'abs(sum(g["incidents"][0][k + "_s"] for k in ("detect", "stop", "start", "reinit", "recompute", "slowdown")) - g["incidents"][0]["lost_s"]) < 0.005'
	# Five steps (20..24) computed again, each at least the steady time.
	gp_check 'g["incidents"][0]["recompute_s"] >= 5 * g["steady_step_s"] * 0.999'
	# The program's start after the restart (imports, rendezvous, the checkpoint) is there.
	gp_check 'g["incidents"][0]["reinit_s"] > 0.5'
	# Every second of the wall is somewhere.
	gp_check 'abs(g["useful_s"] + g["startup_s"] + g["end_s"] + g["lost_s"] + g["other_s"] - g["wall_s"]) < 0.01'
	# The same as text, and the timeline draws no mark per heartbeat.
	run "$PROCMGR" goodput "$job"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "goodput "*"%"* ]]
	[[ "${lines[1]}" == "GEN "*"CAUSE"*"LOST"* ]]
	[[ "${lines[2]}" == "0 "*"crash"* ]]
	grep -q '"event":"progress"' "$STATE/$job/0.events.jsonl"
	"$PROCMGR" timeline "$job" --svg "$W/t.svg"
	! grep -q 'progress' "$W/t.svg"
}

@test "goodput: without heartbeats, what cannot be known is said (not zeros)" {
	run timeout 60 srun -N2 -n2 --procmgr-restart=on-failure:1 bash -c '
		if [ "$RANK$PROCMGR_RESTART_COUNT" = 10 ]; then sleep 0.5; exit 3; fi; sleep 1'
	echo "$output"
	[ "$status" -eq 0 ]
	line=$(grep '^procmgr: goodput ' <<<"$output")
	[[ "$line" == "procmgr: goodput unknown ("*" s wall; 1 incident: detection "*", stop "*", start "*" s): no heartbeat with a step"*"procmgr.heartbeat(step)"* ]]
	job=$(last_job)
	"$PROCMGR" goodput "$job.0" --json >"$W/gp.json"
	cat "$W/gp.json"
	gp_check 'not g["known"] and "heartbeat" in g["why_unknown"] and g["goodput"] is None and g["useful_s"] is None'
	gp_check 'g["wall_s"] > 0 and len(g["incidents"]) == 1'
	gp_check 'g["incidents"][0]["start_s"] > 0 and g["incidents"][0]["stop_s"] >= 0 and g["incidents"][0]["detect_s"] == 0'
	gp_check 'all(g["incidents"][0][k] is None for k in ("reinit_s", "recompute_s", "slowdown_s", "lost_s"))'
	# A step without heartbeats and without incidents has nothing to say.
	run timeout 60 srun -N1 -n1 true
	[ "$status" -eq 0 ]
	[[ "$output" != *"goodput"* ]]
	# Bad input: said, with what is allowed.
	run "$PROCMGR" goodput 12x
	[ "$status" -eq 2 ]
	[[ "$output" == *"'12x' is not JOBID or JOBID.STEP"* ]]
}

@test "goodput: procmgr status shows it while the step runs (a shell loop heartbeating its steps)" {
	before=$(last_job)
	timeout 90 srun -N2 -n2 --procmgr bash -c 'for i in $(seq 0 2000); do
		[ "$RANK" != 0 ] || echo "$i" >"$PROCMGR_HEARTBEAT"; sleep 0.05; done' \
		>"$W/out" 2>&1 &
	pid=$!
	has_progress() {
		job=$(last_job)
		[ "$job" != "$before" ] && grep -q '"event":"progress"' "$STATE/$job/0.events.jsonl" 2>/dev/null
	}
	wait_until 60 has_progress
	# Two samples a second apart at least: a step time, so a figure.
	known() { "$PROCMGR" status "$job" --json >"$W/st.json" && grep -q '"goodput":{"known":true' "$W/st.json"; }
	wait_until 30 known
	cat "$W/st.json"
	"$PY" -c 'import json, sys; g = json.load(open(sys.argv[1]))["summary"]["goodput"];
assert not g["ended"] and 0 < g["goodput"] <= 1 and g["steps"] > 0 and g["incidents"] == 0, g' "$W/st.json"
	run "$PROCMGR" status "$job"
	echo "$output"
	[[ "$output" == *$'\n'"goodput "*"% (useful "*" s wall: "*" steps at "* ]]
	"$PROCMGR" stop "$job"
	wait "$pid"
	cat "$W/out"
	grep -q '^procmgr: goodput [0-9.]*% ' "$W/out"
}
