# Shared by the .bats files: the testbed is up (tests/integration/run) and
# SLURM_CONF points to it.
top=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
WORKER=$top/tests/integration/worker.sh
STATE=$PM_TESTBED_DIR/state
# Node I is $P$I (the testbed's names: another testbed beside ours has
# others).
P=$PM_TESTBED_PREFIX
# This testbed's processes only, found through its files: another testbed,
# of this build or another, may run beside ours with the same job ids.
tb() { "$top/tests/cluster/testbed" "$@"; }
# Every procmgrd and procmgr-rank of our steps.
our_procs() { tb procs; }
# procmgrd of node index I (0-based) of step JOB.0.
procmgrd_of() { tb procmgrd "$1" "$2"; }
# Whether process PID has VAR=VALUE in its environment (set at its exec).
env_has() { tr "\\0" "\\n" 2>/dev/null <"/proc/$1/environ" | grep -qxF -- "$2"; }
# The pids running this test's worker (their PM_LOG is ours).
our_workers() {
	local pid
	for pid in $(pgrep -f "$WORKER"); do env_has "$pid" "PM_LOG=$PM_LOG" && echo "$pid"; done
	return 0
}
# The procmgr command under test.
PROCMGR=${PM_CLI:-$top/procmgr}

setup() {
	W=$(mktemp -d /tmp/pm-it.XXXXXX)
	chmod 0777 "$W"
	export PM_LOG=$W/log
	touch "$PM_LOG"
	chmod 0666 "$PM_LOG"
	cd "$W"
}

# Everything procmgr started is gone once a step has ended: slurmstepd
# stops procmgrd after srun returns, so wait for that, with a deadline.
teardown() { pm_teardown; }
pm_teardown() {
	# A failed test may leave its job running: it must not hold the nodes
	# for the next test (what it left is still checked below).
	scancel --quiet -u root 2>/dev/null || true
	scancel --quiet -u nobody 2>/dev/null || true
	wait_until 15 no_leftovers || {
		echo "left behind:"; local p; for p in $(our_procs); do ps -o pid=,args= -p "$p"; done
		find "$STATE" -name '*.run' -o -name sock || true
		return 1
	}
	rm -rf "$W"
}

no_leftovers() {
	[ -z "$(our_procs)" ] &&
		[ -z "$(find "$STATE" \( -name '*.run' -o -name sock -o -name 'heartbeat.*' \) 2>/dev/null)" ]
}

# Ask until true or the deadline: for conditions with no event to await.
wait_until() {
	local deadline=$((SECONDS + $1)); shift
	until "$@"; do
		[ $SECONDS -lt $deadline ] || return 1
		sleep 0.1
	done
}

# A process that runs: kill -0 alone is true of a zombie too (a killed
# slurmd not yet reaped looks alive, and would not be started again).
alive() { local st; st=$(ps -o stat= -p "$1" 2>/dev/null) && [[ $st != Z* ]]; }

# N nodes idle with nothing of a job on them: "completing" is idle to
# sinfo -t idle, and a job still completing holds its nodes from the next.
nodes_idle() {
	[ "$(sinfo -h -N -o '%N %T' | sort -u | awk '$2 == "idle"' | wc -l)" = "$1" ] &&
		[ -z "$(squeue -h -o %i)" ]
}

as_user() { runuser -u nobody -- "$@"; }

# Lines of the worker log matching all given words.
count() { local pat=$1; grep -c -- "$pat" "$PM_LOG" || true; }

last_job() { ls -1t "$STATE" | head -n 1; }
events() { cat "$STATE/$1/$2.events.jsonl"; }

# At least N ranks have logged their start.
started() { [ "$(count start)" -ge "$1" ]; }

# Run CMD for at most SECS; if it is still running SECS-20 s in, the
# stacks of every step of this testbed's running jobs go to stderr first (a
# hang's evidence, before timeout kills it): for long srun runs that a rare
# hang would otherwise leave undiagnosed.
stacks_before_timeout() { # SECS CMD...
	local secs=$1 pid nap j rc=0; shift
	timeout "$secs" "$@" &
	pid=$!
	sleep $((secs - 20)) &
	nap=$!
	wait -n "$pid" "$nap" || true
	if kill -0 "$pid" 2>/dev/null; then
		for j in $(squeue -h -t R -o %i); do
			echo "--- still running after $((secs - 20)) s: procmgr stacks --native $j.0"
			timeout 15 "$PROCMGR" stacks --native "$j.0" 2>&1 | head -n 300
		done >&2
	fi
	kill "$nap" 2>/dev/null || true
	wait "$nap" 2>/dev/null || true
	wait "$pid" || rc=$?
	return $rc
}
