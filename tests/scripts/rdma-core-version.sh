#!/usr/bin/env bash
# The provider on each rdma-core it supports beyond the default 56.1
# (issue 27): for each version, libqrdma built against that rdma-core
# (build-provider), the guest of the Debian release that packages it with
# the provider in it (install-guest, which builds that guest), and in it
# provider-clients, verbs-lifecycle and rdma-core's own suite beside rxe.
# On 44 also provider-clients on Linux 6.1: Debian 12's own stack, kernel
# and userspace.  A TAP line per version and step, with its counts; a
# failed VM test keeps its console under
# build/vm-logs/<test>-rdma-core-<version>.log.
#
#   RDMA_CORE_VERSIONS="44 65"   the versions (QRDMA_RDMA_CORE values)
#
# Slow (a guest userspace to build and 7 VM runs): for scripts/test-matrix,
# not test-all.
set -uo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"
. "$(dirname "$0")/lib-tap.sh"

VERSIONS=${RDMA_CORE_VERSIONS:-44 65}
SCRIPTS=(provider-clients verbs-lifecycle rdma-core-tests)

# run_one VERSION SCRIPT [KERNEL]: the VM test in the guest of VERSION (and
# KERNEL, else the default), its TAP kept beside its console.
run_one() {
    local v=$1 script=$2 kernel=${3:-} name tap
    name=$script-rdma-core-$v${kernel:+-$kernel}
    tap=$QRDMA_ROOT/build/vm-out/$name.tap
    TAP_DETAILS=$QRDMA_ROOT/build/vm-logs/$name.log
    QRDMA_RDMA_CORE=$v QRDMA_GUEST_KERNEL=$kernel \
        "$QRDMA_ROOT/scripts/run-vm-test" "$script.sh" --name "$name" -- \
        -device pcie-root-port,id=rp0,bus=pcie.0,chassis=1 \
        -device qrdma,bus=rp0 >"$tap" 2>&1
}

# counts NAME: "N passed, N skipped, N failed" of its TAP.
counts() {
    local tap=$QRDMA_ROOT/build/vm-out/$1.tap
    printf '%s passed, %s skipped, %s failed' "$(grep -c '^ok ' "$tap")" \
        "$(grep -c '^ok .*# SKIP' "$tap")" "$(grep -c '^not ok ' "$tap")"
}

report() {
    local name=$1 tap=$QRDMA_ROOT/build/vm-out/$1.tap
    echo "# $name: $(counts "$name")"
    grep '^not ok' "$tap" | sed 's/^/# /'
    # The suite's two columns, qrdma's and rxe's, as the test wrote them.
    [ "${name%%-rdma-core-*}" != rdma-core-tests ] ||
        grep -A3 '^# rdma-core .* tests/' "$tap" | sed 's/^# /#   /'
}

# step VERSION LOG CMD...: one build step of VERSION, its output in LOG.
step() {
    local v=$1
    TAP_DETAILS=$QRDMA_ROOT/build/logs/$2
    shift 2
    QRDMA_RDMA_CORE=$v "$@" >"$TAP_DETAILS" 2>&1
}

mkdir -p "$QRDMA_ROOT/build/vm-out" "$QRDMA_ROOT/build/vm-logs" "$QRDMA_ROOT/build/logs"
for v in $VERSIONS; do
    check "libqrdma against rdma-core $v (build-provider)" \
        step "$v" "build-provider-rdma-core-$v.log" "$QRDMA_ROOT/scripts/build-provider"
    check "the guest of rdma-core $v with qrdma (install-guest)" \
        step "$v" "install-guest-rdma-core-$v.log" "$QRDMA_ROOT/scripts/install-guest"
    for s in "${SCRIPTS[@]}"; do
        check "$s on rdma-core $v" run_one "$v" "$s"
        report "$s-rdma-core-$v"
    done
    case $v in
        44|44.0)
            check "the guest of rdma-core $v on Linux 6.1 (install-guest --kernel 6.1)" \
                step "$v" "install-guest-rdma-core-$v-6.1.log" \
                "$QRDMA_ROOT/scripts/install-guest" --kernel 6.1
            check "provider-clients on rdma-core $v and Linux 6.1, Debian 12's stack" \
                run_one "$v" provider-clients 6.1
            report "provider-clients-rdma-core-$v-6.1"
            ;;
    esac
done
tap_end
