#!/usr/bin/env bash
# The kernel's storage clients (tests/vm/clients-storage.sh: NFS/RDMA,
# iSER, SMB Direct, NVMe-oF with fio, each on qrdma beside rxe) run again
# and again in a VM while a CPU hog runs beside it on the host, as on a
# busy CI machine: a client that loses or delays a CM message or a
# completion under load fails one of the runs.  Each run is a TAP line;
# a failed run keeps its console and the guest's logs under
# build/vm-logs/storage-load-N.log and build/vm-out/storage-load-N/.
#
#   STORAGE_LOAD_RUNS=N   runs (default 10)
#   STORAGE_LOAD_HOGS=N   busy loops (default one per core but one); 0
#                         when something else already loads the host,
#                         such as a long fuzz run
#
# Slow (a VM run each): scripts/test-matrix runs it, not test-all.
set -uo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"
. "$(dirname "$0")/lib-tap.sh"

RUNS=${STORAGE_LOAD_RUNS:-10}
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || qrdma_die "STORAGE_LOAD_RUNS: a count"
HOGS=${STORAGE_LOAD_HOGS:-$(( $(nproc) > 1 ? $(nproc) - 1 : 1 ))}
[[ $HOGS =~ ^[0-9]+$ ]] || qrdma_die "STORAGE_LOAD_HOGS: a count"

# One busy loop per core but one: the VM's vCPU thread competes for the
# rest, and loses half the time.
hogs=()
stop_hogs() {
    [ ${#hogs[@]} -eq 0 ] || kill "${hogs[@]}" 2>/dev/null
    wait 2>/dev/null
}
start_hogs() {
    for _ in $(seq "$HOGS"); do
        (while :; do :; done) &
        hogs+=($!)
    done
}
trap stop_hogs EXIT

run_once() {
    local name=storage-load-$1
    TAP_DETAILS=$QRDMA_ROOT/build/vm-logs/$name.log
    "$QRDMA_ROOT/scripts/run-vm-test" clients-storage.sh --name "$name" -- \
        -device pcie-root-port,id=rp0,bus=pcie.0,chassis=1 \
        -device qrdma,bus=rp0 >"$QRDMA_ROOT/build/vm-out/$name.tap" 2>&1
}

# The host's packages, QEMU and the guest with qrdma, all incremental: a
# fresh clone runs the cell as one that built them does.
prepare() {
    TAP_DETAILS=$QRDMA_ROOT/build/logs/storage-load-prepare.log
    {
        "$QRDMA_ROOT/scripts/setup-host" &&
            "$QRDMA_ROOT/scripts/build-qemu" plain &&
            "$QRDMA_ROOT/scripts/install-guest"
    } >"$TAP_DETAILS" 2>&1
}

mkdir -p "$QRDMA_ROOT/build/vm-out" "$QRDMA_ROOT/build/vm-logs" "$QRDMA_ROOT/build/logs"
check "set-up: QEMU and the guest with qrdma" prepare || { tap_end; exit; }
start_hogs
for i in $(seq "$RUNS"); do
    check "clients-storage run $i of $RUNS with the host loaded" run_once "$i"
    grep '^not ok' "$QRDMA_ROOT/build/vm-out/storage-load-$i.tap" | sed 's/^/# /'
done
tap_end
