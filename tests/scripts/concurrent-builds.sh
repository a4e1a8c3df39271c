#!/usr/bin/env bash
# Two checkouts build QEMU at once in the one cache they share, each with
# a device source of its own: both builds pass, one waits for the other's
# lock and says so, and each checkout's QEMU is built from its own source
# (a marker string compiled into each), whatever the other built after it.
# TAP.
set -uo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"
. "$(dirname "$0")/lib-tap.sh"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/qrdma-concurrent-builds.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

tag=$$.$RANDOM
declare -A pid rc
for side in A B; do
    checkout_copy "$TMP/$side"
    printf '\n/* tests/scripts/concurrent-builds.sh */\nstatic const char qrdma_build_marker[] __attribute__((used)) =\n    "qrdma-build-marker-%s-%s";\n' \
        "$side" "$tag" >>"$TMP/$side/hw-rdma/qrdma.c"
done
# Each run is a run of its own, not a stage of the one running us.
for side in A B; do
    (cd "$TMP/$side" &&
        env -u QRDMA_STAGE_LOG -u QRDMA_STAGE_DEPTH -u QRDMA_STAGE_PATH \
        ./scripts/build-qemu plain </dev/null) >"$TMP/$side.out" 2>&1 &
    pid[$side]=$!
    sleep 1
done
for side in A B; do
    rc[$side]=0
    wait "${pid[$side]}" || rc[$side]=$?
done

one_waited() {
    [ "$(grep -l "waiting for the cache lock qemu-$QEMU_VERSION (held by pid" \
         "$TMP"/[AB].out | wc -l)" -eq 1 ]
}
# built_from SIDE OTHER: SIDE's QEMU has SIDE's marker and not OTHER's.
built_from() {
    local bin=$TMP/$1/${QEMU_BIN#"$QRDMA_ROOT"/}
    [ -x "$bin" ] && grep -qaF "qrdma-build-marker-$1-$tag" "$bin" &&
        ! grep -qaF "qrdma-build-marker-$2-$tag" "$bin"
}

check "both builds pass (A: exit ${rc[A]}, B: exit ${rc[B]})" \
    [ "$(( rc[A] + rc[B] ))" -eq 0 ]
check "one of them waited for the other's lock of the tree and said so" one_waited
check "checkout A's QEMU is built from A's source, not B's" built_from A B
check "checkout B's QEMU is built from B's source, not A's" built_from B A
if [ "$TAP_FAILED" -ne 0 ]; then
    for side in A B; do
        echo "# the end of $side's build:"
        tail -n 20 "$TMP/$side.out" | sed 's/^/# /'
    done
fi
tap_end
