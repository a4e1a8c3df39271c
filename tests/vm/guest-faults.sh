#!/bin/bash
# Faults in the guest while verbs programs run on qrdma: kill -9 of
# perftest and pingpong servers and clients in the middle of traffic
# (the device's resource counters must come back to where they were),
# rmmod qrdma with user contexts open (disassociate_ucontext lets it go
# on; the programs then fail, and must end), and an unbind and bind of
# the PCI function through sysfs under load; faults in the probe and the
# shutdown (tests/kverbs/qrdma_probe_test.ko).  Run inside the guest as
# root by
#   scripts/run-vm-test guest-faults.sh -- \
#       -device pcie-root-port,id=rp0,bus=pcie.0,chassis=1 -device qrdma,bus=rp0
# Prints TAP; exits nonzero if any test failed.
set -uo pipefail
. "${QRDMA_SRC:-/qrdma/src}/tests/vm/lib-qrdma.sh"

LOGDIR=${QRDMA_OUT:-/tmp}/guest-faults
PORT=18515
TESTS=(
    qrdma_setup
    kill_write_bw kill_rc_pingpong kill_server_only
    rmmod_under_load unbind_bind_under_load
    qrdma_unload dmesg_clean
    port_up_while_registering shutdown_fails_commands register_fails_unwinds
)

describe() {
    case $1 in
        kill_write_bw) echo "kill -9 of ib_write_bw server and client in traffic: the device's live counters come back" ;;
        kill_rc_pingpong) echo "kill -9 of ibv_rc_pingpong server and client in traffic: the device's live counters come back" ;;
        kill_server_only) echo "kill -9 of the ib_send_bw server alone: the client ends, the counters come back" ;;
        rmmod_under_load) echo "rmmod qrdma under ib_write_bw with its contexts open: it unloads, the programs end, qrdma loads again" ;;
        unbind_bind_under_load) echo "PCI unbind and bind of the function under ib_write_bw: the programs end, the device comes back and runs pingpong" ;;
        port_up_while_registering) echo "the port comes up while ib_core registers the device: ib_core's cached port state becomes ACTIVE" ;;
        shutdown_fails_commands) echo "after the PCI shutdown a command fails at once, and the function unbinds and binds again" ;;
        register_fails_unwinds) echo "ib_register_device fails in the probe: the probe unwinds at once, and the function binds again" ;;
    esac
}

# The device's live resources, as one line: live_uctx 0 live_pd 1 ...
LIVE=(live_uctx live_pd live_mr live_mw live_cq live_qp live_srq live_ah)
live_counters() {
    local c out=
    for c in "${LIVE[@]}"; do
        out+="$c $(qrdma_counter "$c") "
    done
    echo "${out% }"
}

# wait_live WANT: until the live counters read WANT again (20 s).
wait_live() {
    local want=$1 now i
    for i in $(seq 200); do
        now=$(live_counters 2>/dev/null) || now=
        [ "$now" = "$want" ] && { echo "live counters back: $now"; return 0; }
        sleep 0.1
    done
    echo "live counters: $now, want $want"
    rdma res show
    return 1
}

# wait_traffic FILE PATTERN: until the program writing FILE printed
# PATTERN (it is past connection setup and in traffic) and its QPs
# are live on the device.
wait_traffic() {
    wait_for 30 grep -q -- "$2" "$LOGDIR/$1" &&
        wait_for 10 sh -c "[ \$(cat $QRDMA_SYS/ports/1/hw_counters/live_qp) -ge 3 ]" || {
        echo "no traffic in $1"
        return 1
    }
}

# start NAME CMD...: CMD in the background, output in $LOGDIR/NAME,
# unbuffered so that it shows how far CMD got; sets PID.
PID=
start() {
    local name=$1
    shift
    stdbuf -o0 -e0 "$@" >"$LOGDIR/$name" 2>&1 </dev/null &
    PID=$!
}

# wait_gone SECONDS PID...: until every PID has exited; prints their status.
wait_gone() {
    local secs=$1 p rc ok=0
    shift
    for p in "$@"; do
        if ! wait_for "$secs" sh -c "! kill -0 $p"; then
            echo "pid $p still runs after ${secs} s"
            ok=1
            continue
        fi
        wait "$p" 2>/dev/null
        rc=$?
        echo "pid $p exited with $rc"
        # A crash of the program, not a failure it reported.
        case $rc in 132|134|135|136|139) ok=1 ;; esac
    done
    return $ok
}

