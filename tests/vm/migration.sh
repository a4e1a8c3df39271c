# shellcheck shell=bash
# A VM that migrates while it talks RDMA: the guest side of
# tests/functional/test_migration.py, which boots one VM with a qrdma
# device, runs these functions in it one at a time through its command
# channel (some in the background), and live-migrates the VM, or saves
# and loads it, itself meanwhile.  Sourced there after lib-qrdma.sh; never
# run.  Each function's output is the host's; its status says how it went
# (0 passed, 77 skipped, anything else failed), and its "INFO: " lines end
# up under the step's TAP line.
#
# Server and client are both in this guest, on qrdma0, which carries their
# packets on its own loopback.  While the VM migrates the host unmounts
# the 9p shares (QEMU's 9p refuses to migrate while one is mounted): what
# runs meanwhile is the image's (ibv_rc_pingpong, fio, nvme), and keeps
# its files in MIG_LOG, on the guest's tmpfs.

MIG_LOG=/tmp/migration
NQN=qrdma-migration
NVMET=/sys/kernel/config/nvmet
NVME_PORT=4420
# What a function prints once its traffic runs: the host migrates then.
UNDER_WAY='# under way'
mkdir -p "$MIG_LOG"

# mig_device: qrdma0 up, as lib-qrdma.sh's qrdma_setup leaves it (the
# driver loaded, $QRDMA_IP on its netdev, $QRDMA_GID_INDEX found), quietly;
# a second call finds it so.
mig_device() {
    qrdma_setup >"$MIG_LOG/setup.out" 2>&1 || { cat "$MIG_LOG/setup.out"; return 1; }
}

# t_setup: the device up, what it is.
t_setup() {
    qrdma_setup || return 1
    rdma link show "$QRDMA_DEV/1"
}

# pingpong PORT ITERS: ibv_rc_pingpong -c (each side checks the data it
# receives) of ITERS round trips between a server and a client in this
# guest, over TCP port PORT for the set-up; says UNDER_WAY once the client
# has its peer's address and the round trips start.  Both must exit 0.
# Each polls its CQ without a pause: on a vCPU of its own each, as they
# are put, a round trip takes some 0.3 ms under TCG; on one vCPU, where
# the scheduler may put them, one waits for the other's time slice, some
# 3 ms, and the rate the host sizes the next pingpong by would be off by
# ten.
pingpong() {
    local port=$1 iters=$2 out=$MIG_LOG/pp.$1 spid cpid src=0 crc=0 pp
    local server_cpu=() client_cpu=()
    mig_device || return 1
    pp=(ibv_rc_pingpong -d "$QRDMA_DEV" -g "$QRDMA_GID_INDEX" -p "$port" -c -n "$iters")
    if [ "$(nproc)" -ge 2 ]; then
        server_cpu=(taskset -c 0) client_cpu=(taskset -c 1)
    fi
    # Line-buffered, so that the client's addresses are in its file as it
    # prints them.
    "${server_cpu[@]}" stdbuf -oL "${pp[@]}" >"$out.server" 2>&1 &
    spid=$!
    wait_listen "$port" || { kill "$spid"; wait "$spid"; cat "$out.server"; return 1; }
    "${client_cpu[@]}" stdbuf -oL "${pp[@]}" 127.0.0.1 >"$out.client" 2>&1 &
    cpid=$!
    if wait_for 60 sh -c "grep -q 'remote address' $out.client || ! kill -0 $cpid"; then
        grep -q 'remote address' "$out.client" && echo "$UNDER_WAY: $iters round trips"
    fi
    wait "$cpid" || crc=$?
    # A server whose client failed may wait for it forever.
    [ "$crc" = 0 ] || kill "$spid" 2>/dev/null
    wait "$spid" || src=$?
    echo "--- server: ${pp[*]} (exit $src)"
    cat "$out.server"
    echo "--- client: ${pp[*]} 127.0.0.1 (exit $crc)"
    cat "$out.client"
    [ "$src" = 0 ] && [ "$crc" = 0 ] || return 1
    sed -n 's/^\([0-9]* iters in .*\)/INFO: client: \1/p' "$out.client"
}

# nvme_up: NVMe over RDMA from this guest to itself: nvmet-rdma on
# $QRDMA_IP serving a 128 MiB brd RAM disk, nvme-rdma connected to it (as
# driver-load.sh's nvme_rdma test, with nvme-cli).
nvme_up() {
    local ns=$NVMET/subsystems/$NQN/namespaces/1
    mig_device || return 1
    modprobe brd rd_nr=1 rd_size=131072 && modprobe nvmet-rdma && modprobe nvme-rdma ||
        return 1
    mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
    mkdir -p "$ns" "$NVMET/ports/1" &&
        echo 1 >"$NVMET/subsystems/$NQN/attr_allow_any_host" &&
        echo -n /dev/ram0 >"$ns/device_path" &&
        echo 1 >"$ns/enable" &&
        echo rdma >"$NVMET/ports/1/addr_trtype" &&
        echo ipv4 >"$NVMET/ports/1/addr_adrfam" &&
        echo "$QRDMA_IP" >"$NVMET/ports/1/addr_traddr" &&
        echo "$NVME_PORT" >"$NVMET/ports/1/addr_trsvcid" &&
        ln -s "$NVMET/subsystems/$NQN" "$NVMET/ports/1/subsystems/$NQN" &&
        wait_listen_rdma "$NVME_PORT" || { nvme_down; return 1; }
    timeout 120 nvme connect -t rdma -a "$QRDMA_IP" -s "$NVME_PORT" -n "$NQN" -i 2 ||
        { echo "nvme connect failed"; nvme_down; return 1; }
    wait_for 20 nvme_namespace || { echo "no namespace"; nvme_down; return 1; }
    echo "INFO: $NQN over $QRDMA_IP on $QRDMA_DEV: $(nvme_namespace)," \
        "$(rdma res show qp link "$QRDMA_DEV/1" | grep -c 'type RC') RC QPs"
}

