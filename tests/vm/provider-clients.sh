#!/bin/bash
# libqrdma under real rdma-core clients: the libibverbs examples, perftest
# (verbs and rdma_cm connection setup) and rping, server and client in one
# guest over qrdma's loopback fabric.  Run inside the guest as root by
#   scripts/build-driver && scripts/build-provider && scripts/install-guest
#   scripts/run-vm --script tests/vm/provider-clients.sh -- \
#       -device pcie-root-port,id=rp0,bus=pcie.0,chassis=1 -device qrdma,bus=rp0
# Prints TAP; exits nonzero if any test failed.  Command output goes to
# $QRDMA_OUT/provider-clients/ and is shown as TAP comments on failure.
set -euo pipefail

# run-vm copies the script to /qrdma/run: the library is in the checkout.
. "${QRDMA_SRC:-/qrdma/src}/tests/vm/lib-qrdma.sh"

LOGDIR=${QRDMA_OUT:-/tmp}/provider-clients
# Perftest iterations: the guest runs under TCG, so few.
ITERS=${ITERS:-500}   # a multiple of the post list of send_bw_post_list
TESTS=(
    qrdma_setup $(qrdma_iommu_test) devinfo
    rc_pingpong rc_pingpong_events uc_pingpong ud_pingpong srq_pingpong
    send_bw write_bw read_bw atomic_bw
    send_lat write_lat read_lat atomic_lat
    send_bw_ud send_lat_ud write_bw_uc send_bw_srq send_bw_events
    write_bw_multi_qp send_bw_post_list send_bw_bidir send_lat_inline
    send_bw_cm write_bw_cm read_bw_cm atomic_bw_cm
    send_lat_cm write_lat_cm read_lat_cm atomic_lat_cm
    rping
    no_guest_errors qrdma_unload dmesg_clean
)

describe() {
    case $1 in
        devinfo) echo "ibv_devinfo -v: $QRDMA_DEV through libqrdma" ;;
        rc_pingpong) echo "ibv_rc_pingpong" ;;
        rc_pingpong_events) echo "ibv_rc_pingpong -e (completion events)" ;;
        uc_pingpong) echo "ibv_uc_pingpong" ;;
        ud_pingpong) echo "ibv_ud_pingpong" ;;
        srq_pingpong) echo "ibv_srq_pingpong" ;;
        send_bw) echo "ib_send_bw" ;;
        write_bw) echo "ib_write_bw" ;;
        read_bw) echo "ib_read_bw" ;;
        atomic_bw) echo "ib_atomic_bw" ;;
        send_lat) echo "ib_send_lat" ;;
        write_lat) echo "ib_write_lat" ;;
        read_lat) echo "ib_read_lat" ;;
        atomic_lat) echo "ib_atomic_lat" ;;
        send_bw_ud) echo "ib_send_bw -c UD" ;;
        send_lat_ud) echo "ib_send_lat -c UD" ;;
        write_bw_uc) echo "ib_write_bw -c UC" ;;
        send_bw_srq) echo "ib_send_bw --use-srq" ;;
        send_bw_events) echo "ib_send_bw -e (completion events)" ;;
        write_bw_multi_qp) echo "ib_write_bw -q 8 (eight QPs)" ;;
        send_bw_post_list) echo "ib_send_bw -l 10 (10 WRs per post_send)" ;;
        send_bw_bidir) echo "ib_send_bw -b (bidirectional)" ;;
        send_lat_inline) echo "ib_send_lat -I 128 (inline sends)" ;;
        send_bw_cm) echo "ib_send_bw -R (rdma_cm)" ;;
        write_bw_cm) echo "ib_write_bw -R (rdma_cm)" ;;
        read_bw_cm) echo "ib_read_bw -R (rdma_cm)" ;;
        atomic_bw_cm) echo "ib_atomic_bw -R (rdma_cm)" ;;
        send_lat_cm) echo "ib_send_lat -R (rdma_cm)" ;;
        write_lat_cm) echo "ib_write_lat -R (rdma_cm)" ;;
        read_lat_cm) echo "ib_read_lat -R (rdma_cm)" ;;
        atomic_lat_cm) echo "ib_atomic_lat -R (rdma_cm)" ;;
        rping) echo "rping (rdma_cm, RDMA READ/WRITE and SEND)" ;;
        no_guest_errors) echo "the device refused nothing (guest_errors 0)" ;;
    esac
}

