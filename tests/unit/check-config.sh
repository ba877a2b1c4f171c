#!/bin/sh
# procmgr check-config: the plugin's own parser judges procmgr's line, read
# as Slurm reads plugstack.conf (includes, comments, other plugins' lines).
b=${top_builddir:-.}
pm=$b/procmgr
so=$b/.libs/procmgr.so
rt=$b/procmgrd
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
fail=0
# expect RC LABEL [WORD...]: the last run's exit status and words of its stderr.
expect() {
	rc=$1 label=$2; shift 2
	if [ "$got" != "$rc" ]; then
		echo "FAIL $label: exit $got, expected $rc"; cat "$t/err"; fail=1; return
	fi
	for w; do
		grep -qF -- "$w" "$t/err" || { echo "FAIL $label: no '$w' in:"; cat "$t/err"; fail=1; return; }
	done
	echo "ok   $label"
}
run() { "$pm" check-config "$@" >"$t/out" 2>"$t/err"; got=$?; }

# No cluster here: scontrol cannot ask a slurmctld, so check-config reads
# $SLURM_CONF as written (MpiParams, SlurmdUser) and the installed Slurm's
# version. state_dir may be missing where its parent exists (the plugin
# makes it).
echo "MpiParams=ports=20000-20999" >"$t/cluster.conf"
export SLURM_CONF=$t/cluster.conf
# Every directory above state_dir must be root's (the plugin's rule): $t is
# the user's unless root runs this.
sd=$t/state
[ "$(id -u)" = 0 ] || sd=/var/lib/procmgr-check-config-test-none
ok="ports=30000-30999 state_dir=$sd"

# A good line, through an include, beside another plugin's line whose
# arguments are not procmgr's business.
mkdir "$t/conf.d"
echo "required $so runtime=$rt fanout=8 drain=no state_dir=$sd # comment" >"$t/conf.d/procmgr.conf"
printf 'optional /other/x.so colour=blue\ninclude conf.d/*.conf\n' >"$t/plugstack.conf"
run "$t/plugstack.conf"; expect 0 "good line through an include"
grep -qx ok "$t/out" || { echo "FAIL good line: no 'ok' line"; fail=1; }

# The same line on standard input.
"$pm" check-config - <"$t/conf.d/procmgr.conf" >"$t/out" 2>"$t/err"; got=$?
expect 0 "good line on stdin"

# Default file: slurm.conf's PlugStackConfig.
printf 'PlugStackConfig=%s\nMpiParams=ports=20000-20999\n' "$t/plugstack.conf" >"$t/slurm.conf"
SLURM_CONF=$t/slurm.conf "$pm" check-config >"$t/out" 2>"$t/err"; got=$?
expect 0 "default: PlugStackConfig of \$SLURM_CONF"

# An unknown key: named with its file and line, and the keys allowed.
echo "required $so runtime=$rt colour=blue" >"$t/conf.d/procmgr.conf"
run "$t/plugstack.conf"; expect 1 "unknown key" "$t/conf.d/procmgr.conf:1:" "'colour'" "keys: runtime"

# A bad value: what is allowed.
echo "required $so runtime=$rt fanout=1" >"$t/bad"
run "$t/bad"; expect 1 "bad value" "'fanout'" "expected a whole number"

# The site cap the plugin enforces across keys.
echo "required $so runtime=$rt max_restarts=2 default_restart=always:5" >"$t/bad"
run "$t/bad"; expect 1 "default above the cap" "exceeds max_restarts"

# Files the line names.
echo "required $t/gone/procmgr.so runtime=$t/procmgrd" >"$t/bad"
run "$t/bad"; expect 1 "missing files" "$t/gone/procmgr.so" "runtime $t/procmgrd" "procmgr-rank"

# Lines Slurm would refuse, no procmgr line, two procmgr lines.
echo "requird $so" >"$t/bad"
run "$t/bad"; expect 1 "not required/optional" "'requird'"
echo "optional /other/x.so" >"$t/bad"
run "$t/bad"; expect 1 "no procmgr line" "no procmgr.so line"
printf 'required %s runtime=%s\nrequired %s runtime=%s\n' "$so" "$rt" "$so" "$rt" >"$t/bad"
run "$t/bad"; expect 1 "two procmgr lines" ":2: a second"
run "$t/nofile"; expect 1 "unreadable file" "$t/nofile" "No such file"
run -x; expect 2 "usage error"

# The cluster: the plugin's Slurm release against the running one's. A
# plugin of another release (a real ELF object with only plugin_version,
# as SPANK_PLUGIN defines it): 21.08, which no supported Slurm is.
if command -v cc >/dev/null; then
	echo 'const unsigned int plugin_version = 0x150800;' >"$t/old.c"
	mkdir "$t/lib" && cc -shared -fPIC -o "$t/lib/procmgr.so" "$t/old.c"
	echo "required $t/lib/procmgr.so runtime=$rt $ok" >"$t/bad"
	run "$t/bad"; expect 1 "plugin of another Slurm release" "is built for 21.08" "runs Slurm" "rebuild"
	echo 'const unsigned int other = 1;' >"$t/none.c"
	cc -shared -fPIC -o "$t/lib/procmgr.so" "$t/none.c"
	run "$t/bad"; expect 1 "not a Slurm plugin" "no plugin_version"
