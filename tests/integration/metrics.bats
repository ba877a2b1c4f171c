#!/usr/bin/env bats
# The site's metrics: node 0's procmgrd writes them into metrics_dir, and
# Debian's node_exporter (started here on a loopback port) serves them.
load helpers

site() {
	cp "$PM_TESTBED_DIR/plugstack.conf" "$W/plugstack.orig"
	sed -i "s|\$| $*|" "$PM_TESTBED_DIR/plugstack.conf"
}

# node_exporter with the textfile collector only, on a free port.
exporter() {
	port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	prometheus-node-exporter --collector.disable-defaults --collector.textfile \
		--collector.textfile.directory="$1" --web.listen-address="127.0.0.1:$port" \
		>"$W/exporter.log" 2>&1 &
	echo $! >"$W/exporter.pid"
	wait_until 20 curl -sf -o /dev/null "http://127.0.0.1:$port/metrics"
}

scrape() { curl -sf "http://127.0.0.1:$port/metrics"; }

# Ask until the scrape has a line matching the pattern (no event to await
# outside the exporter).
served() { scrape | grep -q -- "$1"; }

teardown() {
	[ -f "$W/plugstack.orig" ] && cp "$W/plugstack.orig" "$PM_TESTBED_DIR/plugstack.conf"
	if [ -f "$W/exporter.pid" ]; then
		kill "$(cat "$W/exporter.pid")" 2>/dev/null || true
		wait "$(cat "$W/exporter.pid")" 2>/dev/null || true
	fi
	pm_teardown
}

@test "node_exporter serves a running step's restarts, failures and restart latency; the file goes with the step" {
	mkdir -m 1777 "$W/metrics"
	site "metrics_dir=$W/metrics"
	exporter "$W/metrics"
	# Rank 1 fails once; generation 1 then works until the test says go,
	# its first heartbeat 1 s after its start: training again.
	as_user srun -N2 -n4 --procmgr-restart=on-failure:2 --procmgr-hang-timeout=30 bash -c '
		if [ "$RANK$PROCMGR_RESTART_COUNT" = 10 ]; then exit 5; fi
		[ "$PROCMGR_RESTART_COUNT" = 1 ] && sleep 1
		for _ in $(seq 600); do
			touch "$PROCMGR_HEARTBEAT"
			[ -e "'"$W"'/go" ] && exit 0
			sleep 0.1
		done; exit 9' \
		>"$W/srun.out" 2>&1 &
	srun_pid=$!
	job=
	wait_until 30 served 'procmgr_last_recovery_seconds{job="[0-9]*",step="0"}' ||
		{ scrape; cat "$W/srun.out"; return 1; }
	out=$(scrape)
	echo "$out" | grep procmgr_
	job=$(echo "$out" | sed -n 's/^procmgr_step_running{job="\([0-9]*\)".*/\1/p')
	id="job=\"$job\",step=\"0\""
	# (node_exporter sorts the labels by name.)
	grep -qx "procmgr_step_running{$id} 1" <<<"$out"
	grep -qx "procmgr_step_generation{$id} 1" <<<"$out"
	grep -qx "procmgr_step_ranks{$id} 4" <<<"$out"
	grep -qx "procmgr_step_nodes{$id} 2" <<<"$out"
	grep -qx "procmgr_restarts_total{job=\"$job\",reason=\"exit\",step=\"0\"} 1" <<<"$out"
	grep -qx "procmgr_restarts_total{job=\"$job\",reason=\"hang\",step=\"0\"} 0" <<<"$out"
	grep -qx "procmgr_failures_total{job=\"$job\",reason=\"exit\",step=\"0\"} 1" <<<"$out"
	grep -qx "procmgr_hangs_total{$id} 0" <<<"$out"
	grep -qx "procmgr_nodes_lost_total{$id} 0" <<<"$out"
	# node_exporter writes its own float form: 0.000 comes out as 0.
	grep -qx "procmgr_last_restart_seconds{$id} [0-9.e+-]*" <<<"$out"
	grep -qx "procmgr_last_recovery_seconds{$id} [0-9.e+-]*" <<<"$out"
	# The recovery is to the first heartbeat, procmgr's part to every rank
	# running: the program's 1 s lies between them.
	rec=$(sed -n "s/^procmgr_last_recovery_seconds{$id} //p" <<<"$out")
	proc=$(sed -n "s/^procmgr_last_restart_process_seconds{$id} //p" <<<"$out")
	echo "recovery $rec s, process $proc s"
	awk -v r="$rec" -v p="$proc" 'BEGIN { exit !(p != "" && r >= p + 1.0) }'
	grep -q '^# TYPE procmgr_restarts_total counter' <<<"$out"
	# node_exporter read every file without an error.
	grep -qx 'node_textfile_scrape_error 0' <<<"$out"
	# Written by the job's user, in one piece (no temporary left).
	[ "$(stat -c %U "$W/metrics/procmgr-$job.0.prom")" = nobody ]
	[ "$(ls -A "$W/metrics")" = "procmgr-$job.0.prom" ]
	touch "$W/go"
	wait "$srun_pid"
	cat "$W/srun.out"
	[ ! -e "$W/metrics/procmgr-$job.0.prom" ]
	! scrape | grep -q "procmgr_step_running{$id}"
}

@test "a metrics_dir the user cannot write is said once in procmgrd's log; the step runs on" {
	mkdir -m 0755 "$W/metrics"
	site "metrics_dir=$W/metrics"
	run as_user srun -N2 -n2 --procmgr-restart=on-failure:1 bash -c '[ "$RANK$PROCMGR_RESTART_COUNT" = 10 ] && exit 1; exit 0'
	echo "$output"
	[ "$status" -eq 0 ]
	job=$(last_job)
	cat "$STATE/$job"/0.0.log
	[ "$(grep -c "metrics_dir $W/metrics: cannot write the step's metrics: Permission denied" "$STATE/$job/0.0.log")" -eq 1 ]
	[ -z "$(ls -A "$W/metrics")" ]
}
