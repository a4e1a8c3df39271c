#!/usr/bin/env bash
# build-driver --kernels on a cache that lacks the kernel's headers, as on
# a new machine: the run must fetch them itself (under the cache lock, which
# refuses to run where bash ignores errexit) and build qrdma.ko for that
# kernel.  On a copy of this checkout, with a cache of its own: the
# default guest kernel's headers come from apt again.  TAP.
set -uo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"
. "$(dirname "$0")/lib-tap.sh"

TMP=$(mktemp -d "${TMPDIR:-/var/tmp}/qrdma-driver-cold.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
out=$TMP/out
# shellcheck disable=SC2034 # read by lib-tap.sh's check
TAP_DETAILS=$out

KVER=$(default_kernel_release)
checkout_copy "$TMP/tree"
(cd "$TMP/tree" &&
    env -u QRDMA_STAGE_LOG -u QRDMA_STAGE_DEPTH -u QRDMA_STAGE_PATH \
    QRDMA_CACHE="$TMP/cache" ./scripts/build-driver --kernels "$KVER" </dev/null) >"$out" 2>&1
rc=$?
# shellcheck disable=SC2034 # read in the checks' eval
ko=$TMP/tree/build/kernels/$KVER/guest-driver/qrdma.ko

check "build-driver --kernels $KVER, its headers not in the cache: exit 0 (exit $rc)" [ "$rc" -eq 0 ]
check "one TAP line, ok, for $KVER" \
    eval 'grep -qx "1..1" "$out" && grep -q "^ok 1 - qrdma.ko and the test modules build for $KVER " "$out"'
check "the headers were fetched into the run's cache" \
    [ -f "$TMP/cache/kernel-headers/$KVER/.done" ]
# shellcheck disable=SC2034 # read by lib-tap.sh's check
TAP_DETAILS=$TMP/tree/build/logs/driver-$KVER.log
check "qrdma.ko is built for $KVER (its vermagic)" \
    eval 'modinfo -F vermagic "$ko" | grep -q "^$KVER "'
tap_end
