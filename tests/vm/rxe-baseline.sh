#!/bin/bash
# rxe baseline, run inside the guest as root by
#   scripts/run-vm --script tests/vm/rxe-baseline.sh
# Proves the guest's RDMA stack works on the software RoCE driver (rdma_rxe)
# before qrdma exists: same tools and checks qrdma must pass later. Prints
# TAP; exits nonzero if any test failed. Command output goes to
# $QRDMA_OUT/rxe-baseline/ (the host's --out directory) and is echoed as TAP
# comments on failure.
set -euo pipefail

NETDEV=${NETDEV:-eth0}
DEV=rxe0
LOGDIR=${QRDMA_OUT:-/tmp}/rxe-baseline
TESTS=(
    load_modules link_add port_active gid_index
    rc_pingpong write_bw link_delete dmesg_clean
)

GID_INDEX=
BW_GBPS=

# TAP plumbing and helpers (run_test, wait_listen, server_client).
. "${QRDMA_SRC:-/qrdma/src}/tests/vm/lib-qrdma.sh"

describe() {
    case $1 in
        load_modules) echo "load crc32_generic and rdma_rxe" ;;
        link_add) echo "rdma link add $DEV type rxe netdev $NETDEV" ;;
        port_active) echo "ibv_devinfo -d $DEV shows PORT_ACTIVE" ;;
        gid_index) echo "$DEV has a RoCE v2 IPv4 GID" ;;
        rc_pingpong) echo "ibv_rc_pingpong server and client on $DEV" ;;
        write_bw) echo "ib_write_bw loopback on $DEV reports bandwidth" ;;
        link_delete) echo "rdma link delete $DEV" ;;
    esac
}

# --- tests ------------------------------------------------------------------------

# rdma_rxe needs crc32 through the crypto API, which modules.dep omits.
t_load_modules() {
    modprobe crc32_generic &&
        modprobe rdma_rxe &&
        lsmod | grep -q '^rdma_rxe '
}

t_link_add() {
    rdma link add "$DEV" type rxe netdev "$NETDEV" &&
        rdma link show "$DEV/1"
}

t_port_active() {
    local i
    for i in $(seq 50); do
        ibv_devinfo -d "$DEV" 2>/dev/null | grep -q 'state:.*PORT_ACTIVE' && {
            ibv_devinfo -d "$DEV"; return 0; }
        sleep 0.1
    done
    ibv_devinfo -d "$DEV"
    return 1
}

t_gid_index() {
    GID_INDEX=$(roce_v2_gid_index "$DEV") || return 1
    echo "INFO: IPv4 RoCE v2 GID index $GID_INDEX"
}

t_rc_pingpong() {
    [ -n "$GID_INDEX" ] || { echo "no GID index"; return 1; }
    server_client "$LOGDIR/rc_pingpong" 18515 60 \
        ibv_rc_pingpong -d "$DEV" -g "$GID_INDEX" -n 200 -- \
        ibv_rc_pingpong -d "$DEV" -g "$GID_INDEX" -n 200 127.0.0.1 || return 1
    grep -E 'bytes in .* seconds' "$LOGDIR/rc_pingpong.client" | sed 's/^/INFO: /'
}

t_write_bw() {
    [ -n "$GID_INDEX" ] || { echo "no GID index"; return 1; }
    local bw=(ib_write_bw -d "$DEV" -x "$GID_INDEX" -F --report_gbits
              -s 65536 -n 1000)
    server_client "$LOGDIR/write_bw" 18515 120 "${bw[@]}" -- \
        "${bw[@]}" 127.0.0.1 || return 1
    # Result row: #bytes #iterations BW-peak BW-average MsgRate.
    BW_GBPS=$(awk '$1 == 65536 && $2 == 1000 {print $4}' "$LOGDIR/write_bw.client" | tail -n 1)
    [ -n "$BW_GBPS" ] || { echo "no result row"; return 1; }
    echo "INFO: ib_write_bw average $BW_GBPS Gb/s"
    awk -v bw="$BW_GBPS" 'BEGIN {exit !(bw > 0)}'
}

t_link_delete() {
    rdma link delete "$DEV" && ! rdma link show "$DEV/1" 2>/dev/null
}

run_tests
