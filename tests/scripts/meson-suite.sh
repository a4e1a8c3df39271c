#!/usr/bin/env bash
# The meson tests of one suite that test-all leaves out (MESON_SUITE, one
# of meson.build's matrix-CELL): each defined once, in meson.build, with
# its arguments, and run here by `meson test --suite`.  Sets up and builds
# what test-all does first, and the targets that only this suite's tests
# need (MESON_TARGETS).  A TAP line per test with its counts, and the
# failed points under it; the whole log in build/meson-logs/.
#
#   MESON_SUITE=matrix-wire-rxe   the suite
#   MESON_TARGETS=qemu-fuzz       targets not built by default, by spaces
set -uo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"
. "$(dirname "$0")/lib-tap.sh"

[ -n "${MESON_SUITE:-}" ] || qrdma_die "meson-suite: MESON_SUITE names no suite"
SUITE=$MESON_SUITE
read -r -a TARGETS <<<"${MESON_TARGETS:-}"
BUILD=$QRDMA_ROOT/build
LOGS=$BUILD/logs
mkdir -p "$LOGS"

# prepare: the host set up and everything built, as test-all does.
prepare() {
    TAP_DETAILS=$LOGS/meson-suite-$SUITE-prepare.log
    {
        "$QRDMA_ROOT/scripts/setup-host" &&
        meson_configure "$BUILD" &&
        meson compile -C "$BUILD" &&
        { [ ${#TARGETS[@]} -eq 0 ] || meson compile -C "$BUILD" "${TARGETS[@]}"; }
    } >"$TAP_DETAILS" 2>&1
}

check "set-up and build for suite $SUITE" prepare || { tap_end; exit; }
# Its own log, so that test-all's testlog.json is not replaced.
log=$BUILD/meson-logs/testlog-$SUITE.json
rm -f "$log"
meson test -C "$BUILD" --suite "$SUITE" --no-rebuild --print-errorlogs \
    --logbase "testlog-$SUITE" >"$LOGS/meson-suite-$SUITE.log" 2>&1
[ -f "$log" ] || { check "meson test --suite $SUITE wrote $log" false; tap_end; exit; }
# A TAP line per test, from tap-summary's row of it: the harness result,
# the time and its TAP counts (a crash or time-out counts as a failure).
while read -r line; do
    [[ $line =~ ^(.+)\ +([A-Z]+)\ +[0-9.]+s\ +([0-9]+)\ passed,\ ([0-9]+)\ failed ]] || continue
    TAP_DETAILS=
    check "$line" test "${BASH_REMATCH[4]}" = 0
done < <("$QRDMA_ROOT/scripts/tap-summary" "$log")
grep -h '^not ok' "$LOGS/meson-suite-$SUITE.log" | sed 's/^/# /'
tap_end
