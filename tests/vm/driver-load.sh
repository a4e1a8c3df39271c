#!/bin/bash
# qrdma.ko in the guest: load, register, bring the RoCE port up, show it to
# the RDMA tools, unload, load again.  Run inside the guest as root by
#   scripts/build-driver && scripts/build-provider && scripts/install-guest
#   scripts/run-vm --script tests/vm/driver-load.sh -- \
#       -device pcie-root-port,id=rp0,bus=pcie.0,chassis=1 -device qrdma,bus=rp0
# The module is the image's (scripts/install-guest put it there).
# Prints TAP; exits nonzero if any test failed.  Command output goes to
# $QRDMA_OUT/driver-load/ and is echoed as TAP comments on failure.
set -euo pipefail

# run-vm copies the script to /qrdma/run: the library is in the checkout.
. "${QRDMA_SRC:-/qrdma/src}/tests/vm/lib-qrdma.sh"

LOGDIR=${QRDMA_OUT:-/tmp}/driver-load
TESTS=(
    load_modules registered irq_names $(qrdma_iommu_test) netdev_up port_active device_attrs
    roce_v2_gid kernel_objects restrack uverbs_abi
    hw_counters nvme_rdma port_follows_netdev qrdma_unload reload dmesg_clean
)

# Tests run in an `if` (run_test), where bash ignores errexit, so each
# checks its steps explicitly.
describe() {
    case $1 in
        load_modules) echo "modprobe qrdma (from the image) with ib_core and ib_uverbs" ;;
        registered) echo "$QRDMA_DEV registers with one port, link layer Ethernet" ;;
        irq_names) echo "the device's interrupts carry its PCI name, one per vector" ;;
        netdev_up) echo "the port's netdev comes up with $QRDMA_IP/24" ;;
        port_active) echo "rdma link: $QRDMA_DEV/1 ACTIVE, LINK_UP, on the netdev" ;;
        device_attrs) echo "$QRDMA_DEV reports the device's identity and limits" ;;
        roce_v2_gid) echo "the RoCE v2 GID of $QRDMA_IP is in the GID table" ;;
        kernel_objects) echo "ib_core's MAD agent made its PD, CQ and GSI QP" ;;
        restrack) echo "rdma res show pd/cq/qp/mr list $QRDMA_DEV's objects" ;;
        uverbs_abi) echo "user verbs ABI: context, doorbell mmap, bad input gets errno, S2/S3/S20/S40" ;;
        hw_counters) echo "hardware counters via rdma statistic and sysfs" ;;
        nvme_rdma) echo "NVMe over RDMA to itself: its MRs in restrack, 8 MiB and an ext4 file written, read back" ;;
        port_follows_netdev) echo "the port goes DOWN and ACTIVE with its netdev, and user verbs hear IBV_EVENT_PORT_ERR and IBV_EVENT_PORT_ACTIVE" ;;
        reload) echo "qrdma loads, registers and unloads again" ;;
    esac
}

# --- tests ------------------------------------------------------------------------

t_load_modules() {
    modinfo qrdma || { echo "no qrdma.ko in the image: run scripts/install-guest"; return 1; }
    # ib_uverbs as rdma-core's udev rules load it for a new device: from
    # Linux 7.x on, qrdma.ko uses none of its symbols.
    modprobe qrdma && modprobe ib_uverbs &&
        lsmod | grep -q '^ib_core ' &&
        lsmod | grep -q '^ib_uverbs ' &&
        lsmod | grep -q '^qrdma '
}

t_registered() {
    wait_for 10 test -d "$QRDMA_SYS" || { echo "no $QRDMA_SYS"; ls /sys/class/infiniband; return 1; }
    rdma dev show "$QRDMA_DEV" || return 1
    ls "$QRDMA_SYS/ports"
    [ "$(ls "$QRDMA_SYS/ports")" = 1 ] || { echo "ports: $(ls "$QRDMA_SYS/ports")"; return 1; }
    echo "link_layer: $(cat "$QRDMA_SYS/ports/1/link_layer")"
    [ "$(cat "$QRDMA_SYS/ports/1/link_layer")" = Ethernet ] || return 1
    echo "node_type: $(cat "$QRDMA_SYS/node_type")"
    grep -q '^1: CA' "$QRDMA_SYS/node_type"
}

