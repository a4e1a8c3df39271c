# shellcheck shell=bash
# A peer that dies, and one that is reset, in the middle of RDMA traffic
# over the wire: the guest halves of tests/functional/test_wire_peer_death.py,
# which boots A and B, runs these functions in them one at a time through
# its command channel, and kills, starts again and resets B's VM itself.
# Sourced there after lib-qrdma.sh and lib-pair.sh (and pair_args); never
# run.  Each function's output is the host's; its status says how it went
# (0 passed, 77 skipped, anything else failed), and its "INFO: " lines end
# up under the step's TAP line.

LOGDIR=${QRDMA_OUT:-/tmp}/peer-death
WIRE_FAULTS=$QRDMA_PROVIDER_DIR/wire-faults
NQN=qrdma-peer-death
NVMET=/sys/kernel/config/nvmet
NVME_PORT=4420
STREAM_PORT=18100 PP_PORT=18101
# The stream's QPs: 4.096 us * 2^14 = 67 ms a timeout, 7 retries.
STREAM_TIMEOUT=14 STREAM_RETRY=7
mkdir -p "$LOGDIR"

# --- B ------------------------------------------------------------------------

# nvmet-rdma on the wire address serving a 64 MiB brd RAM disk.  The
# same target in every life: its serial and the namespace's identifiers
# are fixed, as a real target keeps them across a power cycle (the host
# drops a namespace whose identifiers changed).
target_up() {
    local ns=$NVMET/subsystems/$NQN/namespaces/1
    modprobe brd rd_nr=1 rd_size=65536 && modprobe nvmet-rdma || return 1
    mkdir -p "$ns" "$NVMET/ports/1" &&
        echo 1 >"$NVMET/subsystems/$NQN/attr_allow_any_host" &&
        echo qrdma0peer0death >"$NVMET/subsystems/$NQN/attr_serial" &&
        echo 6b2e1f4c-0c1d-4a57-9d3e-51a0c0ffee01 >"$ns/device_uuid" &&
        echo 6b2e1f4c0c1d4a579d3e51a0c0ffee01 >"$ns/device_nguid" &&
        echo -n /dev/ram0 >"$ns/device_path" &&
        echo 1 >"$ns/enable" &&
        echo rdma >"$NVMET/ports/1/addr_trtype" &&
        echo ipv4 >"$NVMET/ports/1/addr_adrfam" &&
        echo "$PAIR_IP" >"$NVMET/ports/1/addr_traddr" &&
        echo "$NVME_PORT" >"$NVMET/ports/1/addr_trsvcid" &&
        ln -s "$NVMET/subsystems/$NQN" "$NVMET/ports/1/subsystems/$NQN" &&
        wait_listen_rdma "$NVME_PORT"
}

# sink NAME: the stream's sink, until this VM dies (the host runs it in
# the background).
sink() {
    "$WIRE_FAULTS" rc-sink "$PAIR_IP" "$STREAM_PORT" 2>&1 | tee "$LOGDIR/sink.$1.log"
}

sink_listens() {
    wait_listen_rdma "$STREAM_PORT"
}

# pingpong_server: the server of reset_back's ibv_rc_pingpong, its data
# checked (-c).
pingpong_server() {
    timeout 60 ibv_rc_pingpong -d "$PAIR_DEV" -g "$PAIR_GID_INDEX" -p "$PP_PORT" \
        -c -n 50 2>&1 | tee "$LOGDIR/pingpong.server"
}

pingpong_listens() {
    wait_listen "$PP_PORT"
}

# --- A ------------------------------------------------------------------------

nvme_ctrl_state() {
    cat /sys/class/nvme-fabrics/ctl/nvme*/state 2>/dev/null | head -n 1
}

ctrl_live() { [ "$(nvme_ctrl_state)" = live ]; }
ctrl_not_live() { [ "$(nvme_ctrl_state)" != live ]; }

fio_check() {
    local ns
    wait_for 30 nvme_namespace || { echo "no namespace"; return 1; }
    ns=$(nvme_namespace)
    timeout 300 fio --name=verify --filename="$ns" --ioengine=libaio --direct=1 \
        --rw=randwrite --bsrange=4k-64k --iodepth=4 --size=8M \
        --verify=crc32c --do_verify=1 --verify_fatal=1 --randseed="$1" \
        >"$LOGDIR/fio.$1.out" 2>&1 || { cat "$LOGDIR/fio.$1.out"; return 1; }
    grep -E 'WRITE:|READ:' "$LOGDIR/fio.$1.out"
    echo "INFO: fio wrote 8 MiB of $ns and read every block back, its CRC32C right"
}

# nvme_connect: nvme-rdma to B's target, which must be up, and fio's check.
nvme_connect() {
    pair_need_setup || return 1
    modprobe nvme-rdma || return 1
    timeout 120 nvme connect -t rdma -a "$PAIR_PEER_IP" -s "$NVME_PORT" -n "$NQN" \
        --reconnect-delay=1 --ctrl-loss-tmo=600 || return 1
    wait_for 20 nvme_namespace || { echo "no namespace"; return 1; }
    fio_check 1
}

# stream NAME: a stream of SENDs to B's sink, until a SEND fails; it must
# fail as it should (wire-faults rc-stream says PASS).  The host acts on
# B's VM once the stream says "# streaming".
stream() {
    "$WIRE_FAULTS" rc-stream "$PAIR_PEER_IP" "$STREAM_PORT" "$STREAM_TIMEOUT" \
        "$STREAM_RETRY" 2>&1 | tee "$LOGDIR/stream.$1.log"
}

# stream_freed: once the stream has exited, its QP, CQ, MR, PD and
# rdma_cm ID went with the process.
stream_freed() {
    local left
    wait_for 10 sh -c '! rdma res show 2>/dev/null | grep -q "comm wire-faults"'
    left=$(for r in qp cq mr pd cm_id; do rdma res show "$r"; done 2>/dev/null | grep 'comm wire-faults')
    [ -z "$left" ] || { echo "left behind by the stream:"; echo "$left"; return 1; }
}

# ctrl_goes_down: nvme-rdma saw B's VM go: it is reconnecting.
ctrl_goes_down() {
    wait_for 60 ctrl_not_live || { echo "the controller stayed live"; return 1; }
    echo "INFO: the NVMe controller: $(nvme_ctrl_state)"
}

# ctrl_comes_back: nvme-rdma reconnects to B's target by itself, and fio
# checks its blocks.
ctrl_comes_back() {
    wait_for 120 ctrl_live ||
        { echo "the controller did not reconnect: $(nvme_ctrl_state)"; return 1; }
    fio_check 2
}

# pingpong_client: ping, and reset_back's ibv_rc_pingpong with its data
# checked (-c), to B.
pingpong_client() {
    pair_need_setup || return 1
    timeout 60 ping -c 3 -i 0.5 -w 30 "$PAIR_PEER_IP" || return 1
    timeout 60 ibv_rc_pingpong -d "$PAIR_DEV" -g "$PAIR_GID_INDEX" -p "$PP_PORT" -c -n 50 \
        "$PAIR_PEER_IP"
}

t_nvme_down() {
    echo "the controller: $(nvme_ctrl_state)"
    timeout 60 nvme disconnect -n "$NQN" 2>&1
    wait_for 30 sh -c '! ls /sys/class/nvme-fabrics/ctl | grep -q ^nvme' ||
        { echo "the controller stayed: $(nvme_ctrl_state)"; return 1; }
    wait_for 20 sh -c '! ls /sys/block | grep -q ^nvme' || { echo "the namespace stayed"; return 1; }
}
