#!/usr/bin/env bats
# Node health checks before launch, before a restart, while
# running; drain by site policy.
load helpers

# Site arguments for this test only: slurmstepd reads plugstack.conf per step.
site() {
	cp "$PM_TESTBED_DIR/plugstack.conf" "$W/plugstack.orig"
	sed -i "s|\$| $*|" "$PM_TESTBED_DIR/plugstack.conf"
}

teardown_site() {
	[ -f "$W/plugstack.orig" ] && cp "$W/plugstack.orig" "$PM_TESTBED_DIR/plugstack.conf"
	scontrol update nodename=${P}2 state=resume 2>/dev/null || true
}

teardown() {
	[ ! -f "$W/stopped-slurmd" ] || kill -CONT "$(cat "$W/stopped-slurmd")" 2>/dev/null || true
	teardown_site
	scancel --quiet -u root 2>/dev/null || true
	wait_until 15 no_leftovers
	rm -rf "$W"
}

# A check script in the style of NHC: exit 0 healthy, else the first line
# is the reason. It fails on the nodes named in $W/bad (one per line).
check_script() {
	cat >"$W/check.sh" <<-EOS
	#!/bin/bash
	if grep -qx "\$SLURMD_NODENAME" "$W/bad" 2>/dev/null; then
		echo "fan 3 failed on \$SLURMD_NODENAME"
		echo "second line is not the reason"
		exit 1
	fi
	exit 0
	EOS
	chmod 0755 "$W/check.sh"
}

@test "a check failing on one node stops the step before any rank starts" {
	check_script
	echo ${P}2 >"$W/bad"
	run step_healthy --procmgr-health=script:$W/check.sh
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"node ${P}2 failed a health check before launch: script:$W/check.sh: fan 3 failed on ${P}2; the step does not start"* ]]
	[ "$(count start)" -eq 0 ]
	run events "$(last_job)" 0
	[[ "$output" == *'"event":"health_failed","gen":0,"node":"'"${P}"'2"'*'"when":"before launch"'* ]]
	[[ "$output" != *'"event":"launch"'* ]]
}

step_healthy() { srun -N4 -n8 "$@" "$WORKER"; }

@test "a node that joins after the step ended before launch is told at once" {
	# node 2 fails its check at once and the root ends the step; node 4's
	# check takes 2 s, so its procmgrd reaches the root only after that.
	cat >"$W/check.sh" <<-EOS
	#!/bin/bash
	case "\$SLURMD_NODENAME" in
	${P}2) echo "fan 3 failed on ${P}2"; exit 1 ;;
	${P}4) sleep 2 ;;
	esac
	exit 0
	EOS
	chmod 0755 "$W/check.sh"
	# Bounded below procmgrd's connect deadline (connect_timeout): waiting for it fails.
	run timeout 20 srun -N4 -n8 --procmgr-health=script:$W/check.sh "$WORKER"
	echo "$output"
	[ "$status" -ne 124 ]
	[ "$status" -ne 0 ]
	[[ "$output" == *"node ${P}2 failed a health check before launch"* ]]
	[[ "$output" != *"cannot reach node"* ]]
	[ "$(count start)" -eq 0 ]
}

# One task per node: slurmstepd of the failing node ends its procmgrd as
# soon as the plugin hears of the failure. If the node's parent was not
# listening yet (here: the first node's slurmd stopped until the check
# ran), that procmgrd never joined: the node must tell its parent before
# it goes (its ready line waits for that), and a child that never joins is
# lost at the join deadline; today's code waited for it for ever. The run
# is bounded below the join deadline (30 + 5 s): the node's own word must
# end it.
fails_before_parent_listens() {
	local p=${PM_TESTBED_PREFIX:-pmnode} sd t0
	cat >"$W/check.sh" <<-EOS
	#!/bin/bash
	touch "$W/checked-\$SLURMD_NODENAME"
	[ "\$SLURMD_NODENAME" = ${p}2 ] && { echo "fan 3 failed on \$SLURMD_NODENAME"; exit 1; }
	exit 0
	EOS
	chmod 0755 "$W/check.sh"
	[ -z "$1" ] || site "drain=no health=script:$W/check.sh"
	sd=$(cat "$PM_TESTBED_DIR/slurmd-${p}1.pid")
	echo "$sd" >"$W/stopped-slurmd"
	kill -STOP "$sd"
	t0=$SECONDS
	timeout 30 srun -N4 --ntasks-per-node=1 ${1:---procmgr-health=script:$W/check.sh} "$WORKER" \
		>"$W/out" 2>&1 &
	pid=$!
	wait_until 20 test -e "$W/checked-${p}2" || true
	kill -CONT "$sd"
	wait "$pid" && st=0 || st=$?
	cat "$W/out"
	echo "status $st after $((SECONDS - t0)) s"
	[ "$st" -ne 124 ]
	[ "$st" -ne 0 ]
	grep -q "^procmgr: node ${p}2 failed a health check before launch: .*fan 3 failed on ${p}2; ending the step" "$W/out"
	[ "$(count start)" -eq 0 ]
}

