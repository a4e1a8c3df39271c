#!/bin/bash
# A peer that dies, and one that is reset, in the middle of RDMA traffic
# over the wire.  Run on the host by scripts/run-vm-pair, which boots both
# guests with this script and carries out A's requests to kill, start
# and reset B through QMP (lib-pair.sh's pair_host):
#   scripts/run-vm-pair --kinds qrdma-qrdma wire-peer-death.sh
#
# B lives three times:
#   1. it serves NVMe over RDMA (nvmet-rdma on a RAM disk) to A, and takes
#      A's stream of SENDs (tests/vm/wire-faults.c rc-sink) until A has
#      the host kill its VM (QMP quit);
#   2. started again, it serves NVMe again, under the same name and
#      address, and takes a stream again until A has the host reset it
#      (QMP system_reset);
#   3. after the reset, its script runs again from the start: its device
#      comes up, and it serves an ibv_rc_pingpong to A.
# A prints the TAP: in life 1 the stream's RC QP fails with
# IBV_WC_RETRY_EXC_ERR within the time its timeout and retry_cnt give,
# and every resource of the stream is freed when the program exits;
# nvme-rdma reconnects to life 2 by itself and its I/O is checked; the
# reset fails the stream the same way; and life 3 talks RDMA again.
set -uo pipefail

# shellcheck source=lib-qrdma.sh
. "${QRDMA_SRC:-/qrdma/src}/tests/vm/lib-qrdma.sh"
# shellcheck source=lib-pair.sh
. "${QRDMA_SRC:-/qrdma/src}/tests/vm/lib-pair.sh"

LOGDIR=${QRDMA_OUT:-/tmp}/peer-death
WIRE_FAULTS=$QRDMA_PROVIDER_DIR/wire-faults
NQN=qrdma-peer-death
NVMET=/sys/kernel/config/nvmet
NVME_PORT=4420
STREAM_PORT=18100 PP_PORT=18101
# The stream's QPs: 4.096 us * 2^14 = 67 ms a timeout, 7 retries.
STREAM_TIMEOUT=14 STREAM_RETRY=7
# A VM of the pair boots in well under this under TCG.
BOOT_TIMEOUT=300

describe() {
    case $1 in
        nvme_connect) echo "nvme-rdma on A connects to B's target (reconnect delay 1 s) and fio checks its blocks (verify=crc32c)" ;;
        dead_peer) echo "B's VM killed (QMP quit) under a stream of SENDs: A's RC QP fails with RETRY_EXC_ERR within its timeout and retry_cnt, and all it had is freed when the program exits" ;;
        nvme_reconnect) echo "B's VM started again serves the same target: A's nvme-rdma reconnects by itself, fio checks its blocks" ;;
        reset_peer) echo "B's VM reset (QMP system_reset) under a stream of SENDs: A's RC QP fails with RETRY_EXC_ERR in time, its resources freed" ;;
        reset_back) echo "B, rebooted by the reset, brings its device up again: ping and ibv_rc_pingpong -c with A" ;;
        nvme_down) echo "A's controller, whose target went with the reset, is removed" ;;
        device_down) echo "A's device goes away (rmmod qrdma, rdma link delete rxe0)" ;;
        pair_dmesg_clean) echo "A's dmesg has no WARNING/BUG/Oops/lockdep report or qrdma error" ;;
    esac
}

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

# The stream's sink in the background until this VM dies; SIGNAL says A
# it listens.
sink_up() {
    "$WIRE_FAULTS" rc-sink "$PAIR_IP" "$STREAM_PORT" >"$LOGDIR/sink.$1.log" 2>&1 &
    if wait_listen_rdma "$STREAM_PORT"; then
        pair_signal "$1" ok
    else
        pair_signal "$1" fail
    fi
}

# Until the host kills or resets this VM (bounded all the same).
await_the_end() {
    echo "# B: life $LIFE: waiting for the end"
    sleep 900
    echo "# B: life $LIFE: the end never came"
    exit 1
}

b_main() {
    local resets
    resets=$(cat "$PAIR_DIR/host.b.resets" 2>/dev/null || echo 0)
    [ "$resets" = 0 ] || LIFE=3
    echo "# B: life $LIFE"
    case $LIFE in
        1)
            pair_run_test setup
            pair_run_test ping
            if target_up >"$LOGDIR/target.1.log" 2>&1; then
                pair_signal life1.target ok
            else
                pair_signal life1.target fail
            fi
            sink_up life1.sink
            await_the_end ;;
        2)
            pair_device_up >"$LOGDIR/device-up.2.log" 2>&1 || pair_signal life2.target fail
            if target_up >"$LOGDIR/target.2.log" 2>&1; then
                pair_signal life2.target ok
            else
                pair_signal life2.target fail
            fi
            pair_wait nvme.checked "$BOOT_TIMEOUT" >/dev/null
            sink_up life2.sink
            await_the_end ;;
        3)
            if ! pair_device_up >"$LOGDIR/device-up.3.log" 2>&1; then
                pair_signal life3.up fail
                pair_signal 'done' 1
                return 1
            fi
            timeout 60 ibv_rc_pingpong -d "$PAIR_DEV" -g "$PAIR_GID_INDEX" -p "$PP_PORT" \
                -c -n 50 >"$LOGDIR/pingpong.3.server" 2>&1 &
            if wait_listen "$PP_PORT"; then
                pair_signal life3.up ok
            else
                pair_signal life3.up fail
            fi
            wait $! || true
            pair_wait all.done 300 >/dev/null
            pair_signal 'done' 0 ;;
    esac
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

