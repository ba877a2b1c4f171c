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

# metrics_dir below $W, which every user may write, is refused (a directory
# above it must be root's alone): the tests' own, root's, 0755.
rootdir() {
	M=$(mktemp -d /tmp/pm-it-m.XXXXXX)
	chmod 0755 "$M"
}

teardown() {
	[ -z "${M:-}" ] || rm -rf "$M"
	[ -f "$W/plugstack.orig" ] && cp "$W/plugstack.orig" "$PM_TESTBED_DIR/plugstack.conf"
	if [ -f "$W/exporter.pid" ]; then
		kill "$(cat "$W/exporter.pid")" 2>/dev/null || true
		wait "$(cat "$W/exporter.pid")" 2>/dev/null || true
	fi
	pm_teardown
}

@test "node_exporter serves a running step's restarts, failures and restart latency; the final counters stay for the scrapes, then a later step removes them" {
	# root's alone: the plugin creates each step's file for its user.
	rootdir
	mkdir -m 0755 "$M/metrics"
	site "metrics_dir=$M/metrics"
	exporter "$M/metrics"
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
	[ "$(stat -c %U:%a "$M/metrics/procmgr-$job.0.prom")" = nobody:644 ]
	[ "$(ls -A "$M/metrics")" = "procmgr-$job.0.prom" ]
	# No other user creates a file there (issue 20: forged series).
	! runuser -u daemon -- touch "$M/metrics/procmgr-$((job + 1)).0.prom"
	touch "$W/go"
	wait "$srun_pid"
	cat "$W/srun.out"
	# The step's last word stays for the next scrapes.
	grep -qx "procmgr_step_running{$id} 0" <<<"$(scrape)"
	grep -qx "procmgr_restarts_total{job=\"$job\",reason=\"exit\",step=\"0\"} 1" <<<"$(scrape)"
	# Once older than a scrape interval (60 s), the next step's end
	# removes it and keeps its own.
	touch -d '-61 seconds' "$M/metrics/procmgr-$job.0.prom"
	srun -N1 --procmgr true
	[ ! -e "$M/metrics/procmgr-$job.0.prom" ]
	[ "$(ls -A "$M/metrics")" = "procmgr-$((job + 1)).0.prom" ]
	grep -q "^procmgr_step_running{.*} 0$" "$M/metrics/procmgr-$((job + 1)).0.prom"
}

@test "a metrics_dir other users may write (1777) is not used: said in slurmd's log, no file written, a planted file not served as the step's; the step runs on" {
	rootdir
	mkdir -m 1777 "$M/metrics"
	site "metrics_dir=$M/metrics"
	# Another user plants the next job's file (the forgery of issue 20).
	job=$(scontrol show config | awk '/^NEXT_JOB_ID/ {print $3}')
	runuser -u daemon -- sh -c "echo 'procmgr_restarts_total{job=\"$job\",step=\"0\",reason=\"exit\"} 999' >$M/metrics/procmgr-$job.0.prom"
	run as_user srun -N2 -n2 --procmgr-restart=on-failure:1 bash -c '[ "$RANK$PROCMGR_RESTART_COUNT" = 10 ] && exit 1; exit 0'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(last_job)" = "$job" ]
	grep -q "metrics_dir: $M/metrics may be written by other users (owner uid 0, mode 1777): it must be a directory of uid 0 that only its owner may write" \
		"$PM_TESTBED_DIR/log/slurmd-${PM_TESTBED_PREFIX:-pmnode}1.log"
	# procmgrd wrote nothing into the daemon's file, and made no other.
	[ "$(cat "$M/metrics/procmgr-$job.0.prom")" = "procmgr_restarts_total{job=\"$job\",step=\"0\",reason=\"exit\"} 999" ]
	[ "$(ls -A "$M/metrics")" = "procmgr-$job.0.prom" ]
}

# Issue 32 item 2: check-config had the rule backwards (it refused 0755 and
# passed 1777, which the plugin refuses). One rule, the plugin's
# (io/safefile.h's pm_privdir_open/find), over the class of directories:
# check-config's verdict and words are the plugin's at a step.
@test "check-config and the plugin judge metrics_dir alike: root's 0755 (or missing, made) used; 1777, 0775, 0777, another user's, a link, a user's link or a writable or user's directory above it refused by both, in the same words" {
	rootdir
	site "metrics_dir=$M/p/metrics"
	local c want cc_status cc_out marks said job n=0
	for c in ok:used missing:used 1777:refused 0775:refused 0777:refused nobody:refused \
		link:refused parentlink:refused parent0777:refused parentnobody:refused; do
		want=${c#*:} c=${c%:*}
		rm -rf "$M/p" "$M/real"
		mkdir -m 0755 "$M/p" "$M/real"
		case $c in
		ok) mkdir -m 0755 "$M/p/metrics" ;;
		missing) ;;
		1777 | 0775 | 0777) mkdir "$M/p/metrics" && chmod "$c" "$M/p/metrics" ;;
		nobody) mkdir -m 0755 "$M/p/metrics" && chown nobody "$M/p/metrics" ;;
		link) mkdir -m 0755 "$M/real/metrics" && ln -s "$M/real/metrics" "$M/p/metrics" ;;
		parentlink)
			# Another user's link above it, to a directory of root's.
			rmdir "$M/p" && mkdir -m 0755 "$M/real/metrics"
			ln -s "$M/real" "$M/p" && chown -h daemon "$M/p" ;;
		parent0777) chmod 0777 "$M/p" && mkdir -m 0755 "$M/p/metrics" ;;
		parentnobody) chown nobody "$M/p" && mkdir -m 0755 "$M/p/metrics" ;;
		esac
		run "$PROCMGR" check-config "$PM_TESTBED_DIR/plugstack.conf"
		cc_status=$status cc_out=$output
		marks=$(for f in "$PM_TESTBED_DIR"/log/slurmd-*.log; do echo "$f $(wc -l <"$f")"; done)
		run as_user srun -N1 --procmgr true
		[ "$status" -eq 0 ] || { echo "$c: the step failed: $output"; return 1; }
		job=$(last_job)
		# The plugin's words in node 0's slurmd log, this step's.
		said=$(while read -r f k; do tail -n +"$((k + 1))" "$f"; done <<<"$marks" |
			sed -n 's/.*metrics_dir: \(.*\); no metrics for this step$/\1/p' | head -n 1)
		echo "# $c: check-config $cc_status; plugin: ${said:-used}" >&3
		if [ "$want" = used ]; then
			[ "$cc_status" -eq 0 ] || { echo "$c: check-config: $cc_out"; return 1; }
			[ -z "$said" ] || { echo "$c: the plugin said: $said"; return 1; }
			[ -f "$M/p/metrics/procmgr-$job.0.prom" ] || { echo "$c: no file"; return 1; }
		else
			[ "$cc_status" -eq 1 ] || { echo "$c: check-config: $cc_out"; return 1; }
			[ -n "$said" ] || { echo "$c: the plugin said nothing"; return 1; }
			[[ "$cc_out" == *": metrics_dir: $said: no step's metrics would be written on this node"* ]] ||
				{ echo "$c: check-config: $cc_out; the plugin: $said"; return 1; }
			[ ! -e "$M/p/metrics/procmgr-$job.0.prom" ]
			[ ! -e "$M/real/metrics/procmgr-$job.0.prom" ]
		fi
		n=$((n + 1))
	done
	[ "$n" -eq 10 ]
}
