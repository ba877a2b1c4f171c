#!/usr/bin/env bats
# The plugin says in each slurmd's log which procmgr it is, the version
# the procmgr command prints, and check-config accepts the testbed's line.
load helpers

@test "each slurmd logged the plugin's version, as procmgr --version prints it" {
	run "$PROCMGR" --version
	[ "$status" -eq 0 ]
	[[ "$output" == "procmgr "* ]]
	want="procmgr: $output loaded"
	n=$(cat "$PM_TESTBED_DIR/nodes")
	for ((i = 1; i <= n; i++)); do
		grep -qF "$want" "$PM_TESTBED_DIR/log/slurmd-${P}$i.log" ||
			{ echo "no '$want' in slurmd-${P}$i.log"; tail -n 5 "$PM_TESTBED_DIR/log/slurmd-${P}$i.log"; false; }
	done
}

@test "procmgr check-config accepts the testbed's plugstack.conf" {
	run "$PROCMGR" check-config "$PM_TESTBED_DIR/plugstack.conf"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *": required "*"procmgr.so"*": ok"* ]]
	# Asked of the running cluster: slurmctld's and every node's release.
	[[ "$output" == *"the plugin is built for Slurm "*"; slurmctld runs "* ]]
	[[ "$output" == *": $(cat "$PM_TESTBED_DIR/nodes") nodes run the plugin's Slurm release"* ]]
}
