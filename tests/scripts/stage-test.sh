#!/usr/bin/env bash
# scripts/lib.sh's stage, errexit_check and with_cache_lock, and
# fetch_verified, on small steps made to fail or to run at once: a failure
# is never reported as done, is reported once, where it happened, and runs
# that share the cache wait for each other; and kernel_image_package on a
# fake apt.  TAP.
set -uo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"
. "$(dirname "$0")/lib-tap.sh"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/qrdma-stage-test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
# Logs and locks of these steps go to a scratch root and cache (read by
# lib.sh's functions).
# shellcheck disable=SC2034
{
    QRDMA_ROOT=$TMP/root
    QRDMA_CACHE=$TMP/cache
}
unset QRDMA_STAGE_LOG QRDMA_STAGE_DEPTH QRDMA_STAGE_PATH

# shellcheck disable=SC2034 # read by lib-tap.sh's check
TAP_DETAILS=$TMP/out
has() { grep -qF -- "$1" "$TMP/out"; }
lacks() { ! grep -qF -- "$1" "$TMP/out"; }



# 1. A command in the middle of a function fails: the rest never runs.
middle_fails() { echo "step one"; false; echo "after the failure"; }
run_middle() {
    set -e
    stage t-middle "a step that fails in its middle" middle_fails
}
(run_middle) >"$TMP/out" 2>&1
rc=$?
check "a function step whose middle command fails: the stage fails with it" \
    [ "$rc" -eq 1 ]
check "it says FAILED, never done, and the rest of the step never ran" \
    eval 'has "<== [t-middle] FAILED (1)" && lacks "[t-middle] done" && lacks "after the failure"'
check "the failure names the stage and shows the end of its log" \
    eval 'has "error: stage t-middle failed: a step that fails in its middle" && has "| step one"'

# 2. The bug of build-qemu's build_dir: a pipeline whose first command
# fails, filtered, with "|| true" behind the filter.
pipeline_fails() {
    { echo "ninja: build stopped: subcommand failed"; exit 1; } | grep -v '^\[' >/dev/null
    echo "after the pipeline"
}
(set -e; stage t-pipe "a pipeline whose first command fails" pipeline_fails) >"$TMP/out" 2>&1
rc=$?
check "a pipeline whose first command fails fails the step (pipefail)" \
    eval '[ "$rc" -ne 0 ] && has "[t-pipe] FAILED" && lacks "after the pipeline"'

# 3. x=$(...) in a step fails where a command inside it fails.
subst_fails() { local x; x=$(false; echo late); echo "got $x"; }
(set -e; stage t-subst "a failing command substitution" subst_fails) >"$TMP/out" 2>&1
rc=$?
check "a command that fails inside \$(...) fails the step (inherit_errexit)" \
    eval '[ "$rc" -ne 0 ] && lacks "got late"'

# 4. Called where bash ignores errexit, stage refuses to run at all.
ran=$TMP/ran
mark_ran() { touch "$ran"; false; echo "after the failure"; }
rm -f "$ran"
(set -e; stage t-ignored "called from ||" mark_ran || exit $?) >"$TMP/out" 2>&1
rc=$?
check "stage called from || refuses (70) and runs nothing" \
    eval '[ "$rc" -eq 70 ] && [ ! -e "$ran" ] && has "where bash ignores errexit"'
(set -e; if stage t-ignored "called from if" mark_ran; then :; fi; echo "rc after if") \
    >"$TMP/out" 2>&1
check "stage called as an if condition refuses too" \
    eval '[ ! -e "$ran" ] && has "where bash ignores errexit"'

# 5. Nested stages, as main-job runs build-qemu's: the inner failure is
# reported once, the outer one only fails with it, and the summary ends
# with the inner one.
inner_step() { echo "cc: error: made to fail"; return 3; }
outer_step() { stage t-inner "the inner step" inner_step; echo "outer went on"; }
(
    set -e
    QRDMA_STAGE_LOG=$TMP/stages
    export QRDMA_STAGE_LOG
    : >"$QRDMA_STAGE_LOG"
    trap 'stage_summary "$QRDMA_STAGE_LOG"' EXIT
    stage t-outer "the outer step" outer_step
    echo "the script went on"
) >"$TMP/out" 2>&1
rc=$?
check "an inner stage's failure fails the outer stage and stops the script" \
    eval '[ "$rc" -eq 3 ] && has "<== [t-inner] FAILED (3)" && has "<== [t-outer] FAILED (3)" &&
          lacks "outer went on" && lacks "the script went on" && lacks "] done"'