show_logs() {
    local f
    for f in "$@"; do
        echo "--- $f"
        cat "$LOGDIR/$f" 2>/dev/null
    done
}

# A server and a client of PROG ARGS... over TCP port $PORT, both in the
# background; sets SPID and CPID once both are in traffic.
SPID= CPID=
traffic() {
    local name=$1 prog=$2
    shift 2
    start "$name.server" "$prog" -d "$QRDMA_DEV" -x "$QRDMA_GID_INDEX" "$@"
    SPID=$PID
    wait_listen "$PORT" || return 1
    start "$name.client" "$prog" -d "$QRDMA_DEV" -x "$QRDMA_GID_INDEX" "$@" 127.0.0.1
    CPID=$PID
    # perftest prints the header of its results as the measurement starts.
    wait_traffic "$name.client" '#bytes'
}

pingpong_traffic() {
    local name=$1
    shift
    start "$name.server" ibv_rc_pingpong -d "$QRDMA_DEV" -g "$QRDMA_GID_INDEX" "$@"
    SPID=$PID
    wait_listen "$PORT" || return 1
    start "$name.client" ibv_rc_pingpong -d "$QRDMA_DEV" -g "$QRDMA_GID_INDEX" "$@" 127.0.0.1
    CPID=$PID
    wait_traffic "$name.client" 'remote address'
}

need_setup() {
    [ -n "$QRDMA_GID_INDEX" ] || { echo "setup failed"; return 1; }
}

# --- tests ------------------------------------------------------------------------

t_kill_write_bw() {
    local base
    need_setup || return 1
    base=$(live_counters) || return 1
    echo "before: $base"
    traffic kill_write_bw ib_write_bw -D 60 -s 4096 ||
        { kill -9 "$SPID" "$CPID" 2>/dev/null; show_logs kill_write_bw.server kill_write_bw.client; return 1; }
    echo "in traffic: $(live_counters)"
    sleep 2
    kill -9 "$SPID" "$CPID"
    wait_gone 10 "$SPID" "$CPID" || return 1
    wait_live "$base"
}

t_kill_rc_pingpong() {
    local base
    need_setup || return 1
    base=$(live_counters) || return 1
    echo "before: $base"
    pingpong_traffic kill_pingpong -n 1000000 ||
        { kill -9 "$SPID" "$CPID" 2>/dev/null; show_logs kill_pingpong.server kill_pingpong.client; return 1; }
    echo "in traffic: $(live_counters)"
    sleep 2
    kill -9 "$SPID" "$CPID"
    wait_gone 10 "$SPID" "$CPID" || return 1
    wait_live "$base"
}

# The client is left with a peer that is gone: its sends fail with
# retries exceeded, or it waits out its duration; it must end.
t_kill_server_only() {
    local base rc=0
    need_setup || return 1
    base=$(live_counters) || return 1
    traffic kill_server ib_send_bw -D 10 ||
        { kill -9 "$SPID" "$CPID" 2>/dev/null; show_logs kill_server.server kill_server.client; return 1; }
    sleep 2
    kill -9 "$SPID"
    wait_gone 10 "$SPID" || rc=1
    # The client's duration, then its retries: well within a minute.
    wait_gone 60 "$CPID" || { kill -9 "$CPID"; rc=1; }
    show_logs kill_server.client
    wait_live "$base" || rc=1
    return $rc
}

# Load qrdma again and bring its port up, as qrdma_setup did.
qrdma_reload() {
    QRDMA_NETDEV=
    QRDMA_GID_INDEX=
    qrdma_load_driver && qrdma_setup_netdev && qrdma_find_gid
}

