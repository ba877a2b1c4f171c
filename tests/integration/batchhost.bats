#!/usr/bin/env bats
# The batch host: a batch script's srun runs on the job's first node. When
# that node crashes, srun goes with it (and with srun the ranks' output and
# the step's result); --procmgr-output-dir keeps each rank's output in files,
# the step runs to its end on the nodes left (a spare takes the lost one's
# ranks), and the new root records the result there and ends the job, which
# Slurm would otherwise keep RUNNING for minutes (SlurmdTimeout, here the
# default 300 s) and, with --no-kill, after that too.
# On the run script's 4-node testbed; the crashed node is revived after.
load helpers

# Each rank writes LINES numbered lines on stdout and on stderr, 0.2 s apart.
rank_script() {
	cat >"$W/rank.sh" <<'EOF'
#!/bin/bash
g=${PROCMGR_RESTART_COUNT:-x}
for i in $(seq 1 "${LINES_N:-10}"); do
	echo "out rank=$RANK gen=$g i=$i"
	echo "err rank=$RANK gen=$g i=$i" >&2
	# Generation 0 holds at line 3 until HOLD exists (the test's fault
	# is in): under load the ranks once ran to their end before it.
	if [ "$i" = 3 ] && [ "$g" = 0 ] && [ -n "${HOLD:-}" ]; then
		while [ ! -e "$HOLD" ]; do sleep 0.1; done
	fi
	sleep 0.2
done
[ -z "${FAIL_RANK:-}" ] || [ "$RANK" != "$FAIL_RANK" ] || [ "$g" != 0 ] || exit 7
EOF
	chmod 0755 "$W/rank.sh"
}

# A crash: node I's slurmd, slurmstepd and all below (srun, the batch
# script), at once; found through this testbed's files.
crash() {
	local pids
	pids=$(tb pids "$1" | sort -u)
	echo "$1" >>"$W/crashed"
	kill -9 $pids 2>/dev/null || true # some exit as their parents die
}

batch_host_is() { scontrol show job "$1" 2>/dev/null | grep -q "BatchHost=$2\b"; }
not_running() { [ -z "$(squeue -h -j "$1" -t RUNNING)" ]; }
# Job $1 holds no node but $2 (or none: it is gone).
only_holds() { [ -z "$(squeue -h -j "$1" -o %N 2>/dev/null | grep -vx "$2")" ]; }
all_idle() { nodes_idle 4; }

# The crashed node back for the next test: its slurmd again, resumed.
revive() {
	local i pid
	for i in $(cat "$W/crashed" 2>/dev/null); do
		pid=$(cat "$PM_TESTBED_DIR/slurmd-$P$i.pid" 2>/dev/null) || true
		if [ -z "$pid" ] || ! alive "$pid"; then
			slurmd -N "$P$i" -f "$SLURM_CONF"
		fi
	done
	scontrol update nodename="$P[1-4]" state=resume 2>/dev/null || true
	wait_until 60 all_idle
}