need_setup() {
    [ -n "$QRDMA_GID_INDEX" ] || { echo "setup failed"; return 1; }
}

# --- tests ------------------------------------------------------------------------

t_devinfo() {
    local out
    need_setup || return 1
    out=$(ibv_devinfo -v -d "$QRDMA_DEV" 2>&1) || { echo "$out"; return 1; }
    echo "$out"
    grep -q "hca_id:[[:space:]]*$QRDMA_DEV" <<<"$out" &&
        grep -q 'fw_ver:[[:space:]]*1\.0$' <<<"$out" &&
        grep -q 'vendor_id:[[:space:]]*0x1af4' <<<"$out" &&
        grep -q 'state:[[:space:]]*PORT_ACTIVE' <<<"$out" &&
        grep -q 'link_layer:[[:space:]]*Ethernet' <<<"$out" &&
        grep -qE 'max_qp:[[:space:]]*[1-9]' <<<"$out" &&
        grep -qE 'max_cqe:[[:space:]]*[1-9]' <<<"$out" &&
        grep -qE "GID\[ *$QRDMA_GID_INDEX\]:[[:space:]]*::ffff:$QRDMA_IP, RoCE v2" <<<"$out"
}

# pingpong NAME ARGS...: ibv_NAME server and client over TCP port 18515.
pingpong() {
    local prog=$1
    shift
    need_setup || return 1
    server_client "$LOGDIR/$prog" 18515 120 \
        "$prog" -d "$QRDMA_DEV" -g "$QRDMA_GID_INDEX" "$@" -- \
        "$prog" -d "$QRDMA_DEV" -g "$QRDMA_GID_INDEX" "$@" 127.0.0.1 || return 1
    grep -E 'iters in' "$LOGDIR/$prog.client" | sed 's/^/INFO: /'
}

t_rc_pingpong() { pingpong ibv_rc_pingpong -n 500; }
t_rc_pingpong_events() { pingpong ibv_rc_pingpong -n 200 -e; }
t_uc_pingpong() { pingpong ibv_uc_pingpong -n 500; }
# UD messages fit the path MTU (1024 at the default netdev MTU).
t_ud_pingpong() {
    pingpong ibv_ud_pingpong -n 500 -s 512 && return 0
    if grep -q 'Failed to create AH' "$LOGDIR/ibv_ud_pingpong.server"; then
        echo "ibv_create_ah failed: a user AH needs .create_user_ah in qrdma.ko's ib_device_ops"
    fi
    return 1
}
t_srq_pingpong() { pingpong ibv_srq_pingpong -n 200 -q 8; }

# perftest NAME ARGS...: server and client of ib_NAME over TCP port 18515;
# the client's result row is the last line starting with a number.
perftest() {
    local prog=$1 row
    shift
    need_setup || return 1
    server_client "$LOGDIR/$prog" 18515 180 \
        "$prog" -d "$QRDMA_DEV" -x "$QRDMA_GID_INDEX" -F "$@" -- \
        "$prog" -d "$QRDMA_DEV" -x "$QRDMA_GID_INDEX" -F "$@" 127.0.0.1 || return 1
    row=$(grep -E '^[[:space:]]*[0-9]+[[:space:]]+[0-9]+' "$LOGDIR/$prog.client" | tail -n 1)
    [ -n "$row" ] || { echo "no result row"; return 1; }
    echo "INFO: $prog: $(tr -s ' \t' ' ' <<<"$row")"
}

