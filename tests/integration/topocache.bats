#!/usr/bin/env bats
# The plugin's per-node topology cache (plugin/topocache.c): written by the
# first binding step, as root, in state_dir; loaded by later steps instead
# of discovering the machine again; ignored and rewritten when it is not
# root's alone.
load helpers

CACHE=$PM_TESTBED_DIR/state/topology.$(hostname).xml

# Each rank's CPUs under --procmgr-bind=cpu, one line per rank.
bound() {
	srun -N1 -n2 --cpu-bind=none --procmgr-bind=cpu bash -c \
		'echo "$RANK $(awk "/Cpus_allowed_list/ {print \$2}" /proc/self/status)"' | sort
}

@test "the first binding step writes the topology cache; a step from the cache binds as a live one did" {
	rm -f "$CACHE"
	live=$(bound)
	echo "$live"
	[ "$(wc -l <<<"$live")" -eq 2 ]
	[ -f "$CACHE" ]
	[ "$(stat -c '%u %a' "$CACHE")" = "0 644" ]
	grep -q '<topology' "$CACHE"
	ino=$(stat -c %i "$CACHE")
	cached=$(bound)
	[ "$cached" = "$live" ]
	# Used as it was, not written again.
	[ "$(stat -c %i "$CACHE")" = "$ino" ]
}

@test "a topology cache others could have written is not used: it is written again" {
	bound >/dev/null
	[ -f "$CACHE" ]
	chmod 0666 "$CACHE"
	ino=$(stat -c %i "$CACHE")
	bound >/dev/null
	[ "$(stat -c '%u %a' "$CACHE")" = "0 644" ]
	[ "$(stat -c %i "$CACHE")" != "$ino" ]
}

@test "steps without binding neither read nor write the cache" {
	rm -f "$CACHE"
	run srun -N1 -n1 --procmgr true
	[ "$status" -eq 0 ]
	[ ! -e "$CACHE" ]
}