t_rmmod_under_load() {
    local rc=0
    need_setup || return 1
    traffic rmmod ib_write_bw -D 60 -s 4096 ||
        { kill -9 "$SPID" "$CPID" 2>/dev/null; show_logs rmmod.server rmmod.client; return 1; }
    echo "in traffic: $(live_counters)"
    sleep 2
    echo "rmmod with $(ls /proc/"$SPID"/fd /proc/"$CPID"/fd | wc -l) files open in the programs"
    timeout 60 rmmod qrdma || { echo "rmmod failed: $?"; rc=1; }
    [ ! -e "$QRDMA_SYS" ] || { echo "$QRDMA_SYS still there"; rc=1; }
    # Disassociated, their verbs fail; they must end, not hang or crash.
    wait_gone 90 "$SPID" "$CPID" || { kill -9 "$SPID" "$CPID" 2>/dev/null; rc=1; }
    show_logs rmmod.server rmmod.client
    qrdma_reload || return 1
    echo "after reload: $(live_counters)"
    [ "$(qrdma_counter live_uctx)" = 0 ] || rc=1
    return $rc
}

t_unbind_bind_under_load() {
    local bdf drv=/sys/bus/pci/drivers/qrdma rc=0 base
    need_setup || return 1
    bdf=$(basename "$(readlink -f "$QRDMA_SYS/device")")
    echo "PCI function $bdf"
    traffic unbind ib_write_bw -D 60 -s 4096 ||
        { kill -9 "$SPID" "$CPID" 2>/dev/null; show_logs unbind.server unbind.client; return 1; }
    sleep 2
    echo "$bdf" >"$drv/unbind" || { echo "unbind failed"; rc=1; }
    [ ! -e "$QRDMA_SYS" ] || { echo "$QRDMA_SYS still there"; rc=1; }
    wait_gone 90 "$SPID" "$CPID" || { kill -9 "$SPID" "$CPID" 2>/dev/null; rc=1; }
    show_logs unbind.server unbind.client
    echo "$bdf" >"$drv/bind" || { echo "bind failed"; return 1; }
    QRDMA_NETDEV=
    QRDMA_GID_INDEX=
    wait_for 10 test -d "$QRDMA_SYS" || { echo "no $QRDMA_SYS after bind"; return 1; }
    qrdma_setup_netdev && qrdma_find_gid || return 1
    base=$(live_counters)
    echo "after bind: $base"
    [ "$(qrdma_counter live_uctx)" = 0 ] || rc=1
    # The device works again.
    server_client "$LOGDIR/after-bind" "$PORT" 120 \
        ibv_rc_pingpong -d "$QRDMA_DEV" -g "$QRDMA_GID_INDEX" -n 100 -- \
        ibv_rc_pingpong -d "$QRDMA_DEV" -g "$QRDMA_GID_INDEX" -n 100 127.0.0.1 || rc=1
    wait_live "$base" || rc=1
    return $rc
}

# --- faults in the probe and the shutdown (tests/kverbs/qrdma_probe_test.c) --
# These make the driver log errors on purpose: each checks the kernel
# log lines of its own for reports of bugs, then clears the log.

PROBE_KO=$QRDMA_KVERBS_DIR/qrdma_probe_test.ko
PCI_DRV=/sys/bus/pci/drivers/qrdma
QRDMA_BDF=

# probe_start: qrdma bound and set up; notes its PCI function.
probe_start() {
    [ -f "$PROBE_KO" ] || { echo "no $PROBE_KO: run scripts/build-driver"; return 1; }
    if [ ! -d "$QRDMA_SYS" ]; then
        qrdma_reload || return 1
    fi
    QRDMA_BDF=$(basename "$(readlink -f "$QRDMA_SYS/device")")
    echo "PCI function $QRDMA_BDF"
    dmesg -C
}

# probe_end: the kernel log of the test has no report of a bug; cleared.
probe_end() {
    local bad
    dmesg | grep -E 'qrdma|WARNING|BUG|Oops|Call Trace|lockdep' || true
    bad=$(dmesg | grep -E '\b(WARNING|BUG|Oops)\b|lockdep|possible recursive locking|Call Trace|hung_task|blocked for more than' || true)
    dmesg -C
    [ -z "$bad" ] || { echo "--- offending lines"; echo "$bad"; return 1; }
}

# The qrdma function bound again and set up, after a test unbound it.
probe_rebind() {
    [ -e "$PCI_DRV/$QRDMA_BDF" ] || echo "$QRDMA_BDF" >"$PCI_DRV/bind" || {
        echo "bind failed"; return 1; }
    QRDMA_NETDEV=
    QRDMA_GID_INDEX=
    wait_for 10 test -d "$QRDMA_SYS" || { echo "no $QRDMA_SYS after bind"; return 1; }
    qrdma_setup_netdev && qrdma_find_gid
}