check "the failure is reported for the inner stage, and the summary ends with it" \
    eval '[ "$(grep -c "error: stage t-inner failed" "$TMP/out")" -eq 2 ] &&
          lacks "error: stage t-outer" && tail -n 3 "$TMP/out" | grep -q "made to fail"'

# 6. with_cache_lock: a second run waits for the first, says so, and
# runs after it.
hold() { echo "$1 in $(date +%s.%N)" >>"$TMP/order"; sleep "$2"; echo "$1 out $(date +%s.%N)" >>"$TMP/order"; }
rm -f "$TMP/order"
(set -e; with_cache_lock t-lock hold A 2) >"$TMP/a.out" 2>&1 &
a=$!
sleep 0.5
(set -e; with_cache_lock t-lock hold B 0) >"$TMP/out" 2>&1
wait "$a"
check "a run that finds the lock taken waits, says for what, and runs after the holder" \
    eval 'has "waiting for the cache lock t-lock (held by pid" &&
          [ "$(cut -d" " -f1-2 "$TMP/order" | tr "\n" " ")" = "A in A out B in B out " ]'

# 7. Shared holders overlap.
rm -f "$TMP/order"
(set -e; with_cache_lock -s t-lock hold A 2) >/dev/null 2>&1 &
a=$!
sleep 0.5
(set -e; with_cache_lock -s t-lock hold B 0) >"$TMP/out" 2>&1
wait "$a"
check "shared holders of a lock do not wait for each other" \
    eval 'lacks "waiting" && [ "$(cut -d" " -f1-2 "$TMP/order" | tr "\n" " ")" = "A in B in B out A out " ]'

# 8. A failing step under the lock fails and leaves the lock free.
lock_fails() { false; echo "after the failure"; }
(set -e; with_cache_lock t-lock lock_fails) >"$TMP/out" 2>&1
rc=$?
check "a step that fails under the lock fails, and the lock is free after it" \
    eval '[ "$rc" -ne 0 ] && lacks "after the failure" &&
          flock -n "$QRDMA_CACHE/locks/t-lock.lock" true'

# 9. Two downloads of one file at once each publish it whole.
head -c 3000000 /dev/urandom >"$TMP/src.bin"
sum=$(sha256sum "$TMP/src.bin" | cut -d" " -f1)
(fetch_verified "file://$TMP/src.bin" "$TMP/dl/f.bin" "$sum") >"$TMP/out" 2>&1 &
a=$!
(fetch_verified "file://$TMP/src.bin" "$TMP/dl/f.bin" "$sum") >>"$TMP/out" 2>&1
rb=$?
wait "$a"
ra=$?
whole() {
    [ "$ra" -eq 0 ] && [ "$rb" -eq 0 ] &&
        echo "$sum  $TMP/dl/f.bin" | sha256sum -c --status &&
        [ -z "$(find "$TMP/dl" -name '*.part')" ]
}
check "two downloads of one file at once: both succeed, the file is whole, no part file is left" \
    whole


# kernel_image_package, on an apt that knows some packages: Debian's
# security archive publishes a kernel's unsigned image before its signed
# one (6.1.0-57-amd64 had only the unsigned for days, and CI's guest of
# the newest 6.1 failed to fetch).
mkdir -p "$TMP/bin"
cat >"$TMP/bin/apt-cache" <<'FAKE'
#!/bin/sh
# policy PKG as apt prints it: a candidate for the packages in $KNOWN.
[ "$1" = policy ] || exit 1
echo "$2:"
echo "  Installed: (none)"
case " $KNOWN " in
    *" $2 "*) echo "  Candidate: 1.0-1" ;;
    *) echo "  Candidate: (none)" ;;
esac
FAKE
chmod +x "$TMP/bin/apt-cache"
image_of() { PATH=$TMP/bin:$PATH KNOWN=$1 kernel_image_package 6.1.0-57-amd64 2>"$TMP/out"; }
check "kernel_image_package: the signed image where apt has it" \
    eval '[ "$(image_of "linux-image-6.1.0-57-amd64 linux-image-6.1.0-57-amd64-unsigned")" = linux-image-6.1.0-57-amd64 ]'
check "kernel_image_package: the unsigned image where the signed one has no candidate" \
    eval '[ "$(image_of "linux-image-6.1.0-57-amd64-unsigned")" = linux-image-6.1.0-57-amd64-unsigned ]'
check "kernel_image_package: neither: it fails and says which it looked for" \
    eval '! image_of "linux-image-6.1.0-56-amd64" >/dev/null && has "neither linux-image-6.1.0-57-amd64 nor linux-image-6.1.0-57-amd64-unsigned"'

tap_end
