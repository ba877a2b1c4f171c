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

@test "node_exporter serves a running step's restarts, failures and restart latency; the final counters stay for the scrapes, then a later step removes them" {
	# root's alone: the plugin creates each step's file for its user.
	mkdir -m 0755 "$W/metrics"
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
	# Created by root for the job's user, rewritten in place (no temporary).
	[ "$(stat -c %U:%a "$W/metrics/procmgr-$job.0.prom")" = nobody:644 ]
	[ "$(ls -A "$W/metrics")" = "procmgr-$job.0.prom" ]
	# No other user creates a file there (issue 20: forged series).
	! runuser -u daemon -- touch "$W/metrics/procmgr-$((job + 1)).0.prom"
	touch "$W/go"
	wait "$srun_pid"
	cat "$W/srun.out"
	# The step's last word stays for the next scrapes.
	grep -qx "procmgr_step_running{$id} 0" <<<"$(scrape)"
	grep -qx "procmgr_restarts_total{job=\"$job\",reason=\"exit\",step=\"0\"} 1" <<<"$(scrape)"
	# Once older than a scrape interval (60 s), the next step's end
	# removes it and keeps its own.
	touch -d '-61 seconds' "$W/metrics/procmgr-$job.0.prom"
	srun -N1 --procmgr true
	[ ! -e "$W/metrics/procmgr-$job.0.prom" ]
	[ "$(ls -A "$W/metrics")" = "procmgr-$((job + 1)).0.prom" ]
	grep -q "^procmgr_step_running{.*} 0$" "$W/metrics/procmgr-$((job + 1)).0.prom"
}

@test "a metrics_dir other users may write (1777) is not used: said in slurmd's log, no file written, a planted file not served as the step's; the step runs on" {
	mkdir -m 1777 "$W/metrics"
	site "metrics_dir=$W/metrics"
	# Another user plants the next job's file (the forgery of issue 20).
	job=$(scontrol show config | awk '/^NEXT_JOB_ID/ {print $3}')
	runuser -u daemon -- sh -c "echo 'procmgr_restarts_total{job=\"$job\",step=\"0\",reason=\"exit\"} 999' >$W/metrics/procmgr-$job.0.prom"
	run as_user srun -N2 -n2 --procmgr-restart=on-failure:1 bash -c '[ "$RANK$PROCMGR_RESTART_COUNT" = 10 ] && exit 1; exit 0'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(last_job)" = "$job" ]
	grep -q "metrics_dir: $W/metrics may be written by other users (owner uid 0, mode 1777): it must be a directory of uid 0 that only its owner may write" \
		"$PM_TESTBED_DIR/log/slurmd-${PM_TESTBED_PREFIX:-pmnode}1.log"
	# procmgrd wrote nothing into the daemon's file, and made no other.
	[ "$(cat "$W/metrics/procmgr-$job.0.prom")" = "procmgr_restarts_total{job=\"$job\",step=\"0\",reason=\"exit\"} 999" ]
	[ "$(ls -A "$W/metrics")" = "procmgr-$job.0.prom" ]
}
