#!/usr/bin/env bash
# scripts/run-qtests, which runs the qtest paths several at once, on a fake
# qos-test whose paths end out of order, one failing, one with a sanitizer
# report and one killed: the TAP lines come in the paths' order, each
# failure is reported as one and fails the run, and the paths do run at
# once (QRDMA_QTEST_JOBS) but never more than that.  TAP.
set -uo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"
. "$(dirname "$0")/lib-tap.sh"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/qrdma-run-qtests-test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
# shellcheck disable=SC2034 # read by lib-tap.sh's check
TAP_DETAILS=$TMP/out

# The fake: -l lists six qrdma paths and one other; --tap -p P runs path
# P, the earlier ones slower, each marking itself running in a directory
# and keeping the most it saw running at once.  FAKE_FAIL names a path
# that fails its assertion, FAKE_SAN one that reports UBSan but exits 0,
# FAKE_KILL one whose qos-test is killed before it prints anything.
cat >"$TMP/qos-test" <<'FAKE'
#!/usr/bin/env bash
if [ "$1" = -l ]; then
    for i in 1 2 3 4 5 6; do echo "/x86_64/qrdma/t$i"; done
    echo /x86_64/other/t7
    exit 0
fi
p=$3 i=${3##*/t}
touch "$FAKE_DIR/running.$i"
n=$(find "$FAKE_DIR" -name 'running.*' | wc -l)
[ "$n" -le "$(cat "$FAKE_DIR/most" 2>/dev/null || echo 0)" ] || echo "$n" >"$FAKE_DIR/most"
sleep "0.$((7 - i))"
rm -f "$FAKE_DIR/running.$i"
[ "$p" != "${FAKE_KILL:-}" ] || kill -9 $$
[ "$p" != "${FAKE_SAN:-}" ] || echo "qrdma.c:1:2: runtime error: shift exponent 64"
if [ "$p" = "${FAKE_FAIL:-}" ]; then
    echo "not ok 1 $p"
    echo "ERROR:qrdma-test.c:9:assertion failed"
    exit 1
fi
echo "ok 1 $p"
FAKE
chmod +x "$TMP/qos-test"
export QRDMA_QOS_TEST=$TMP/qos-test FAKE_DIR=$TMP/fake
mkdir -p "$FAKE_DIR"

# run JOBS [VAR=value...]: run-qtests on the fake, its output in $TMP/out,
# its exit status in rc.
# shellcheck disable=SC2034 # rc is read in the checks' eval
run() {
    local jobs=$1
    shift
    rm -f "$FAKE_DIR/most"
    rc=0
    env "$@" QRDMA_QTEST_JOBS="$jobs" "$QRDMA_ROOT/scripts/run-qtests" >"$TMP/out" 2>&1 || rc=$?
}
lines() { grep -E '^(not )?ok ' "$TMP/out" | cut -d' ' -f1-4 | tr '\n' ','; }

run 3
check "all pass, three at once: the plan and ok 1..6 in order, exit 0" \
    eval '[ "$rc" -eq 0 ] && head -1 "$TMP/out" | grep -qx "1..6" &&
          [ "$(lines)" = "ok 1 /x86_64/qrdma/t1,ok 2 /x86_64/qrdma/t2,ok 3 /x86_64/qrdma/t3,ok 4 /x86_64/qrdma/t4,ok 5 /x86_64/qrdma/t5,ok 6 /x86_64/qrdma/t6," ]'
check "three paths ran at once, never more" [ "$(cat "$FAKE_DIR/most")" = 3 ]

run 1
check "QRDMA_QTEST_JOBS=1: one at a time" \
    eval '[ "$rc" -eq 0 ] && [ "$(cat "$FAKE_DIR/most")" = 1 ]'

run 4 FAKE_FAIL=/x86_64/qrdma/t2 FAKE_SAN=/x86_64/qrdma/t5 FAKE_KILL=/x86_64/qrdma/t6
check "a failed assertion, a UBSan report and a killed qos-test: each not ok, the rest ok, in order, exit 1" \
    eval '[ "$rc" -eq 1 ] &&
          [ "$(lines)" = "ok 1 /x86_64/qrdma/t1,not ok 2 /x86_64/qrdma/t2,ok 3 /x86_64/qrdma/t3,ok 4 /x86_64/qrdma/t4,not ok 5 /x86_64/qrdma/t5,not ok 6 /x86_64/qrdma/t6," ]'
check "the failed path's output follows its line" \
    grep -q '^# ERROR:qrdma-test.c:9:assertion failed' "$TMP/out"

run 2 FAKE_FAIL=/x86_64/qrdma/t6
check "only the last path fails: the run still fails" \
    eval '[ "$rc" -eq 1 ] && grep -q "^not ok 6 " "$TMP/out"'

run 0
check "QRDMA_QTEST_JOBS=0 is refused" eval '[ "$rc" -ne 0 ] && grep -q "not a count" "$TMP/out"'
tap_end
