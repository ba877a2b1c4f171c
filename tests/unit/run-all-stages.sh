#!/bin/sh
# tests/run-all runs every stage after the build whatever the others did
# (a unit test's failure once hid the integration tests), says which
# failed, and exits non-zero; without a build nothing else runs. Each
# stage's command is replaced by a script that records its name and fails
# when told to: this tests run-all's own logic, not the stages.
src=${top_srcdir:-.}
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/tests/unit" "$t/tests/fuzz" "$t/tests/integration" "$t/bin"
cp "$src/tests/run-all" "$t/tests/run-all"
stub() { # path name
	printf '#!/bin/sh\necho %s >>"$RA_RAN"\ncase " $RA_FAIL " in *" %s "*) exit 3;; esac\n' "$2" "$2" >"$1"
	chmod +x "$1"
}
stub "$t/tests/install-deps" dependencies
stub "$t/tests/build" build
stub "$t/tests/package" package
stub "$t/tests/fuzz/run" fuzz
stub "$t/tests/integration/run" integration
stub "$t/tests/unit/failed-logs" failed-logs
# make check and make check-sanitize: the make first on PATH.
printf '#!/bin/sh\nfor a; do case $a in check) n=unit;; check-sanitize) n=unit-sanitizers;; *) continue;; esac\n' >"$t/bin/make"
printf 'echo $n >>"$RA_RAN"; case " $RA_FAIL " in *" $n "*) exit 2;; esac; done\n' >>"$t/bin/make"
chmod +x "$t/bin/make"
fail=0
run() { # failing-stages -> $rc, $out, ran stages in $t/ran
	: >"$t/ran"
	out=$(RA_RAN=$t/ran RA_FAIL=$1 PATH="$t/bin:$PATH" bash "$t/tests/run-all" 2>&1)
	rc=$?
}
check() { # what expected-ran
	ran=$(grep -v failed-logs "$t/ran" | tr '\n' ' ')
	[ "$ran" = "$2 " ] || { echo "FAIL: $1: ran '$ran', not '$2 '"; fail=1; }
}

run ""
[ $rc = 0 ] || { echo "FAIL: nothing failing, exit $rc: $out"; fail=1; }
check "all pass" "dependencies build unit package unit-sanitizers fuzz integration"

run "unit"
[ $rc != 0 ] || { echo "FAIL: a failed unit stage exited 0"; fail=1; }
check "unit fails" "dependencies build unit package unit-sanitizers fuzz integration"
ran=$(tr '\n' ' ' <"$t/ran")
case $ran in *integration*) ;; *) echo "FAIL: the unit stage's failure hid the integration tests: $ran"; fail=1;; esac
grep -q failed-logs "$t/ran" || { echo "FAIL: the failed unit tests' logs were not shown"; fail=1; }
echo "$out" | grep -q "FAILED: unit$" || { echo "FAIL: the summary does not name the failed stage: $out"; fail=1; }

run "package fuzz"
[ $rc != 0 ] || { echo "FAIL: two failed stages exited 0"; fail=1; }
check "package and fuzz fail" "dependencies build unit package unit-sanitizers fuzz integration"
echo "$out" | grep -q "FAILED: package fuzz$" || { echo "FAIL: the summary does not name both: $out"; fail=1; }

run "build"
[ $rc != 0 ] || { echo "FAIL: a failed build exited 0"; fail=1; }
check "build fails" "dependencies build"

[ $fail = 0 ] && echo "PASS: run-all's stages"
exit $fail
