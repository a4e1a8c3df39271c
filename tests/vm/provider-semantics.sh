#!/bin/bash
# libqrdma's verbs semantics (provider-semantics.py, with pyverbs): run
# inside the guest as root by
#   scripts/build-driver && scripts/build-provider && scripts/install-guest
#   scripts/run-vm --script tests/vm/provider-semantics.sh -- \
#       -device pcie-root-port,id=rp0,bus=pcie.0,chassis=1 -device qrdma,bus=rp0
# Prints TAP (the setup, the Python tests, the unload and dmesg checks);
# exits nonzero if any test failed.
set -uo pipefail

# run-vm copies the script to /qrdma/run: the library is in the checkout.
. "${QRDMA_SRC:-/qrdma/src}/tests/vm/lib-qrdma.sh"

LOGDIR=${QRDMA_OUT:-/tmp}/provider-semantics
mkdir -p "$LOGDIR"

run_test qrdma_setup
if [ -n "$QRDMA_GID_INDEX" ]; then
    # A hung test must not hang the VM: the harness's timeout is longer.
    tap_include provider-semantics.py \
        timeout 600 python3 "$QRDMA_SRC_DIR/tests/vm/provider-semantics.py" \
        "$QRDMA_DEV" "$QRDMA_GID_INDEX"
    echo "# guest_errors $(qrdma_counter guest_errors), stale_cqes $(qrdma_counter stale_cqes)"
fi
run_test qrdma_unload
run_test dmesg_clean
tap_end