# Two qrdma functions in one guest must be told apart in /proc/interrupts:
# every vector's name ends in the function's PCI name.
t_irq_names() {
    local bdf lines
    bdf=$(basename "$(readlink -f "$QRDMA_SYS/device")")
    lines=$(grep -E ' qrdma-' /proc/interrupts) || { echo "no qrdma interrupts"; return 1; }
    echo "$lines"
    grep -qE " qrdma-admin@pci:$bdf\$" <<<"$lines" || return 1
    grep -qE " qrdma-comp1@pci:$bdf\$" <<<"$lines" || return 1
    ! grep -vqE " qrdma-(admin|comp[0-9]+)@pci:$bdf\$" <<<"$lines"
}

t_netdev_up() {
    qrdma_setup_netdev || return 1
    echo "INFO: netdev $QRDMA_NETDEV, MAC $(cat "/sys/class/net/$QRDMA_NETDEV/address")"
    wait_for 10 sh -c "ip -br link show $QRDMA_NETDEV | grep -q LOWER_UP" || {
        ip link show "$QRDMA_NETDEV"; return 1; }
    ip addr show "$QRDMA_NETDEV"
}

t_port_active() {
    local out
    wait_for 10 sh -c "rdma link show $QRDMA_DEV/1 | grep -q 'state ACTIVE'" || true
    out=$(rdma link show "$QRDMA_DEV/1") || return 1
    echo "$out"
    grep -q 'state ACTIVE' <<<"$out" &&
        grep -q 'physical_state LINK_UP' <<<"$out" &&
        grep -q "netdev $QRDMA_NETDEV" <<<"$out"
}

t_device_attrs() {
    local out
    out=$(rdma dev show "$QRDMA_DEV" -d) || return 1
    echo "$out"
    echo "fw_ver: $(cat "$QRDMA_SYS/fw_ver")"
    [ "$(cat "$QRDMA_SYS/fw_ver")" = 1.0 ] || return 1
    echo "node_guid: $(cat "$QRDMA_SYS/node_guid")"
    [ "$(cat "$QRDMA_SYS/node_guid")" != 0000:0000:0000:0000 ] || return 1
    echo "hca_type/hw_rev: $(cat "$QRDMA_SYS/hw_rev" 2>/dev/null)"
    grep -q 'node_type ca' <<<"$out"
}

# The GID made from the IPv4 address: ::ffff:a.b.c.d, type RoCE v2, on
# the port's netdev.
t_roce_v2_gid() {
    local ndev
    qrdma_find_gid || return 1
    ndev=$(cat "$QRDMA_SYS/ports/1/gid_attrs/ndevs/$QRDMA_GID_INDEX")
    echo "INFO: RoCE v2 GID index $QRDMA_GID_INDEX on $ndev"
    [ "$ndev" = "$QRDMA_NETDEV" ]
}

# ib_core's MAD layer opens every port: a PD, a CQ and the GSI QP (QPN 1)
# with receives posted, all through this driver's verbs.
t_kernel_objects() {
    local out
    out=$(rdma res show qp link "$QRDMA_DEV/1") || return 1
    echo "$out"
    grep -qE 'lqpn 1 .*type GSI' <<<"$out" || return 1
    grep -qE 'state (RTS|RTR|INIT)' <<<"$out"
}

t_restrack() {
    local kind out
    for kind in pd cq qp mr; do
        echo "--- rdma res show $kind"
        out=$(rdma res show "$kind") || return 1
        echo "$out"
        case $kind in
            mr) ;;  # the MAD agent registers none: the local DMA lkey
            *) grep -qE "(dev|link) $QRDMA_DEV\b" <<<"$out" || return 1 ;;
        esac
    done
    rdma res show "$QRDMA_DEV" || return 1
}

# Without a provider libibverbs ignores the device: the test program
# speaks uverbs itself (tests/vm/uverbs-abi.c, built by build-driver).
t_uverbs_abi() {
    local bin=$QRDMA_SRC_DIR/guest-driver/qrdma-uverbs-abi out totals
    [ -x "$bin" ] || { echo "no $bin: run scripts/build-driver on the host"; return 1; }
    out=$("$bin" 2>&1)
    local rc=$?
    echo "$out"
    # kselftest.h's totals, which the program prints however it ends,
    # a bail-out too; a program that died before them has none.
    totals=$(sed -n 's/^# Totals: //p' <<<"$out" | tail -n 1)
    echo "INFO: user ABI checks: ${totals:-no totals, exit $rc}"
    [ "$rc" -eq 0 ] || return 1
    # Closing the file destroyed the context and everything in it.
    [ "$(cat "$QRDMA_SYS/ports/1/hw_counters/live_uctx")" = 0 ]
}

