#!/bin/bash
# libqrdma's verbs semantics (provider-semantics.py, with pyverbs): run
# inside the guest as root by
#   scripts/build-driver && scripts/build-provider
#   scripts/run-vm --script tests/vm/provider-semantics.sh -- \
#       -device pcie-root-port,id=rp0,bus=pcie.0,chassis=1 -device qrdma,bus=rp0
# Prints TAP (the setup, then the Python tests); exits nonzero if any
# test failed.
set -uo pipefail

# run-vm copies the script to /qrdma/run: the library is in the checkout.
. "${QRDMA_SRC:-/qrdma/src}/tests/vm/lib-qrdma.sh"

LOGDIR=${QRDMA_OUT:-/tmp}/provider-semantics
mkdir -p "$LOGDIR"

if ! qrdma_setup >"$LOGDIR/setup.log" 2>&1; then
    echo "1..1"
    echo "not ok 1 - qrdma setup (provider, driver, address, GID)"
    diag "$LOGDIR/setup.log"
    exit 1
fi
grep '^INFO: ' "$LOGDIR/setup.log" | sed 's/^INFO: /# /'
# A hung test must not hang the VM: the harness's timeout is longer.
timeout 600 python3 "$QRDMA_SRC_DIR/tests/vm/provider-semantics.py" \
    "$QRDMA_DEV" "$QRDMA_GID_INDEX"
rc=$?
echo "# guest_errors $(qrdma_counter guest_errors), stale_cqes $(qrdma_counter stale_cqes)"
dmesg | grep -iE 'qrdma.*(error|fail)|WARNING|BUG|Oops' | sed 's/^/# dmesg: /' || true
exit "$rc"
