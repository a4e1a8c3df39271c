#!/bin/bash
# libqrdma's verbs semantics, through pyverbs: tests/vm/pyverbs/test_qrdma.py
# on its base qrdma_base.py, a module of rdma-core's test suite, run by the
# suite's own run_tests.py on qrdma (--dev, --gid).  Run inside the guest
# as root by
#   scripts/build-driver && scripts/build-provider && scripts/install-guest
#   scripts/run-vm --script tests/vm/provider-semantics.sh -- \
#       -device pcie-root-port,id=rp0,bus=pcie.0,chassis=1 -device qrdma,bus=rp0
# The suite comes from $QRDMA_PROVIDER_DIR/rdma-core-tests, as for
# rdma-core-tests.sh.  Prints TAP (the setup, a line per test of the
# module, the unload and dmesg checks); exits nonzero if any test failed.
set -uo pipefail

# run-vm copies the script to /qrdma/run: the library is in the checkout.
. "${QRDMA_SRC:-/qrdma/src}/tests/vm/lib-qrdma.sh"

LOGDIR=${QRDMA_OUT:-/tmp}/provider-semantics
mkdir -p "$LOGDIR"
SUITE=/tmp/provider-semantics-suite

# The suite writes __pycache__ next to itself: a copy off the read-only
# share, with qrdma's modules beside rdma-core's, where its loader finds
# them.  A copy that fails leaves no suite, and the module's line below
# fails for it.
suite_copy() {
    [ -d "$QRDMA_PROVIDER_DIR/rdma-core-tests/tests" ] || {
        echo "# no $QRDMA_PROVIDER_DIR/rdma-core-tests: run scripts/build-provider"
        return 1
    }
    rm -rf "$SUITE"
    cp -r "$QRDMA_PROVIDER_DIR/rdma-core-tests" "$SUITE" &&
        cp "$QRDMA_SRC_DIR"/tests/vm/pyverbs/*.py "$SUITE/tests/"
}

run_test qrdma_setup
if [ -n "$QRDMA_GID_INDEX" ]; then
    suite_copy
    # A hung test must not hang the VM: the harness's timeout is longer.
    tap_include "rdma-core's run_tests.py test_qrdma" \
        unittest_tap timeout 600 python3 "$SUITE/tests/run_tests.py" \
        --dev "$QRDMA_DEV" --gid "$QRDMA_GID_INDEX" -v test_qrdma
    echo "# guest_errors $(qrdma_counter guest_errors), stale_cqes $(qrdma_counter stale_cqes)"
fi
run_test qrdma_unload
run_test dmesg_clean
tap_end