t_nvme_connect() {
    pair_need_setup || return 1
    modprobe nvme-rdma || return 1
    [ "$(pair_wait life1.target 120)" = ok ] || { echo "B's target did not come up"; return 1; }
    timeout 120 nvme connect -t rdma -a "$PAIR_PEER_IP" -s "$NVME_PORT" -n "$NQN" \
        --reconnect-delay=1 --ctrl-loss-tmo=600 || return 1
    wait_for 20 nvme_namespace || { echo "no namespace"; return 1; }
    fio_check 1
}

# stream_until ACTION: a stream of SENDs to B's sink, and once it is under
# way, ACTION of B's VM by the host; the stream must fail as it should,
# and leave nothing behind when it exits.
stream_until() {
    local pid rc=0 left
    "$WIRE_FAULTS" rc-stream "$PAIR_PEER_IP" "$STREAM_PORT" "$STREAM_TIMEOUT" \
        "$STREAM_RETRY" >"$LOGDIR/stream.$1.log" 2>&1 &
    pid=$!
    wait_for 60 grep -q '^# streaming' "$LOGDIR/stream.$1.log" || {
        kill "$pid" 2>/dev/null
        wait "$pid"
        cat "$LOGDIR/stream.$1.log"
        echo "the stream did not get under way"
        return 1
    }
    pair_host "$1" || rc=1
    echo "INFO: B's VM: $1 while the stream ran"
    wait "$pid" || rc=1
    cat "$LOGDIR/stream.$1.log"
    grep '^# [0-9]* SENDs' "$LOGDIR/stream.$1.log" | sed 's/^# /INFO: /'
    # Its QP, CQ, MR, PD and rdma_cm ID went with the process.
    wait_for 10 sh -c '! rdma res show 2>/dev/null | grep -q "comm wire-faults"'
    left=$(for r in qp cq mr pd cm_id; do rdma res show "$r"; done 2>/dev/null | grep 'comm wire-faults')
    [ -z "$left" ] || { echo "left behind by the stream:"; echo "$left"; rc=1; }
    return "$rc"
}

t_dead_peer() {
    pair_need_setup || return 1
    [ "$(pair_wait life1.sink 60)" = ok ] || { echo "B's sink did not start"; return 1; }
    stream_until quit || return 1
    # nvme-rdma saw it too: it is reconnecting.
    wait_for 60 ctrl_not_live ||
        { echo "the controller stayed live"; return 1; }
    echo "INFO: the NVMe controller: $(nvme_ctrl_state)"
}

t_nvme_reconnect() {
    local s e
    pair_need_setup || return 1
    s=$(date +%s)
    pair_host start || return 1
    [ "$(pair_wait life2.target "$BOOT_TIMEOUT")" = ok ] ||
        { echo "B's second life served no target"; return 1; }
    wait_for 120 ctrl_live ||
        { echo "the controller did not reconnect: $(nvme_ctrl_state)"; return 1; }
    e=$(date +%s)
    echo "INFO: live again $((e - s)) s after B's VM was started again (it boots meanwhile)"
    fio_check 2
}

t_reset_peer() {
    pair_need_setup || return 1
    [ "$(pair_wait life2.sink 120)" = ok ] || { echo "B's sink did not start"; return 1; }
    stream_until system_reset
}

t_reset_back() {
    local p
    pair_need_setup || return 1
    [ "$(pair_wait life3.up "$BOOT_TIMEOUT")" = ok ] || { echo "B did not come back from the reset"; return 1; }
    timeout 60 ping -c 3 -i 0.5 -w 30 "$PAIR_PEER_IP" || return 1
    p=$PP_PORT
    timeout 60 ibv_rc_pingpong -d "$PAIR_DEV" -g "$PAIR_GID_INDEX" -p "$p" -c -n 50 \
        "$PAIR_PEER_IP" || return 1
}

t_nvme_down() {
    echo "the controller: $(nvme_ctrl_state)"
    timeout 60 nvme disconnect -n "$NQN" 2>&1
    wait_for 30 sh -c '! ls /sys/class/nvme-fabrics/ctl | grep -q ^nvme' ||
        { echo "the controller stayed: $(nvme_ctrl_state)"; return 1; }
    wait_for 20 sh -c '! ls /sys/block | grep -q ^nvme' || { echo "the namespace stayed"; return 1; }
}

a_main() {
    local t
    for t in setup ping; do
        pair_run_test "$t"
    done
    for t in nvme_connect dead_peer nvme_reconnect reset_peer reset_back nvme_down; do
        run_test "$t"
        # B's second life serves NVMe until A is done with it, however.
        [ "$t" != nvme_reconnect ] || pair_signal nvme.checked
    done
    pair_signal all.done
    for t in device_down pair_dmesg_clean; do
        run_test "$t"
    done
    tap_end
}

pair_init || { echo "Bail out! not a pair's guest"; exit 1; }
LIFE=$(pair_arg life 1)
mkdir -p "$LOGDIR"
: >"$LOGDIR/results.tsv"
if pair_is a; then
    a_main
else
    b_main
fi
