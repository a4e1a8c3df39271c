#!/usr/bin/env bash
# The guest tests on each kernel the driver supports beyond what CI runs
# there (issue 27): on Linux 6.1 (Debian 12's), 6.12 (the default) and 7.3
# (trixie-backports), driver-load (NVMe over RDMA to itself included),
# kernel-verbs, provider-clients, verbs-lifecycle and the rdma-core suite
# beside rxe.  A TAP line per kernel and test, with its counts; a failed
# one keeps its console under build/vm-logs/<test>-<kernel>.log.
#
#   GUEST_KERNELS="6.1 7.3"   the kernels (default "6.1 6.12 7.3")
#
# Slow (15 VM runs): scripts/test-matrix runs it, not test-all.
set -uo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"
. "$(dirname "$0")/lib-tap.sh"

KERNELS=${GUEST_KERNELS:-6.1 6.12 7.3}
SCRIPTS=(driver-load kernel-verbs provider-clients verbs-lifecycle rdma-core-tests)

# run_one KERNEL SCRIPT: the VM test, its TAP kept beside its console.
run_one() {
    local name=$2-$1 tap
    tap=$QRDMA_ROOT/build/vm-out/$name.tap
    TAP_DETAILS=$QRDMA_ROOT/build/vm-logs/$name.log
    QRDMA_GUEST_KERNEL=$1 "$QRDMA_ROOT/scripts/run-vm-test" "$2.sh" --name "$name" -- \
        -device pcie-root-port,id=rp0,bus=pcie.0,chassis=1 \
        -device qrdma,bus=rp0 >"$tap" 2>&1
}

# counts KERNEL SCRIPT: "N passed, N skipped" of its TAP.
counts() {
    local tap=$QRDMA_ROOT/build/vm-out/$2-$1.tap
    printf '%s passed, %s skipped' "$(grep -c '^ok ' "$tap")" "$(grep -c '^ok .*# SKIP' "$tap")"
}

# install_guest_of K: the guest of kernel K with qrdma in it, its output in the log.
install_guest_of() {
    TAP_DETAILS=$QRDMA_ROOT/build/logs/install-guest-$1.log
    if [ "$(QRDMA_GUEST_KERNEL=$1 guest_kernel_release)" = "$(default_kernel_release)" ]; then
        "$QRDMA_ROOT/scripts/install-guest" >"$TAP_DETAILS" 2>&1
    else
        "$QRDMA_ROOT/scripts/install-guest" --kernel "$1" >"$TAP_DETAILS" 2>&1
    fi
}

mkdir -p "$QRDMA_ROOT/build/vm-out" "$QRDMA_ROOT/build/vm-logs" "$QRDMA_ROOT/build/logs"
for k in $KERNELS; do
    check "the guest of $k with qrdma (install-guest --kernel $k)" install_guest_of "$k"
    for s in "${SCRIPTS[@]}"; do
        check "$s on $k" run_one "$k" "$s"
        echo "# $s on $k: $(counts "$k" "$s")"
        grep '^not ok' "$QRDMA_ROOT/build/vm-out/$s-$k.tap" | sed 's/^/# /'
    done
done
tap_end