# perftest_cm NAME ARGS...: the same, connected by rdma_cm (-R) to the
# port's address.
perftest_cm() {
    local prog=$1 row
    shift
    need_setup || return 1
    server_client "$LOGDIR/$prog-cm" cm:18515 180 \
        "$prog" -R -d "$QRDMA_DEV" -F "$@" -- \
        "$prog" -R -d "$QRDMA_DEV" -F "$@" "$QRDMA_IP" || return 1
    row=$(grep -E '^[[:space:]]*[0-9]+[[:space:]]+[0-9]+' "$LOGDIR/$prog-cm.client" | tail -n 1)
    [ -n "$row" ] || { echo "no result row"; return 1; }
    echo "INFO: $prog -R: $(tr -s ' \t' ' ' <<<"$row")"
}

t_send_bw() { perftest ib_send_bw -n "$ITERS"; }
t_write_bw() { perftest ib_write_bw -n "$ITERS"; }
t_read_bw() { perftest ib_read_bw -n "$ITERS"; }
t_atomic_bw() { perftest ib_atomic_bw -n "$ITERS"; }
t_send_lat() { perftest ib_send_lat -n "$ITERS"; }
t_write_lat() { perftest ib_write_lat -n "$ITERS"; }
t_read_lat() { perftest ib_read_lat -n "$ITERS"; }
t_atomic_lat() { perftest ib_atomic_lat -n "$ITERS"; }
# UD messages fit the path MTU.
t_send_bw_ud() { perftest ib_send_bw -n "$ITERS" -c UD -s 1024; }
t_send_lat_ud() { perftest ib_send_lat -n "$ITERS" -c UD; }
t_write_bw_uc() { perftest ib_write_bw -n "$ITERS" -c UC; }
t_send_bw_srq() { perftest ib_send_bw -n "$ITERS" --use-srq; }
t_send_bw_events() { perftest ib_send_bw -n "$ITERS" -e; }
t_write_bw_multi_qp() { perftest ib_write_bw -n "$ITERS" -q 8; }
t_send_bw_post_list() { perftest ib_send_bw -n "$ITERS" -l 10; }
t_send_bw_bidir() { perftest ib_send_bw -n "$ITERS" -b; }
t_send_lat_inline() { perftest ib_send_lat -n "$ITERS" -I 128 -s 128; }
t_send_bw_cm() { perftest_cm ib_send_bw -n "$ITERS"; }
t_write_bw_cm() { perftest_cm ib_write_bw -n "$ITERS"; }
t_read_bw_cm() { perftest_cm ib_read_bw -n "$ITERS"; }
t_atomic_bw_cm() { perftest_cm ib_atomic_bw -n "$ITERS"; }
t_send_lat_cm() { perftest_cm ib_send_lat -n "$ITERS"; }
t_write_lat_cm() { perftest_cm ib_write_lat -n "$ITERS"; }
t_read_lat_cm() { perftest_cm ib_read_lat -n "$ITERS"; }
t_atomic_lat_cm() { perftest_cm ib_atomic_lat -n "$ITERS"; }

t_rping() {
    need_setup || return 1
    server_client "$LOGDIR/rping" cm:7174 120 \
        rping -s -a "$QRDMA_IP" -C 20 -v -- \
        rping -c -a "$QRDMA_IP" -C 20 -v || return 1
    [ "$(grep -c 'ping data' "$LOGDIR/rping.client")" -eq 20 ] || {
        echo "the client did not print 20 pings"
        return 1
    }
}

t_no_guest_errors() {
    local n
    need_setup || return 1
    n=$(qrdma_counter guest_errors) || return 1
    echo "INFO: guest_errors $n, stale_cqes $(qrdma_counter stale_cqes)"
    [ "$n" = 0 ]
}

run_tests
