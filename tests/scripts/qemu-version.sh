#!/usr/bin/env bash
# The device on a QEMU that CI does not build (issue 27): the QEMU that
# QRDMA_QEMU names (scripts/test-matrix's qemu-10.0 cell sets 10.0; CI
# runs the default, 10.2), built plain and ASan+UBSan from the one device
# source, the qtests under ASan and UBSan, and the VM tests driver-load,
# provider-clients and the qrdma-to-qrdma wire pair on it.  A TAP line per
# step, with its counts; a failed VM test keeps its console under
# build/vm-logs/<test>-qemu<version>*.log.
#
# Slow (two QEMU builds when cold, four VMs): scripts/test-matrix runs it,
# not test-all.  The guest image is the checkout's (scripts/install-guest),
# whichever QEMU boots it.
set -uo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"
. "$(dirname "$0")/lib-tap.sh"

[ -n "${QRDMA_QEMU:-}" ] || qrdma_die "qemu-version: QRDMA_QEMU names no QEMU"
v=$QRDMA_QEMU
QRDMA_DEV=(-device 'pcie-root-port,id=rp0,bus=pcie.0,chassis=1'
           -device 'qrdma,bus=rp0')

# guest V: the guest image with this checkout's qrdma.ko and libqrdma,
# each step incremental; a new base image is boot-checked on QEMU V.
guest() {
    local s
    TAP_DETAILS=$QRDMA_ROOT/build/logs/qemu-version-$1-guest.log
    : >"$TAP_DETAILS"
    for s in build-guest build-driver build-provider install-guest; do
        QRDMA_QEMU=$1 "$QRDMA_ROOT/scripts/$s" >>"$TAP_DETAILS" 2>&1 || return 1
    done
}

# build_qemu V: both builds of QEMU V, the output in its log.
build_qemu() {
    TAP_DETAILS=$QRDMA_ROOT/build/logs/qemu-version-$1-build.log
    QRDMA_QEMU=$1 "$QRDMA_ROOT/scripts/build-qemu" all >"$TAP_DETAILS" 2>&1
}

# qtests V: the qtests on QEMU V's sanitizer build, their TAP kept.
qtests() {
    TAP_DETAILS=$QRDMA_ROOT/build/vm-out/qtests-qemu$1.tap
    QRDMA_QEMU=$1 "$QRDMA_ROOT/scripts/run-qtests" >"$TAP_DETAILS" 2>&1
}

# vm_test V SCRIPT: one VM test on QEMU V.
vm_test() {
    local name=$2-qemu$1
    TAP_DETAILS=$QRDMA_ROOT/build/vm-out/$name.tap
    QRDMA_QEMU=$1 "$QRDMA_ROOT/scripts/run-vm-test" "$2.sh" --name "$name" -- \
        "${QRDMA_DEV[@]}" >"$TAP_DETAILS" 2>&1
}

# wire_pair V: test_wire_pair.py between two qrdma VMs on QEMU V, as
# meson's vm-wire-qrdma-qrdma, its logs named for V.
wire_pair() {
    TAP_DETAILS=$QRDMA_ROOT/build/vm-out/wire-qrdma-qrdma-qemu$1.tap
    QRDMA_QEMU=$1 QRDMA_RUN_SUFFIX=-qemu$1 "$QRDMA_ROOT/scripts/run-functional" \
        test_wire_pair.py WireQrdmaQrdma >"$TAP_DETAILS" 2>&1
}

mkdir -p "$QRDMA_ROOT/build/vm-out" "$QRDMA_ROOT/build/logs"
check "QEMU $v with qrdma: plain and ASan+UBSan builds" build_qemu "$v"
check "the guest image with qrdma, booted on QEMU $v if new" guest "$v"
check "qtests on QEMU $v under ASan+UBSan" qtests "$v"
echo "# qtests on QEMU $v: $(tap_counts "$QRDMA_ROOT/build/vm-out/qtests-qemu$v.tap")"
for s in driver-load provider-clients; do
    check "$s on QEMU $v" vm_test "$v" "$s"
    echo "# $s on QEMU $v: $(tap_counts "$QRDMA_ROOT/build/vm-out/$s-qemu$v.tap")"
done
check "wire-pair qrdma-qrdma on QEMU $v" wire_pair "$v"
echo "# wire-pair qrdma-qrdma on QEMU $v: $(tap_counts "$QRDMA_ROOT/build/vm-out/wire-qrdma-qrdma-qemu$v.tap")"
tap_end
