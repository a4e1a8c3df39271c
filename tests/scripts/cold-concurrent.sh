#!/usr/bin/env bash
# Two clones run the README's main job at once on an empty cache (a new
# QRDMA_CACHE and CCACHE_DIR), as two people or two CI jobs on one fresh
# machine would: both must pass, whichever builds a shared thing first
# and whichever waits for it.  Prints each run's time by stage.  TAP.
# Slow (a cold QEMU build, a debootstrap, two VMs): scripts/test-matrix
# runs it, not test-all.
set -uo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"
. "$(dirname "$0")/lib-tap.sh"

# Gigabytes: not a tmpfs.
TMP=$(mktemp -d /var/tmp/qrdma-cold-concurrent.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

start=$(date +%s)
declare -A pid rc
for side in A B; do
    checkout_copy "$TMP/$side"
    (cd "$TMP/$side" &&
        env -u QRDMA_STAGE_LOG -u QRDMA_STAGE_DEPTH -u QRDMA_STAGE_PATH \
        QRDMA_CACHE="$TMP/cache" CCACHE_DIR="$TMP/ccache" \
        ./scripts/main-job </dev/null) >"$TMP/$side.out" 2>&1 &
    pid[$side]=$!
done
for side in A B; do
    rc[$side]=0
    wait "${pid[$side]}" || rc[$side]=$?
done
echo "# both done in $(( $(date +%s) - start ))s"

passed() {
    [ "${rc[$1]}" -eq 0 ] && grep -q '^main-job: first pingpong [0-9]' "$TMP/$1.out"
}
for side in A B; do
    check "main-job of clone $side passes (exit ${rc[$side]}) and runs its pingpong" \
        passed "$side"
done
check "the clones took turns at the shared builds, and said so" \
    grep -q 'waiting for the cache lock' "$TMP/A.out" "$TMP/B.out"
for side in A B; do
    echo "# clone $side: $(grep -c 'waiting for the cache lock' "$TMP/$side.out") waits;" \
        "$(grep -m1 '^main-job: first pingpong [0-9]' "$TMP/$side.out" || echo 'no pingpong')"
    grep 'waiting for the cache lock' "$TMP/$side.out" | sed 's/^/#   /'
    sed -n '/^time by stage:/,$p' "$TMP/$side.out" | sed 's/^/# /'
    [ "$TAP_FAILED" -eq 0 ] || tail -n 30 "$TMP/$side.out" | sed 's/^/# | /'
done
tap_end
