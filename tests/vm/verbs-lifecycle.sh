#!/bin/bash
# The lifecycle rules S1-S7, S10-S16, S20-S22 and S30-S38 through libibverbs
# on qrdma: tests/vm/verbs-lifecycle.c, and ibv_resize_cq of a CQ in use:
# tests/vm/cq-resize.c, both built on the host by scripts/build-provider.
# Prints TAP.
set -uo pipefail
. "${QRDMA_SRC:-/qrdma/src}/tests/vm/lib-qrdma.sh"

LOGDIR=${QRDMA_OUT:-/tmp}/verbs-lifecycle
mkdir -p "$LOGDIR"

run_test qrdma_setup
run_iommu_test
if [ -n "$QRDMA_GID_INDEX" ]; then
    tap_include verbs-lifecycle \
        timeout 120 "$QRDMA_PROVIDER_DIR/verbs-lifecycle" "$QRDMA_DEV" "$QRDMA_GID_INDEX"
    tap_include cq-resize \
        timeout 120 "$QRDMA_PROVIDER_DIR/cq-resize" "$QRDMA_DEV" "$QRDMA_GID_INDEX"
fi
run_test qrdma_unload
run_test dmesg_clean
tap_end