teardown() {
	local i
	scancel --quiet -u root 2>/dev/null || true
	scancel --quiet -u nobody 2>/dev/null || true
	revive
	# A crashed node's run directory went with its disk.
	for i in $(cat "$W/crashed" 2>/dev/null); do rm -rf "$STATE"/*/*.$((i - 1)).run; done
	pm_teardown
}

@test "batchhost: srun refuses a bad --procmgr-output-dir before anything starts" {
	rank_script
	touch "$W/afile"
	mkdir -m 0777 "$W/roots"
	for bad in "logs" "$W/afile" "$W/afile/sub" "$W/roots" "$W/a b"; do
		run as_user timeout 30 srun -N2 -n2 --procmgr-output-dir="$bad" "$W/rank.sh"
		echo "$bad: $output"
		[ "$status" -ne 0 ]
		[[ "$output" == *"--procmgr-output-dir"* ]]
		[[ "$output" != *"out rank="* ]]
	done
	run as_user srun -N1 --procmgr-output-dir=logs true
	[[ "$output" == *"a relative path"*"expected an absolute directory path"* ]]
	run as_user srun -N1 --procmgr-output-dir="$W/afile" true
	[[ "$output" == *"(it must be a directory)"* ]]
	run as_user srun -N1 --procmgr-output-dir="$W/roots" true
	[[ "$output" == *"belongs to uid 0, not to you"* ]]
	# Nothing was made of the refused ones.
	[ ! -e "$W/logs" ] && [ ! -e "$W/a b" ]
}

@test "batchhost: --procmgr-output-dir keeps each rank's stdout and stderr per rank, across generations" {
	rank_script
	# A link planted where rank 3's output would go is not followed.
	mkdir "$W/out" && chown nobody "$W/out"
	as_user ln -s "$W/victim" "$W/out/rank.3.out"
	touch "$W/victim"
	run as_user env LINES_N=3 FAIL_RANK=1 timeout 60 srun -N2 -n4 \
		--procmgr-restart=on-failure:1 --procmgr-output-dir="$W/out" "$W/rank.sh"
	echo "$output"
	ls -la "$W/out"
	[ "$status" -eq 0 ]
	for r in 0 1 2; do
		f=$W/out/rank.$r
		cat "$f.out" "$f.err"
		[ "$(stat -c %U "$f.out")" = nobody ]
		for g in 0 1; do
			grep -q "^procmgr: generation $g of rank $r starts on $P" "$f.out"
			grep -q "^procmgr: generation $g of rank $r starts on $P" "$f.err"
			# Generation 0 is stopped when rank 1 fails: others may
			# not reach their last line; generation 1 runs to its end.
			grep -qx "out rank=$r gen=$g i=$((1 + 2 * g))" "$f.out"
			grep -qx "err rank=$r gen=$g i=$((1 + 2 * g))" "$f.err"
		done
		! grep -q "^err" "$f.out"
		! grep -q "^out" "$f.err"
	done
	# srun had the same lines.
	[[ "$output" == *"out rank=2 gen=1 i=3"* ]]
	[[ "$output" == *"err rank=2 gen=1 i=3"* ]]
	# procmgr's own lines for srun (the restart and why) are in a file too.
	cat "$W"/out/rank.*.err | grep -q "rank 1 on $P.* exited with code 7.*; restarting all 4 ranks"
	[ ! -s "$W/victim" ]
	[[ "$output" == *"rank.3.out"*"symbolic link: refused"* ]]
	grep -qx "err rank=3 gen=1 i=3" "$W/out/rank.3.err"
	# The step's result, beside the ranks' files.
	job=$(last_job)
	cat "$W/out/result.$job.0"
	grep -qx "result=succeeded" "$W/out/result.$job.0"
	grep -qx "restarts=1" "$W/out/result.$job.0"
	grep -q "^srun=not on a node of the step" "$W/out/result.$job.0"
}

@test "batchhost: a failed step's result says so, with the exit code and why" {
	rank_script
	run as_user env LINES_N=1 FAIL_RANK=1 timeout 60 srun -N2 -n2 --procmgr-output-dir="$W/out" \
		"$W/rank.sh"
	echo "$output"
	[ "$status" -eq 7 ]
	job=$(last_job)
	cat "$W/out/result.$job.0"
	grep -qx "result=failed" "$W/out/result.$job.0"
	grep -qx "exit_code=7" "$W/out/result.$job.0"
	grep -q "^message=procmgr: .*rank 1 on $P.* exited with code 7" "$W/out/result.$job.0"
}

@test "batchhost: a crash of the batch host keeps the ranks' output, the step ends, the job ends with its result" {
	rank_script
	cat >"$W/job.sh" <<EOF
#!/bin/bash
srun --no-kill -N4 --ntasks-per-node=1 --procmgr-spares=1 --procmgr-restart=on-failure:3 \
	--procmgr-grace=1 --procmgr-output-dir=$W/out $W/rank.sh
echo "srun returned \$?"
EOF
	chmod 0755 "$W/job.sh"
	job=$(as_user env LINES_N=40 HOLD="$W/crashed" sbatch --parsable --no-kill -N4 \
		-o "$W/slurm.out" "$W/job.sh")
	wait_until 20 batch_host_is "$job" "${P}1"
	# Every rank writes (into its file) before the crash, and holds there.
	for r in 0 1 2; do
		wait_until 60 grep -qs "i=3" "$W/out/rank.$r.out" || { cat "$W/slurm.out"; false; }
	done
	crash 1
	# The job leaves RUNNING: the step ran to its end and the root ended it.
	wait_until 90 not_running "$job" || {
		squeue -j "$job"; cat "$STATE/$job"/0.*.log; false; }
	squeue -h -j "$job" -o "%T %N"
	cat "$STATE/$job"/0.*.log
	# Every rank's lines after the crash (generation 1, on the nodes left;
	# rank 0 on the spare) are in its files, to the last.
	for r in 0 1 2; do
		tail -n 3 "$W/out/rank.$r.out" "$W/out/rank.$r.err"
		grep -qx "out rank=$r gen=1 i=40" "$W/out/rank.$r.out"
		grep -qx "err rank=$r gen=1 i=40" "$W/out/rank.$r.err"
	done
	grep -q "^procmgr: generation 1 of rank 0 starts on ${P}4" "$W/out/rank.0.out"
	# The result, where the user looks, and in the event log.
	cat "$W/out/result.$job.0"
	grep -qx "result=succeeded" "$W/out/result.$job.0"
	grep -qx "srun=lost with node ${P}1: procmgr ended job $job (scancel) once the step was over" \
		"$W/out/result.$job.0"
	grep -qx "root=${P}2" "$W/out/result.$job.0"
	events "$job" 0 | grep -q '"event":"srun_lost".*"node":"'"${P}1"'"'
	events "$job" 0 | grep -q '"event":"job_cancelled".*"scancel":0'
	# The nodes left are the cluster's again; only the dead one is held
	# until Slurm notices it.
	wait_until 30 only_holds "$job" "${P}1" || { squeue -j "$job"; false; }
	# The batch script's line after srun never came: it died with its node.
	! grep -q "srun returned" "$W/slurm.out"
}