# nvme_writes: the writes the NVMe block devices completed.
nvme_writes() {
    cat /sys/block/nvme*/stat 2>/dev/null | awk '{n += $5} END {print n + 0}'
}

# writes_or_gone PID: the NVMe devices completed writes, or PID is gone.
writes_or_gone() {
    [ "$(nvme_writes)" -gt 0 ] || ! kill -0 "$1"
}

# nvme_fio SECONDS: fio on the namespace for SECONDS, writing blocks of
# 4-64 KiB at random with a CRC32C in each and reading back every 64
# written blocks, checked (verify_backlog), as it goes; says UNDER_WAY
# once the namespace has completed writes of fio's.  fio exits nonzero on
# one bad block.
nvme_fio() {
    local ns secs=$1 rc=0 pid read_io
    ns=$(nvme_namespace) || { echo "no namespace"; return 1; }
    timeout $((secs + 300)) fio --name=verify --filename="$ns" --ioengine=libaio --direct=1 \
        --rw=randwrite --bsrange=4k-64k --iodepth=8 --size=64M \
        --time_based --runtime="$secs" \
        --verify=crc32c --do_verify=1 --verify_backlog=64 --verify_fatal=1 --randseed=1 \
        >"$MIG_LOG/fio.out" 2>&1 &
    pid=$!
    # Writes completed (the fifth field of a block device's stat), on the
    # namespace's paths or its head.
    if wait_for 60 writes_or_gone "$pid"; then
        kill -0 "$pid" 2>/dev/null &&
            echo "$UNDER_WAY: fio on $ns for $secs s, $(nvme_writes) writes done"
    fi
    wait "$pid" || rc=1
    cat "$MIG_LOG/fio.out"
    [ "$rc" = 0 ] || { dmesg | grep -iE 'nvme|qrdma|rdma' | tail -n 30; return 1; }
    # What it read back is what it checked: none would be a check of nothing.
    read_io=$(sed -n 's/^ *READ: .* io=\([^ ,]*\).*/\1/p' "$MIG_LOG/fio.out")
    if [ -z "$read_io" ] || [ "${read_io%%[!0-9.]*}" = 0 ]; then
        echo "fio read nothing back"
        return 1
    fi
    echo "INFO: fio: $(sed -n 's/^ *WRITE: .* io=\([^ ,]*\).*/\1/p' "$MIG_LOG/fio.out") written," \
        "$read_io read back with its CRC32C right, in $secs s"
}

# nvme_down: the controller disconnected and the target gone, whatever
# state nvme_up left them in.
nvme_down() {
    local c
    for c in /sys/class/nvme/nvme*; do
        [ "$(cat "$c/transport" 2>/dev/null)" = rdma ] &&
            echo 1 >"$c/delete_controller"
    done
    wait_for 30 sh -c '! ls /sys/class/nvme-fabrics/ctl 2>/dev/null | grep -q ^nvme' ||
        { echo "the controller stayed"; return 1; }
    rm -f "$NVMET/ports/1/subsystems/$NQN"
    rmdir "$NVMET/ports/1" 2>/dev/null
    echo 0 >"$NVMET/subsystems/$NQN/namespaces/1/enable" 2>/dev/null
    rmdir "$NVMET/subsystems/$NQN/namespaces/1" "$NVMET/subsystems/$NQN" 2>/dev/null
    modprobe -r nvme-rdma nvmet-rdma brd 2>/dev/null
    true
}

# mark_file NAME / marked NAME: a file in the guest's tmpfs, which a
# loadvm of a snapshot saved before it was made takes away.
mark_file() {
    date >"$MIG_LOG/mark.$1"
}

not_marked() {
    [ ! -e "$MIG_LOG/mark.$1" ] || { echo "$MIG_LOG/mark.$1 is still there"; return 1; }
}

# t_device_down: rmmod qrdma leaves no device or netdev behind, nor any
# resource the device counts; dmesg is clean.
t_device_down() {
    mig_device || return 1
    echo "live_qp $(qrdma_counter live_qp), guest_errors $(qrdma_counter guest_errors)," \
        "cmd_timeouts $(qrdma_counter cmd_timeouts)"
    [ "$(qrdma_counter guest_errors)" = 0 ] && [ "$(qrdma_counter cmd_timeouts)" = 0 ] ||
        return 1
    t_qrdma_unload || return 1
    t_dmesg_clean
}