@test "one task per node: a user's check failing before the parent listens ends the step, never a hang" {
	fails_before_parent_listens ""
}

@test "one task per node: a site check failing before the parent listens ends the step, never a hang" {
	fails_before_parent_listens --procmgr
}

@test "passing checks let the step run; the ranks start after every node passed" {
	check_script
	run step_healthy --procmgr-health=script:$W/check.sh,mem:1M,disk:/tmp:1K
	[ "$status" -eq 0 ]
	[ "$(count done)" -eq 8 ]
	run events "$(last_job)" 0
	[[ "$output" == *'"event":"launch","gen":0,"nodes":4,"ranks":8'* ]]
}

@test "a site check that fails drains the node with the reason (drain=yes)" {
	check_script
	echo ${P}2 >"$W/bad"
	site "drain=yes health=script:$W/check.sh"
	run step_healthy --procmgr
	[ "$status" -ne 0 ]
	wait_until 15 bash -c "scontrol show node ${P}2 | grep -q 'Reason=procmgr: check.sh: fan 3 failed on ${P}2 '"
	scontrol show node ${P}2 | grep -q "State=.*DRAIN"
	# The other nodes are not drained.
	! scontrol show node ${P}1 | grep -q DRAIN
}

@test "a site script with a long path drains with a short reason; the failure is told once per node" {
	local d="$W/a-rather-long-directory-name-for-site-checks/and-one-more-level-below-it"
	mkdir -p "$d"
	cat >"$d/fans.sh" <<-EOS
	#!/bin/bash
	[ "\$SLURMD_NODENAME" = ${P}2 ] && { echo "fan 3 failed"; exit 1; }
	exit 0
	EOS
	chmod 0755 "$d/fans.sh"
	[ "${#d}" -gt 64 ]
	site "drain=yes health=script:$d/fans.sh"
	run step_healthy --procmgr
	echo "$output"
	[ "$status" -ne 0 ]
	# The whole path is in the message: the check is the site's.
	[ "$(grep -c "^slurmstepd-${P}2: error: procmgr: node ${P}2 failed a health check before launch: script:$d/fans.sh: fan 3 failed" <<<"$output")" -eq 1 ]
	job=$(last_job)
	[ "$(grep -c "\[$job.0\] error: procmgr: node ${P}2 failed a health check" \
		"$PM_TESTBED_DIR/log/slurmd-${P}2.log")" -eq 1 ]
	# sinfo -R shows the reason's first 40 characters or so: they say it all.
	wait_until 15 bash -c "sinfo -R -h -n ${P}2 -o '%E' | grep -qx 'procmgr: fans.sh: fan 3 failed'"
}

@test "a user's own failing check does not drain the node, even with drain=yes" {
	check_script
	echo ${P}2 >"$W/bad"
	site "drain=yes"
	run step_healthy --procmgr-health=script:$W/check.sh
	[ "$status" -ne 0 ]
	! scontrol show node ${P}2 | grep -q DRAIN
}

@test "a check failing while running restarts the step; failing again before the restart ends it" {
	check_script
	# The node goes bad once every rank is running.
	cat >"$W/go-bad.sh" <<-EOS
	#!/bin/bash
	[ "\$RANK" = 0 ] && [ "\$PROCMGR_RESTART_COUNT" = 0 ] && echo ${P}3 >"$W/bad"
	sleep 30
	EOS
	chmod 0755 "$W/go-bad.sh"
	run srun -N4 -n8 --procmgr-restart=on-failure:2 --procmgr-health=script:$W/check.sh \
		--procmgr-health-interval=1 "$W/go-bad.sh"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"node ${P}3 failed a health check before a restart: script:$W/check.sh: fan 3 failed on ${P}3; ending the step"* ]]
	run events "$(last_job)" 0
	[[ "$output" == *'"node":"'"${P}"'3"'*'"when":"while running"'* ]]
	[[ "$output" == *'"node":"'"${P}"'3"'*'"when":"before a restart"'* ]]
}

@test "a check script that hangs is killed at the site's timeout and reported so" {
	cat >"$W/hang.sh" <<-EOS
	#!/bin/bash
	echo "checking the filesystem"
	sleep 300
	EOS
	chmod 0755 "$W/hang.sh"
	site "health_timeout=1"
	SECONDS=0
	run step_healthy --procmgr-health=script:$W/hang.sh
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"timed out after 1"* ]]
	# Killed, not waited for: nothing of it is left.
	! pgrep -f "$W/hang.sh"
	[ "$SECONDS" -lt 30 ]
}
