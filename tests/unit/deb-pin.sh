#!/bin/sh
# The package pins the Slurm it was built for: debian/slurm-depends' field,
# put on a probe package, and dpkg itself (installing into a scratch root)
# accepts it beside the same major.minor and refuses it beside another.
s=${top_srcdir:-.}
command -v dpkg-deb >/dev/null && command -v dpkg >/dev/null || { echo "no dpkg: skipped"; exit 77; }
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
fail=0
# built_for MAJOR MINOR MICRO: a slurm_version.h of that release.
built_for() {
	printf '#define SLURM_VERSION_NUMBER 0x%02x%02x%02x\n' "$1" "$2" "$3" >"$t/slurm_version.h"
	dep=$("$s/debian/slurm-depends" "$t/slurm_version.h") || { echo "FAIL slurm-depends"; exit 1; }
	dep=${dep#slurm:Depends=}
	rm -rf "$t/pkg" && mkdir -p "$t/pkg/DEBIAN"
	printf 'Package: pm-pin-probe\nVersion: 1\nArchitecture: all\nMaintainer: t <t@example.org>\nDepends: %s\nDescription: probe\n' \
		"$dep" >"$t/pkg/DEBIAN/control"
	dpkg-deb -b "$t/pkg" "$t/probe.deb" >/dev/null || { echo "FAIL dpkg-deb"; exit 1; }
}
# install_beside VERSION: exit status of dpkg -i with slurm-wlm-basic-plugins VERSION installed.
install_beside() {
	r=$t/root
	rm -rf "$r" && mkdir -p "$r/var/lib/dpkg/info" "$r/var/lib/dpkg/updates"
	: >"$r/var/lib/dpkg/available"
	: >"$r/var/lib/dpkg/info/slurm-wlm-basic-plugins.list"
	printf 'Package: slurm-wlm-basic-plugins\nStatus: install ok installed\nVersion: %s\nArchitecture: all\nMaintainer: t <t@example.org>\nDescription: x\n' \
		"$1" >"$r/var/lib/dpkg/status"
	dpkg --root="$r" --force-not-root --force-script-chrootless -i "$t/probe.deb" >"$t/out" 2>&1
}
expect() { # RC LABEL
	got=$?
	if [ "$got" != "$1" ]; then echo "FAIL $2: dpkg exit $got, expected $1"; cat "$t/out"; fail=1
	else echo "ok   $2"; fi
}

built_for 22 5 8
case $dep in *"(>= 22.05~)"*"(<< 22.06~)"*) echo "ok   field: $dep" ;;
*) echo "FAIL field for 22.05.8: $dep"; fail=1 ;; esac
install_beside 22.05.8-4+deb12u3; expect 0 "22.05 build beside 22.05.8"
install_beside 22.05.11-1; expect 0 "22.05 build beside 22.05.11"
install_beside 24.11.5-1; expect 1 "22.05 build refused beside 24.11"
grep -q "slurm-wlm-basic-plugins (<< 22.06~)" "$t/out" || { echo "FAIL refusal names no pin:"; cat "$t/out"; fail=1; }
install_beside 21.08.8-2; expect 1 "22.05 build refused beside 21.08"
built_for 24 11 5
install_beside 24.11.1-1; expect 0 "24.11 build beside 24.11.1"
install_beside 24.05.4-1; expect 1 "24.11 build refused beside 24.05"
install_beside 25.05.0-1; expect 1 "24.11 build refused beside 25.05"
built_for 26 5 5
case $dep in *"(>= 26.05~)"*"(<< 26.06~)"*) echo "ok   field: $dep" ;;
*) echo "FAIL field for 26.05.5: $dep"; fail=1 ;; esac
install_beside 26.05.5-1; expect 0 "26.05 build beside 26.05.5 (Debian forky)"
install_beside 25.11.2-1; expect 1 "26.05 build refused beside 25.11"
install_beside 24.11.5-1; expect 1 "26.05 build refused beside 24.11"
exit $fail
