#!/bin/bash
# qrdma under a kernel consumer of the verbs: tests/kverbs/
# qrdma_kverbs_test.ko (S38 for kernel posts, ib_drain_qp, SRQ resize), built on the
# host by scripts/build-driver, loaded here; it writes its results to the
# kernel log as TAP, which this script passes on.  Prints TAP.
set -uo pipefail
. "${QRDMA_SRC:-/qrdma/src}/tests/vm/lib-qrdma.sh"

LOGDIR=${QRDMA_OUT:-/tmp}/kernel-verbs
TEST_KO=$QRDMA_SRC_DIR/tests/kverbs/qrdma_kverbs_test.ko
PREFIX='qrdma-kverbs: '
mkdir -p "$LOGDIR"

describe() {
    case $1 in
        kverbs_unload) echo "the test module unloads" ;;
    esac
}

t_kverbs_unload() {
    rmmod qrdma_kverbs_test
}

# The module's TAP lines, from the kernel log (the ones of this load).
kverbs_tap() {
    [ -f "$TEST_KO" ] || {
        echo "1..1"
        echo "not ok 1 - no $TEST_KO: run scripts/build-driver"
        return 1
    }
    dmesg -C
    insmod "$TEST_KO" ibdev="$QRDMA_DEV" gid_index="$QRDMA_GID_INDEX" ||
        echo "# insmod failed: $?"
    dmesg | sed -n "s/^\[[^]]*\] $PREFIX//p"
}

run_test qrdma_setup
if [ -n "$QRDMA_GID_INDEX" ]; then
    tap_include qrdma_kverbs_test kverbs_tap
    run_test kverbs_unload
fi
run_test qrdma_unload
run_test dmesg_clean
tap_end