t_hw_counters() {
    local out cmds
    out=$(rdma statistic show link "$QRDMA_DEV/1") || return 1
    echo "$out"
    cmds=$(grep -oE '\bcmds [0-9]+' <<<"$out" | awk '{print $2}')
    [ -n "$cmds" ] && [ "$cmds" -gt 0 ] || { echo "no cmds counter"; return 1; }
    echo "INFO: $cmds device commands so far"
    ls "$QRDMA_SYS/ports/1/hw_counters" || return 1
    echo "live_qp: $(cat "$QRDMA_SYS/ports/1/hw_counters/live_qp")"
    # The driver never makes the device refuse anything.
    [ "$(cat "$QRDMA_SYS/ports/1/hw_counters/live_qp")" -ge 1 ] &&
        [ "$(cat "$QRDMA_SYS/ports/1/hw_counters/cmd_timeouts")" = 0 ] &&
        [ "$(cat "$QRDMA_SYS/ports/1/hw_counters/guest_errors")" = 0 ]
}

# A kernel consumer of the whole data path: NVMe over RDMA from this guest
# to itself (nvmet-rdma serving a memory-backed null_blk, nvme-rdma
# connecting), i.e. the connection manager's MADs on the GSI QP (UD, AHs
# made without sleeping), RC QPs, fast-registration MRs, SEND with
# invalidate, RDMA READ and WRITE, completion events, over the port's
# IPv4 address.  A filesystem on the remote namespace must then write,
# read back and verify.
NVMET=/sys/kernel/config/nvmet
NQN=qrdma-test
nvme_teardown() {
    local c
    for c in /sys/class/nvme/nvme*; do
        [ "$(cat "$c/transport" 2>/dev/null)" = rdma ] &&
            echo 1 >"$c/delete_controller"
    done
    rm -f "$NVMET/ports/1/subsystems/$NQN"
    rmdir "$NVMET/ports/1" 2>/dev/null
    echo 0 >"$NVMET/subsystems/$NQN/namespaces/1/enable" 2>/dev/null
    rmdir "$NVMET/subsystems/$NQN/namespaces/1" "$NVMET/subsystems/$NQN" 2>/dev/null
    modprobe -r nvme-rdma nvmet-rdma null_blk 2>/dev/null
    true
}

