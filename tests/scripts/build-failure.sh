#!/usr/bin/env bash
# The README's test command on a copy of this checkout whose device does
# not compile: scripts/test-all must stop at the stage that builds QEMU,
# say FAILED there and never "done", run nothing after it, and end with
# that stage's name and the compiler's error.  The copy shares this
# machine's cache, as a second clone would.  TAP.
set -uo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"
. "$(dirname "$0")/lib-tap.sh"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/qrdma-build-failure.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
out=$TMP/out

has() { grep -qF -- "$1" "$out"; }
lacks() { ! grep -qF -- "$1" "$out"; }

checkout_copy "$TMP/tree"
marker="qrdma: made to fail by tests/scripts/build-failure.sh"
printf '#error "%s"\n' "$marker" >>"$TMP/tree/hw-rdma/qrdma.c"

# The copy's run is a run of its own, not a stage of the one running us.
(cd "$TMP/tree" &&
    env -u QRDMA_STAGE_LOG -u QRDMA_STAGE_DEPTH -u QRDMA_STAGE_PATH \
    ./scripts/test-all </dev/null) >"$out" 2>&1
rc=$?

check "test-all fails (exit $rc)" [ "$rc" -ne 0 ]
check "the QEMU build step says FAILED and never done" \
    eval 'has "<== [qemu-build] FAILED" && lacks "<== [qemu-build] done"'
check "nothing runs after it: no sanitizer build, no guest, no test" \
    eval 'lacks "==> [qemu-configure-san]" && lacks "==> [guest]" &&
          lacks "==> [debootstrap]" && lacks "==> [test]"'
check "the last error names the failed step, with the compiler's error in its log" \
    eval '[ "$(grep "^error: stage" "$out" | tail -n 1)" = "error: stage qemu-build failed: build qemu-system-x86_64 (plain)" ] &&
          sed -n "/^time by stage:/,\$p" "$out" | sed -n "/^error: stage qemu-build/,\$p" | grep -qF "$marker"'
check "the summary marks the step and the stages around it FAILED" \
    eval 'grep -qE "^ +qemu-build +[0-9]+s  FAILED" "$out" &&
          grep -qE "^  build +[0-9]+s  FAILED" "$out"'
if [ "$TAP_FAILED" -ne 0 ]; then
    echo "# the end of test-all's output:"
    tail -n 40 "$out" | sed 's/^/# /'
fi
tap_end
