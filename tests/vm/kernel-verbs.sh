#!/bin/bash
# qrdma under a kernel consumer of the verbs: tests/kverbs/
# qrdma_kverbs_test.ko (S38 for kernel posts, ib_drain_qp, SRQ resize) and
# qrdma_dma_test.ko (DMA to addresses the guest never mapped is a guest
# error), built on the host by scripts/build-driver, loaded here; each
# writes its results to the kernel log as TAP, which this script passes on.
# Prints TAP.
set -uo pipefail
. "${QRDMA_SRC:-/qrdma/src}/tests/vm/lib-qrdma.sh"

LOGDIR=${QRDMA_OUT:-/tmp}/kernel-verbs
KO_DIR=$QRDMA_KVERBS_DIR
mkdir -p "$LOGDIR"

describe() {
    case $1 in
        kverbs_unload) echo "the test module unloads" ;;
        dma_unload) echo "the DMA test module unloads" ;;
    esac
}

t_kverbs_unload() {
    rmmod qrdma_kverbs_test
}

t_dma_unload() {
    rmmod qrdma_dma_test
}

# module_tap MODULE PREFIX [PARAM...]: load tests/kverbs/MODULE.ko and pass
# on its TAP lines, from the kernel log (the ones of this load).
module_tap() {
    local ko=$KO_DIR/$1.ko prefix=$2
    shift 2
    [ -f "$ko" ] || {
        echo "1..1"
        echo "not ok 1 - no $ko: run scripts/build-driver"
        return 1
    }
    dmesg -C
    insmod "$ko" ibdev="$QRDMA_DEV" gid_index="$QRDMA_GID_INDEX" "$@" ||
        echo "# insmod failed: $?"
    dmesg | sed -n "s/^\[[^]]*\] $prefix//p"
}

run_test qrdma_setup
run_iommu_test
if [ -n "$QRDMA_GID_INDEX" ]; then
    # The EQ test wants more CQs armed on one vector than the completion
    # EQs once held (4096): on a device that allows them.
    max_cq=$(ibv_devinfo -v -d "$QRDMA_DEV" | awk '$1 == "max_cq:" {print $2}')
    eq_cqs=0
    [ "${max_cq:-0}" -le 4608 ] || eq_cqs=4608
    tap_include qrdma_kverbs_test module_tap qrdma_kverbs_test 'qrdma-kverbs: ' \
        eq_cqs="$eq_cqs"
    run_test kverbs_unload
    tap_include qrdma_dma_test module_tap qrdma_dma_test 'qrdma-dma: '
    run_test dma_unload
fi
run_test qrdma_unload
run_test dmesg_clean
tap_end