fi
echo "required $so runtime=$rt $ok" >"$t/good"
run "$t/good"; expect 0 "this build's plugin and Slurm"
grep -q "the plugin is built for Slurm [0-9]*\.[0-9]*; the installed Slurm" "$t/out" ||
	{ echo "FAIL no release line in:"; cat "$t/out"; fail=1; }

# Ports: MpiParams' ports= or the line's own ports=, else every step fails.
echo "MpiParams=other" >"$t/cluster.conf"
echo "required $so runtime=$rt state_dir=$sd" >"$t/bad"
run "$t/bad"; expect 1 "no port range" "no port range" "MpiParams" "ports=LO-HI"
run "$t/good"; expect 0 "the line's own ports="
echo "MpiParams=ports=20000-20999" >"$t/cluster.conf"

# state_dir and metrics_dir: the plugin's rule (io/safefile.h), said in
# the plugin's words: root's, not writable by others, and so is every
# directory above it; missing only where the plugin can make it. The
# class, run against the plugin's own check, is in metrics.bats. As root:
# $t, above them, is then root's.
if [ "$(id -u)" = 0 ]; then
mkdir -m 0777 "$t/open"
echo "required $so runtime=$rt ports=30000-30999 state_dir=$t/open" >"$t/bad"
run "$t/bad"; expect 1 "state_dir writable by all" "state_dir: $t/open may be written by other users" "mode 0777" "every step would fail"
echo "required $so runtime=$rt ports=30000-30999 state_dir=$t/no/state" >"$t/bad"
run "$t/bad"; expect 1 "state_dir and its parent missing" "state_dir: $t/no/state: $t/no above it does not exist"
echo "required $so runtime=$rt ports=30000-30999 state_dir=$t/open/state" >"$t/bad"
run "$t/bad"; expect 1 "state_dir below a directory all may write" "$t/open above it may be written by other users"
	mkdir -m 0755 "$t/users" && chown nobody "$t/users"
	echo "required $so runtime=$rt ports=30000-30999 state_dir=$t/users" >"$t/bad"
	run "$t/bad"; expect 1 "state_dir not root's" "state_dir: $t/users belongs to another user" "owner uid $(id -u nobody)"
	ln -s "$t" "$t/ulink" && chown -h nobody "$t/ulink"
	echo "required $so runtime=$rt ports=30000-30999 state_dir=$t/ulink/state" >"$t/bad"
	run "$t/bad"; expect 1 "state_dir below another user's link" "$t/ulink above it is a link of another user's"
	# metrics_dir: root's 0755, like state_dir; 1777 refused (issue 32).
	mkdir -m 0755 "$t/m755"; mkdir "$t/m1777"; chmod 1777 "$t/m1777"
	echo "required $so runtime=$rt $ok metrics_dir=$t/m755" >"$t/bad"
	run "$t/bad"; expect 0 "metrics_dir mode 0755"
	echo "required $so runtime=$rt $ok metrics_dir=$t/m1777" >"$t/bad"
	run "$t/bad"; expect 1 "metrics_dir mode 1777" "metrics_dir: $t/m1777 may be written by other users" "mode 1777" "chmod go-w" "no step's metrics"
	echo "required $so runtime=$rt $ok metrics_dir=$t/nometrics" >"$t/bad"
	run "$t/bad"; expect 0 "metrics_dir missing (the plugin makes it)"
	[ ! -e "$t/nometrics" ] || { echo "FAIL check-config made $t/nometrics"; fail=1; }
	echo "required $so runtime=$rt $ok metrics_dir=$t/no/metrics" >"$t/bad"
	run "$t/bad"; expect 1 "metrics_dir and its parent missing" "metrics_dir: $t/no/metrics: $t/no above it does not exist"
fi

# The site's health scripts exist and can run.
printf '#!/bin/sh\nexit 0\n' >"$t/noexec.sh"; chmod 0644 "$t/noexec.sh"
echo "required $so runtime=$rt $ok health=script:$t/gone.sh" >"$t/bad"
run "$t/bad"; expect 1 "health script missing" "health script $t/gone.sh does not exist"
echo "required $so runtime=$rt $ok health=script:$t/noexec.sh" >"$t/bad"
run "$t/bad"; expect 1 "health script not executable" "$t/noexec.sh is not executable"
chmod 0755 "$t/noexec.sh"
run "$t/bad"; expect 0 "health script executable"

# drain=yes: only the site's checks drain, and only as root or SlurmUser.
echo "required $so runtime=$rt $ok drain=yes" >"$t/bad"
run "$t/bad"; expect 1 "drain=yes without health=" "drains nothing"
echo "required $so runtime=$rt $ok drain=yes health=script:$t/noexec.sh" >"$t/bad"
run "$t/bad"; expect 0 "drain=yes with a site check, slurmd as root"
printf 'MpiParams=ports=20000-20999\nSlurmUser=slurm\nSlurmdUser=nobody\n' >"$t/cluster.conf"
run "$t/bad"; expect 1 "drain=yes, slurmd neither root nor SlurmUser" "runs as nobody" "refuse"
exit $fail
