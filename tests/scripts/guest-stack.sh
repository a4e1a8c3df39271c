#!/usr/bin/env bash
# The guest tests on one stack: the guest kernel, the guest's rdma-core and
# the QEMU that the environment names (QRDMA_GUEST_KERNEL, QRDMA_RDMA_CORE,
# QRDMA_QEMU, as everywhere in scripts/; unset is the default stack).  It
# builds that QEMU and installs qrdma into that guest (install-guest builds
# the base guest, the driver and the provider), then runs each test of
# GUEST_TESTS in a VM: a TAP line per test, with its counts, and the failed points under it;
# a failed test keeps its console under build/vm-logs/<test>-<stack>.log.
#
#   GUEST_TESTS="driver-load provider-clients"   the tests/vm/ scripts
#                                                (by spaces or commas)
#       (default: driver-load, which includes NVMe over RDMA to itself,
#       kernel-verbs, provider-clients, verbs-lifecycle and the rdma-core
#       suite beside rxe)
#
# Slow (a VM run per test): scripts/test-matrix runs it, not test-all.
set -uo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"
. "$(dirname "$0")/lib-tap.sh"

IFS=', ' read -r -a TESTS <<<"${GUEST_TESTS:-driver-load kernel-verbs provider-clients verbs-lifecycle rdma-core-tests}"
KVER=$(guest_kernel_release)
[ -n "$KVER" ] || qrdma_die "guest-stack: no kernel ${QRDMA_GUEST_KERNEL:-} in the matrix"
# The stack in file names: the kernel's minor version and what else is set.
STACK=$(kernel_minor "$KVER")${QRDMA_RDMA_CORE:+-rc$QRDMA_RDMA_CORE}${QRDMA_QEMU:+-qemu$QRDMA_QEMU}

# run_one SCRIPT: the VM test, its TAP kept beside its console.
run_one() {
    local name=$1-$STACK
    TAP_DETAILS=$QRDMA_ROOT/build/vm-logs/$name.log
    "$QRDMA_ROOT/scripts/run-vm-test" "$1.sh" --name "$name" --timeout 1500 -- \
        -device pcie-root-port,id=rp0,bus=pcie.0,chassis=1 \
        -device qrdma,bus=rp0 >"$QRDMA_ROOT/build/vm-out/$name.tap" 2>&1
}

# install_guest: the host's packages, the stack's QEMU, and its guest with
# qrdma in it (install-guest builds what goes in), all incremental, on a
# fresh clone as on one that built them; the output in the log.
install_guest() {
    TAP_DETAILS=$QRDMA_ROOT/build/logs/install-guest-$STACK.log
    {
        "$QRDMA_ROOT/scripts/setup-host" &&
            "$QRDMA_ROOT/scripts/build-qemu" plain &&
            "$QRDMA_ROOT/scripts/install-guest" --kernel "$KVER"
    } >"$TAP_DETAILS" 2>&1
}

mkdir -p "$QRDMA_ROOT/build/vm-out" "$QRDMA_ROOT/build/vm-logs" "$QRDMA_ROOT/build/logs"
echo "# stack $STACK: Linux $KVER"
# No guest, no VM test: one failure, not one per test.
check "the guest of $STACK with qrdma (install-guest)" install_guest || { tap_end; exit; }
for s in "${TESTS[@]}"; do
    check "$s on $STACK" run_one "$s"
    echo "# $s on $STACK: $(tap_counts "$QRDMA_ROOT/build/vm-out/$s-$STACK.tap")"
    grep '^not ok' "$QRDMA_ROOT/build/vm-out/$s-$STACK.tap" | sed 's/^/# /'
done
tap_end
