#!/bin/sh
# procmgr check-config against a running Slurm (check_cluster.c): what
# slurmctld says (scontrol show config), each node's release (scontrol show
# node), and the installed Slurm's when slurmctld does not answer. Slurm's
# commands are faked on PATH: each prints the file the test wrote for it.
b=${top_builddir:-.}
pm=$(cd "$b" && pwd)/procmgr
so=$(cd "$b" && pwd)/.libs/procmgr.so
rt=$(cd "$b" && pwd)/procmgrd
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
fail=0
mkdir "$t/bin"
# scontrol ARGS: $t/ARGS (spaces as _), its exit status in $t/ARGS.rc.
cat >"$t/bin/scontrol" <<EOF
#!/bin/sh
k=\$(echo "\$*" | tr ' ' _)
[ -e "$t/\$k" ] || exit 1
cat "$t/\$k"; exit \$(cat "$t/\$k.rc" 2>/dev/null || echo 0)
EOF
cat >"$t/bin/slurmd" <<EOF
#!/bin/sh
[ -e "$t/slurmd" ] && cat "$t/slurmd"
EOF
chmod +x "$t/bin/scontrol" "$t/bin/slurmd"
PATH=$t/bin:$PATH
export PATH
export SLURM_CONF=$t/none.conf

# expect RC LABEL STREAM [WORD...]: the last run's exit status and words of
# its stdout or stderr.
expect() {
	rc=$1 label=$2 stream=$3; shift 3
	if [ "$got" != "$rc" ]; then
		echo "FAIL $label: exit $got, expected $rc"; cat "$t/out" "$t/err"; fail=1; return
	fi
	for w; do
		grep -qF -- "$w" "$t/$stream" || { echo "FAIL $label: no '$w' in:"; cat "$t/$stream"; fail=1; return; }
	done
	echo "ok   $label"
}
run() { "$pm" check-config "$t/line" >"$t/out" 2>"$t/err"; got=$?; }
mkdir -m 0755 "$t/state"
echo "required $so runtime=$rt state_dir=$t/state" >"$t/line"
echo "MpiParams=ports=20000-20999" >"$t/none.conf"

# No Slurm at all (slurmctld, scontrol, slurmd silent): the plugin's own
# release said, which the rest compares with.
run; expect 0 "no Slurm at all" out "no Slurm to compare with" "slurmctld did not answer"
rel=$(sed -n 's/.*the plugin is built for Slurm \([0-9]*\.[0-9]*\)$/\1/p' "$t/out")
[ -n "$rel" ] || { echo "FAIL no release in:"; cat "$t/out"; exit 1; }

# slurmctld answers: its release, MpiParams' ports, every node's release.
config() {
	printf 'Configuration data as of 2026-12-04T00:00:00\nMpiParams               = ports=20000-20999\nSLURM_VERSION           = %s\nSlurmUser               = slurm(64030)\nSlurmdUser              = %s\n' "$1" "${2:-root(0)}" >"$t/show_config"
}
config "$rel.8"
printf 'NodeName=n1 Arch=x86_64 Version=%s.8 State=IDLE\nNodeName=n2 Version=(null)\nNodeName=n3 Arch=x Version=%s.5\n' "$rel" "$rel" >"$t/-o_show_node"
run; expect 0 "slurmctld and every node on the plugin's release" out \
	"the plugin is built for Slurm $rel; slurmctld runs $rel.8" "3 nodes run the plugin's Slurm release"
printf 'NodeName=n1 Version=%s.8\nNodeName=n2 Version=23.02.1\n' "$rel" >"$t/-o_show_node"
run; expect 1 "a node on another release" err "node n2" "23.02.1"
: >"$t/-o_show_node"
i=0; while [ $i -lt 12 ]; do echo "NodeName=m$i Version=23.02.1" >>"$t/-o_show_node"; i=$((i + 1)); done
run; expect 1 "more than ten nodes on another release: counted" err "node m9" "2 more nodes run another Slurm release"
grep -qF "node m10" "$t/err" && { echo "FAIL node m10 named"; fail=1; }
config 23.02.1
run; expect 1 "slurmctld on another release" err "slurmctld" "23.02.1"
# drain=yes: slurmd's user from slurmctld's settings.
config "$rel.8" "nobody(65534)"
: >"$t/-o_show_node"
printf '#!/bin/sh\nexit 0\n' >"$t/check.sh"; chmod 0755 "$t/check.sh"
echo "required $so runtime=$rt state_dir=$t/state drain=yes health=script:$t/check.sh" >"$t/line"
run; expect 1 "drain=yes, slurmd as nobody (slurmctld's word)" err "runs as nobody"
echo "required $so runtime=$rt state_dir=$t/state" >"$t/line"

# slurmctld does not answer: the installed Slurm's release, scontrol's,
# else slurmd's, else none; slurm.conf as written.
echo 1 >"$t/show_config.rc"
echo "slurm $rel.9" >"$t/--version"
run; expect 0 "no slurmctld: scontrol's release" out "the installed Slurm (scontrol) runs $rel.9" \
	"slurmctld did not answer"
echo "slurm-wlm $rel.7" >"$t/slurmd"
echo "not a version" >"$t/--version"
run; expect 0 "no slurmctld, no scontrol release: slurmd's" out "the installed Slurm (slurmd) runs $rel.7"
exit $fail