# ib_core reads the port (ib_cache_setup_one) while it registers the
# device; the test module holds that read until the netdev, registered
# just before, is up.  ib_core must then hear that the port came up.
t_port_up_while_registering() {
    local rc=0 up state param=/sys/module/qrdma_probe_test/parameters/cached_port_state
    probe_start || return 1
    echo "$QRDMA_BDF" >"$PCI_DRV/unbind" || return 1
    insmod "$PROBE_KO" hold_query_port=1 || return 1
    # Up once ib_core has read the port (DOWN: the netdev is new).
    (
        for _ in $(seq 500); do
            if [ "$(cat /sys/module/qrdma_probe_test/parameters/holding)" = 1 ]; then
                for d in /sys/bus/pci/devices/"$QRDMA_BDF"/net/*; do
                    [ -e "$d" ] && ip link set "${d##*/}" up && exit 0
                done
            fi
            sleep 0.02
        done
        exit 1
    ) &
    up=$!
    echo "$QRDMA_BDF" >"$PCI_DRV/bind" || { echo "bind failed"; rc=1; }
    wait "$up" || { echo "the netdev did not come up"; rc=1; }
    dmesg | grep qrdma-probe-test
    dmesg | grep -q 'hold: .* is down as ib_core reads the port' || {
        echo "the port was not read down"; rc=1; }
    wait_for 10 test -d "$QRDMA_SYS" || { echo "no $QRDMA_SYS"; rc=1; }
    rdma link show "$QRDMA_DEV/1"
    # IB_PORT_ACTIVE is 4.
    wait_for 10 sh -c "[ \$(cat $param) = 4 ]" || rc=1
    state=$(cat "$param")
    echo "INFO: ib_core's cached port state $state (4 is ACTIVE)"
    rmmod qrdma_probe_test || rc=1
    probe_rebind || rc=1
    probe_end || rc=1
    return $rc
}

# After the shutdown (reboot, kexec) the device is reset: a verb that
# needs a command must fail at once, not wait for the command timeout.
t_shutdown_fails_commands() {
    local rc=0 t0 ms
    probe_start || return 1
    insmod "$PROBE_KO" shutdown="$QRDMA_BDF" || return 1
    t0=$(date +%s%N)
    timeout 60 rdma link show "$QRDMA_DEV/1"
    ms=$((($(date +%s%N) - t0) / 1000000))
    echo "INFO: QUERY_PORT after the shutdown took $ms ms"
    [ "$ms" -lt 5000 ] || rc=1
    rmmod qrdma_probe_test || rc=1
    timeout 120 sh -c "echo $QRDMA_BDF >$PCI_DRV/unbind" || { echo "unbind failed"; rc=1; }
    probe_rebind || rc=1
    probe_end || rc=1
    return $rc
}

# The device fails QUERY_PORT while ib_core registers it: the probe must
# unwind, the netdev included (unregister_netdev waits for every
# reference), and the function must bind again afterwards.
t_register_fails_unwinds() {
    local rc=0 bind
    probe_start || return 1
    echo "$QRDMA_BDF" >"$PCI_DRV/unbind" || return 1
    insmod "$PROBE_KO" fail_query_port=1 || return 1
    sh -c "echo $QRDMA_BDF >$PCI_DRV/bind" &
    bind=$!
    if ! wait_for 60 sh -c "! kill -0 $bind"; then
        echo "the probe has not ended after 60 s"
        dmesg | tail -n 20
        return 1
    fi
    wait "$bind" && { echo "bind succeeded"; rc=1; }
    dmesg | grep -E 'qrdma|probe'
    dmesg | grep -q 'qrdma_query_port() fails' || { echo "the fault was not injected"; rc=1; }
    [ ! -e "$QRDMA_SYS" ] || { echo "$QRDMA_SYS is there"; rc=1; }
    ! ls /sys/bus/pci/devices/"$QRDMA_BDF"/net/* 2>/dev/null || { echo "a netdev is left"; rc=1; }
    rmmod qrdma_probe_test || rc=1
    probe_rebind || rc=1
    probe_end || rc=1
    return $rc
}

mkdir -p "$LOGDIR"
run_tests
