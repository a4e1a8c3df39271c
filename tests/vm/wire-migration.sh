# shellcheck shell=bash
# A VM that migrates while it talks RDMA to another over the wire: the
# guest halves of tests/functional/test_wire_migration.py, which boots A
# and B (B qrdma, A qrdma or rxe), runs these functions in them through
# their command channels, and live-migrates B, whose traffic runs, itself
# meanwhile.  Sourced there after lib-qrdma.sh and lib-pair.sh (and
# pair_args); never run.
#
# A serves (ibv_rc_pingpong's server, an NVMe/RDMA target), B is the
# client.  While B migrates the host unmounts its 9p shares (QEMU's 9p
# refuses to migrate while one is mounted): what B runs meanwhile is the
# image's (ibv_rc_pingpong, fio, nvme) and keeps its files in MIG_LOG, on
# the guest's tmpfs.  A function whose traffic runs says UNDER_WAY: the
# host migrates B then.

MIG_LOG=/tmp/wire-migration
NQN=qrdma-wire-migration
NVMET=/sys/kernel/config/nvmet
NVME_PORT=4420
UNDER_WAY='# under way'
mkdir -p "$MIG_LOG"

# --- A ------------------------------------------------------------------------

# pp_server PORT ITERS: ibv_rc_pingpong's server, its data checked (-c).
pp_server() {
    pair_need_setup || return 1
    timeout 900 ibv_rc_pingpong -d "$PAIR_DEV" -g "$PAIR_GID_INDEX" -p "$1" -c \
        -n "$2" >"$MIG_LOG/pp.$1.server" 2>&1
    local rc=$?
    tail -n 3 "$MIG_LOG/pp.$1.server"
    return "$rc"
}

pp_listens() {
    wait_listen "$1"
}

# target_up: nvmet-rdma on the wire address serving a 128 MiB brd RAM
# disk; target_down takes it away.
target_up() {
    local ns=$NVMET/subsystems/$NQN/namespaces/1
    pair_need_setup || return 1
    modprobe brd rd_nr=1 rd_size=131072 && modprobe nvmet-rdma || return 1
    mkdir -p "$ns" "$NVMET/ports/1" &&
        echo 1 >"$NVMET/subsystems/$NQN/attr_allow_any_host" &&
        echo -n /dev/ram0 >"$ns/device_path" &&
        echo 1 >"$ns/enable" &&
        echo rdma >"$NVMET/ports/1/addr_trtype" &&
        echo ipv4 >"$NVMET/ports/1/addr_adrfam" &&
        echo "$PAIR_IP" >"$NVMET/ports/1/addr_traddr" &&
        echo "$NVME_PORT" >"$NVMET/ports/1/addr_trsvcid" &&
        ln -s "$NVMET/subsystems/$NQN" "$NVMET/ports/1/subsystems/$NQN" &&
        wait_listen_rdma "$NVME_PORT"
}

target_down() {
    rm -f "$NVMET/ports/1/subsystems/$NQN"
    rmdir "$NVMET/ports/1" 2>/dev/null
    [ ! -e "$NVMET/subsystems/$NQN/namespaces/1/enable" ] ||
        echo 0 >"$NVMET/subsystems/$NQN/namespaces/1/enable"
    rmdir "$NVMET/subsystems/$NQN/namespaces/1" "$NVMET/subsystems/$NQN" 2>/dev/null
    modprobe -r nvmet-rdma brd
}

# --- B ------------------------------------------------------------------------

# pp_client PORT ITERS: ibv_rc_pingpong's client to A, its data checked
# (-c); says UNDER_WAY once the round trips start.  Its RC QP never
# leaves RTS: one that did would fail a round trip, and the program.
pp_client() {
    local out=$MIG_LOG/pp.$1.client pid rc=0
    pair_need_setup || return 1
    stdbuf -oL timeout 900 ibv_rc_pingpong -d "$PAIR_DEV" -g "$PAIR_GID_INDEX" \
        -p "$1" -c -n "$2" "$PAIR_PEER_IP" >"$out" 2>&1 &
    pid=$!
    if wait_for 60 sh -c "grep -q 'remote address' $out || ! kill -0 $pid"; then
        grep -q 'remote address' "$out" && echo "$UNDER_WAY: $2 round trips"
    fi
    wait "$pid" || rc=$?
    tail -n 3 "$out"
    [ "$rc" = 0 ] && grep -E 'iters in' "$out" | sed 's/^/INFO: /'
    return "$rc"
}

# nvme_fio SIZE: connected to A's target, fio writes SIZE of the
# namespace with a CRC32C in every block and reads it all back, checking
# each; says UNDER_WAY once fio runs.
nvme_fio() {
    local ns rc=0 pid
    pair_need_setup || return 1
    modprobe nvme-rdma || return 1
    timeout 120 nvme connect -t rdma -a "$PAIR_PEER_IP" -s "$NVME_PORT" -n "$NQN" \
        --keep-alive-tmo=30 >&2 || return 1
    wait_for 20 nvme_namespace || { echo "no namespace"; return 1; }
    ns=$(nvme_namespace)
    timeout 900 fio --name=verify --filename="$ns" --ioengine=libaio --direct=1 \
        --rw=randwrite --bsrange=4k-128k --iodepth=8 --size="$1" \
        --verify=crc32c --do_verify=1 --verify_fatal=1 --randseed=1 \
        >"$MIG_LOG/fio.out" 2>&1 &
    pid=$!
    sleep 1
    kill -0 "$pid" 2>/dev/null && echo "$UNDER_WAY: fio on $ns, $1"
    wait "$pid" || rc=$?
    grep -E 'err=|verify|READ:|WRITE:' "$MIG_LOG/fio.out"
    [ "$rc" = 0 ] || dmesg | grep -iE 'nvme|rdma|qrdma' | tail -n 20
    timeout 60 nvme disconnect -n "$NQN" || rc=1
    [ "$rc" = 0 ] && echo "INFO: fio wrote $1 in blocks of 4-128 KiB and read every block back with its CRC32C right"
    return "$rc"
}
