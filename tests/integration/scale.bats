#!/usr/bin/env bats
# A step across 128 nodes: its own testbed of 128 slurmd, beside the 4-node
# one of tests/integration/run (derived from that one's: directory
# $PM_TESTBED_DIR-scale, NET+2, node names ${PM_TESTBED_PREFIX}scI, ports
# chosen free), up for this file only. With a fanout of
# 32 the control tree has two levels below the root.
# Each may be set (PM_SCALE_DIR, _NET, _PREFIX); derived once: bats sources
# this file again for every test, with what the first time exported.
export PM_SCALE_DIR=${PM_SCALE_DIR:-$PM_TESTBED_DIR-scale}
export PM_SCALE_NET=${PM_SCALE_NET:-$((${PM_TESTBED_NET:-10} + 2))}
export PM_SCALE_PREFIX=${PM_SCALE_PREFIX:-${PM_TESTBED_PREFIX:-pmnode}sc}
export PM_TESTBED_DIR=$PM_SCALE_DIR PM_TESTBED_NET=$PM_SCALE_NET PM_TESTBED_PREFIX=$PM_SCALE_PREFIX
load helpers

SCALE_N=128

setup_file() {
	"$top/tests/cluster/testbed" down
	local t0=$SECONDS
	eval "$("$top/tests/cluster/testbed" up $SCALE_N)"
	echo "# testbed up $SCALE_N nodes: $((SECONDS - t0)) s" >&3
}

teardown_file() {
	local t0=$SECONDS
	"$top/tests/cluster/testbed" down
	echo "# testbed down $SCALE_N nodes: $((SECONDS - t0)) s" >&3
	# Nothing of it is left: no daemon of its configuration, no hosts line.
	[ -z "$(pgrep -f "$PM_TESTBED_DIR/slurm.conf")" ]
	! grep -qF "$PM_TESTBED_DIR" /etc/hosts
}

@test "128 nodes: the testbed's nodes are all idle, each with its own address" {
	[ "$(sinfo -h -N -t idle -o %N | sort -u | wc -l)" -eq $SCALE_N ]
	[ "$(getent hosts ${P}128 | awk '{ print $1 }')" = "$("$top/tests/cluster/testbed" addr 128)" ]
	[ "$(grep -o 'Port=[0-9]*' "$PM_TESTBED_DIR/slurm.conf" | sort -u | wc -l)" -eq $((SCALE_N + 1)) ]
}

@test "128 nodes: one rank fails, all 128 restart together and succeed" {
	run timeout 240 srun -N$SCALE_N -n$SCALE_N --procmgr-restart=on-failure:1 --procmgr-verbose \
		--export=ALL,FAIL_RANK=100,FAIL_AFTER_ALL=1 "$WORKER"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(count 'start .*gen=0')" -eq $SCALE_N ]
	[ "$(count 'fail rank=100 gen=0')" -eq 1 ]
	[ "$(count 'start .*gen=1')" -eq $SCALE_N ]
	[ "$(count 'done .*gen=1')" -eq $SCALE_N ]
	# Every node took part in generation 1.
	[ "$(grep 'start .*gen=1' "$PM_LOG" | grep -o 'node=[^ ]*' | sort -u | wc -l)" -eq $SCALE_N ]
	[[ "$output" == *"rank 100 on ${P}101 exited with code 7; restarting all $SCALE_N ranks"* ]]
	run events "$(last_job)" 0
	echo "$output"
	[[ "$output" == *'"event":"start","gen":1,"restart":1'* ]]
	[[ "$output" == *'"event":"finish","gen":1'* ]]
	# The restart's latency, failure seen to generation 1 started.
	echo "# restart on $SCALE_N nodes: $(sed -n 's/.*"event":"start","gen":1,.*"since_failure_ms":\([0-9]*\).*/\1/p' <<<"$output") ms from failure to start" >&3
}
