# Shared by the .bats files: the testbed is up (tests/integration/run) and
# SLURM_CONF points to it.
top=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
WORKER=$top/tests/integration/worker.sh
STATE=$PM_TESTBED_DIR/state
# The testbed's node names: ${PM_NODE}1 ... (tests/cluster/testbed).
PM_NODE=${PM_TESTBED_PREFIX:-pmnode}
# This build's processes only: another testbed may run beside ours. With
# PM_RUNTIME (an installed package), procmgr-rank sits beside it.
RT_DIR=$PM_BUILD_DIR
[ -z "${PM_RUNTIME:-}" ] || RT_DIR=$(dirname "$PM_RUNTIME")
OURS="^$RT_DIR/(procmgrd|procmgr-rank)"
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
		echo "left behind:"; pgrep -a -f "$OURS" || true
		find "$STATE" -name '*.run' -o -name sock || true
		return 1
	}
	rm -rf "$W"
}

no_leftovers() {
	! pgrep -f "$OURS" >/dev/null &&
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

as_user() { runuser -u nobody -- "$@"; }

# Lines of the worker log matching all given words.
count() { local pat=$1; grep -c -- "$pat" "$PM_LOG" || true; }

last_job() { ls -1t "$STATE" | head -n 1; }
events() { cat "$STATE/$1/$2.events.jsonl"; }

# At least N ranks have logged their start.
started() { [ "$(count start)" -ge "$1" ]; }