t_nvme_rdma() {
    local addr c ns nmr out=$LOGDIR/nvme
    modprobe null_blk nr_devices=1 memory_backed=1 gb=1 &&
        modprobe nvmet-rdma && modprobe nvme-rdma || return 77
    mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
    addr=$QRDMA_IP
    echo "target $addr"
    mkdir -p "$NVMET/subsystems/$NQN/namespaces/1" "$NVMET/ports/1" &&
        echo 1 >"$NVMET/subsystems/$NQN/attr_allow_any_host" &&
        echo -n /dev/nullb0 >"$NVMET/subsystems/$NQN/namespaces/1/device_path" &&
        echo 1 >"$NVMET/subsystems/$NQN/namespaces/1/enable" &&
        echo rdma >"$NVMET/ports/1/addr_trtype" &&
        echo ipv4 >"$NVMET/ports/1/addr_adrfam" &&
        echo "$addr" >"$NVMET/ports/1/addr_traddr" &&
        echo 4420 >"$NVMET/ports/1/addr_trsvcid" &&
        ln -s "$NVMET/subsystems/$NQN" "$NVMET/ports/1/subsystems/$NQN" || {
        nvme_teardown; return 1; }
    timeout 120 sh -c "echo transport=rdma,traddr=$addr,trsvcid=4420,nqn=$NQN,nr_io_queues=2 >/dev/nvme-fabrics" || {
        echo "connect failed"; nvme_teardown; return 1; }
    # The namespace's block device (with native multipath, the head
    # node nvmeXnY, not the hidden per-path nvmeXcYnZ).
    wait_for 10 sh -c 'ls -d /sys/block/nvme*n1 | grep -qv "c[0-9]*n1"' || {
        echo "no namespace"; nvme_teardown; return 1; }
    ns=/dev/$(basename "$(ls -d /sys/block/nvme*n1 | grep -v 'c[0-9]*n1' |
                          head -n 1)")
    wait_for 5 test -b "$ns" || { echo "$ns is no block device"; nvme_teardown; return 1; }
    echo "namespace $ns"
    rdma res show qp link "$QRDMA_DEV/1"
    # nvme-rdma's fast-registration MR pools, in resource tracking.
    nmr=$(rdma res show mr dev "$QRDMA_DEV" | grep -c "dev $QRDMA_DEV ") || true
    echo "INFO: rdma res show mr: $nmr MRs of $QRDMA_DEV while connected"
    [ "$nmr" -gt 0 ] || { rdma res show mr; nvme_teardown; return 1; }
    head -c 8M /dev/urandom >"$out.w"
    dd if="$out.w" of="$ns" bs=1M oflag=direct 2>&1 &&
        dd if="$ns" of="$out.r" bs=1M count=8 iflag=direct 2>&1 &&
        cmp "$out.w" "$out.r" || { nvme_teardown; return 1; }
    if command -v mkfs.ext4 >/dev/null; then
        mkdir -p /mnt/nvme &&
            mkfs.ext4 -q -F "$ns" && mount "$ns" /mnt/nvme &&
            cp "$out.w" /mnt/nvme/data && sync && umount /mnt/nvme &&
            mount "$ns" /mnt/nvme && cmp "$out.w" /mnt/nvme/data &&
            umount /mnt/nvme || { echo "filesystem check failed"; umount /mnt/nvme 2>/dev/null; nvme_teardown; return 1; }
        echo "INFO: ext4 on the remote namespace: written, remounted, verified"
    else
        echo "no mkfs.ext4 in the guest"; nvme_teardown; return 1
    fi
    echo "INFO: 8 MiB over NVMe/RDMA on $QRDMA_DEV, $(rdma res show qp link "$QRDMA_DEV/1" | grep -c 'type RC') RC QPs"
    nvme_teardown
    echo "completion_events $(cat "$QRDMA_SYS/ports/1/hw_counters/completion_events")"
    echo "guest_errors $(cat "$QRDMA_SYS/ports/1/hw_counters/guest_errors")"
    [ "$(cat "$QRDMA_SYS/ports/1/hw_counters/guest_errors")" = 0 ] &&
        [ "$(cat "$QRDMA_SYS/ports/1/hw_counters/completion_events")" -gt 0 ]
}

# The driver hears of its netdev through a netdevice notifier: the port's
# state and the async events user verbs get must follow ip link.
t_port_follows_netdev() {
    local watch=$LOGDIR/asyncwatch.out pid rc=0
    stdbuf -oL ibv_asyncwatch -d "$QRDMA_DEV" >"$watch" 2>&1 &
    pid=$!
    wait_for 10 grep -q 'async event FD' "$watch" || {
        cat "$watch"; kill "$pid"; return 1; }
    ip link set "$QRDMA_NETDEV" down &&
        wait_for 10 sh -c "rdma link show $QRDMA_DEV/1 | grep -q 'state DOWN'" || {
        echo "the port did not go DOWN with its netdev"; rc=1; }
    wait_for 10 grep -q IBV_EVENT_PORT_ERR "$watch" || {
        echo "no IBV_EVENT_PORT_ERR"; rc=1; }
    ip link set "$QRDMA_NETDEV" up &&
        wait_for 10 sh -c "rdma link show $QRDMA_DEV/1 | grep -q 'state ACTIVE'" || {
        echo "the port did not come back ACTIVE"; rc=1; }
    wait_for 10 grep -q IBV_EVENT_PORT_ACTIVE "$watch" || {
        echo "no IBV_EVENT_PORT_ACTIVE"; rc=1; }
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    rdma link show "$QRDMA_DEV/1"
    cat "$watch"
    return "$rc"
}

t_reload() {
    modprobe qrdma || return 1
    wait_for 10 test -d "$QRDMA_SYS" || { echo "no $QRDMA_SYS"; return 1; }
    rdma dev show "$QRDMA_DEV" && rdma link show "$QRDMA_DEV/1" || return 1
    QRDMA_NETDEV=
    t_qrdma_unload
}

run_tests
