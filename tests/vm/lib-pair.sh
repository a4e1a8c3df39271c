# shellcheck shell=bash
# Two guests, one test: the guest side of the host-driven pair tests of
# tests/functional/ (qrdma_test/pair.py); sourced, never run, after
# lib-qrdma.sh (whose setup it uses).  The host runs one function at a
# time in each guest, after pair_args, and is the only one to sequence
# the two sides.
#
# Each guest learns its part from its kernel command line, which pair_args
# reads: qrdma.role=a|b, qrdma.kind and qrdma.peer_kind (qrdma or rxe: what
# carries RDMA at each end of the wire), qrdma.wire_ip and qrdma.peer_ip
# (each end's address on the wire), qrdma.pair (the run's name) and
# qrdma.relay=1 behind the impairing relay.  pair_is a|b is the role
# test, for a half that differs; pair_arg NAME [DEFAULT] is qrdma.NAME of
# the kernel command line.
#
# pair_device_info brings this side's device up by kind (qrdma:
# qrdma_setup with the wire address on the qrdma port's netdev; rxe:
# rdma_rxe on eth0, which is on the wire) and prints what the peer needs
# on its last line ("dev=... gid_index=... ip=... netdev=... mac=...
# kind=...").  The host passes it to every later function on either side
# as PAIR_DEV, PAIR_GID_INDEX, PAIR_NETDEV, PAIR_MAC and the peer's
# PAIR_PEER_*; and the running test's name as PAIR_TEST.  The tests of this
# file: ping (ARP and ICMP across the wire), wire_counters (the device's
# packet counters moved), device_down (rmmod qrdma or rdma link delete,
# leaving nothing behind) and pair_dmesg_clean (lib-qrdma.sh's
# dmesg_clean), each one side's half.
#
# Client and server, written once (A serves, B is the client):
#
#   pair_server_client OUT PORT TIMEOUT SERVER_CMD... -- CLIENT_CMD...
#
# in both guests, A's first: see below.  pair_result FIGURE VALUE gives
# the host a figure of the running test, from either side.

PAIR_ROLE='' PAIR_KIND='' PAIR_PEER_KIND='' PAIR_IP='' PAIR_PEER_IP=''
# What pair_device_info found out on each side, from the host.
PAIR_DEV=${PAIR_DEV:-} PAIR_GID_INDEX=${PAIR_GID_INDEX:-}
PAIR_NETDEV=${PAIR_NETDEV:-} PAIR_MAC=${PAIR_MAC:-}
PAIR_PEER_DEV=${PAIR_PEER_DEV:-} PAIR_PEER_GID_INDEX=${PAIR_PEER_GID_INDEX:-}
PAIR_PEER_MAC=${PAIR_PEER_MAC:-}
# The running test.
PAIR_TEST=${PAIR_TEST:-}
declare -A PAIR_ARG=()

# pair_arg NAME [DEFAULT]: qrdma.NAME of the kernel command line.
pair_arg() {
    echo "${PAIR_ARG[$1]:-${2:-}}"
}

# pair_read_args: every qrdma.NAME=VALUE of the kernel command line into
# PAIR_ARG, for pair_arg.
pair_read_args() {
    local w words
    read -r -a words </proc/cmdline
    for w in "${words[@]}"; do
        [[ $w != qrdma.*=* ]] || { w=${w#qrdma.}; PAIR_ARG[${w%%=*}]=${w#*=}; }
    done
}

# pair_args: the role, kinds and addresses from the kernel command line.
pair_args() {
    pair_read_args
    PAIR_ROLE=$(pair_arg role)
    case $PAIR_ROLE in
        a|b) ;;
        *) echo "no qrdma.role=a|b on the kernel command line: not a VM of a pair" >&2
           return 1 ;;
    esac
    PAIR_KIND=$(pair_arg kind rxe)
    PAIR_PEER_KIND=$(pair_arg peer_kind rxe)
    PAIR_IP=$(pair_arg wire_ip)
    PAIR_PEER_IP=$(pair_arg peer_ip)
    if [ -z "$PAIR_IP" ] || [ -z "$PAIR_PEER_IP" ]; then
        echo "no qrdma.wire_ip or qrdma.peer_ip on the kernel command line" >&2
        return 1
    fi
    case "$PAIR_KIND $PAIR_PEER_KIND" in
        qrdma\ qrdma|qrdma\ rxe|rxe\ qrdma|rxe\ rxe) ;;
        *) echo "kinds must be qrdma or rxe: $PAIR_KIND, $PAIR_PEER_KIND" >&2; return 1 ;;
    esac
    # The qrdma port takes the wire address (qrdma_setup reads it).
    # shellcheck disable=SC2034 # lib-qrdma.sh's
    [ "$PAIR_KIND" != qrdma ] || QRDMA_IP=$PAIR_IP
}

pair_is() {
    [ "$PAIR_ROLE" = "$1" ]
}

# --- figures ----------------------------------------------------------------------

pair_result() {
    printf 'RESULT: %s\t%s\n' "$1" "$2"
}

# --- client and server ------------------------------------------------------------

# pair_server_client OUT PORT TIMEOUT SERVER_CMD... -- CLIENT_CMD...: a
# test's server and client written once, for a host that runs this in A,
# then in B.  A's half starts the server, waits until it listens on PORT
# (TCP, or cm:PORT for an rdma_cm listener), says so on a line of
# PAIR_SERVING's, and succeeds if its server does; B's runs the client,
# which the host starts only once A's half has said that line, and
# succeeds if its client does.  Each program is bounded by TIMEOUT s, its
# output kept in OUT.server or OUT.client and printed.
#
# perftest's rdma_cm mode (-R) trades its parameters over one rdma_cm
# connection and then connects the test QPs to a listener the server
# makes only then; a client faster than its server (qrdma's, against a
# server in a TCG VM) can come first, and the server's kernel rejects it
# (REJ reason 8, invalid service ID), which the client does not retry:
# it gives up, or crashes.  B's half says so on a line of PAIR_AGAIN's,
# and the host runs the test again, server and client, up to 3 times in
# all; any other outcome is the test's.
PAIR_SERVING='# serving:' PAIR_AGAIN='# again:'
PAIR_SERVER_PID=/run/qrdma-pair-server.pid
pair_server_client() {
    local out=$1 port=$2 tmo=$3 server=() spid rc=0
    shift 3
    while [ "$1" != -- ]; do
        server+=("$1")
        shift
    done
    shift
    if pair_is b; then
        timeout "$tmo" "$@" >"$out.client" 2>&1 || rc=$?
        echo "--- client: $* (exit $rc)"
        cat "$out.client"
        if [ "$rc" != 0 ] && grep -q 'RDMA_CM_EVENT_REJECTED; error: 8\.' "$out.client"; then
            echo "$PAIR_AGAIN the client came before the server's rdma_cm listener (perftest -R)"
        fi
        return "$rc"
    fi
    timeout "$tmo" "${server[@]}" >"$out.server" 2>&1 &
    spid=$!
    echo "$spid" >"$PAIR_SERVER_PID"
    if ! case $port in
             cm:*) wait_listen_rdma "${port#cm:}" ;;
             *) wait_listen "$port" ;;
         esac; then
        kill "$spid" 2>/dev/null
        wait "$spid" 2>/dev/null
        rm -f "$PAIR_SERVER_PID"
        echo "--- server: ${server[*]} (did not listen)"
        cat "$out.server"
        return 1
    fi
    echo "$PAIR_SERVING ${server[0]##*/} listens on $port"
    # The server ends by itself once its client is done; one whose client
    # failed may wait for it until its timeout, unless the host stops it
    # first (pair_server_stop).
    wait "$spid" || rc=$?
    rm -f "$PAIR_SERVER_PID"
    echo "--- server: ${server[*]} (exit $rc)"
    cat "$out.server"
    return "$rc"
}

# pair_server_stop: A's running server, of pair_server_client, stopped;
# the half that started it goes on, and fails.
pair_server_stop() {
    local pid
    pid=$(cat "$PAIR_SERVER_PID" 2>/dev/null) || return 0
    kill "$pid" 2>/dev/null || true
}

# --- the tests of this file -------------------------------------------------------

# This side's device on the wire, by kind; sets PAIR_DEV and the rest.
pair_device_up() {
    case $PAIR_KIND in
        qrdma)
            qrdma_setup || return 1
            PAIR_DEV=$QRDMA_DEV PAIR_GID_INDEX=$QRDMA_GID_INDEX PAIR_NETDEV=$QRDMA_NETDEV ;;
        rxe)
            RXE_NETDEV=eth0
            rxe_setup || return 1
            [ "$RXE_IP" = "$PAIR_IP" ] || {
                echo "eth0 has ${RXE_IP:-no address}, not the wire's $PAIR_IP"
                return 1
            }
            PAIR_DEV=$RXE_DEV PAIR_GID_INDEX=$RXE_GID_INDEX PAIR_NETDEV=$RXE_NETDEV ;;
    esac
    PAIR_MAC=$(cat "/sys/class/net/$PAIR_NETDEV/address")
    pair_set_mtu
}

# pair_active_mtu: the active MTU of this side's RDMA port, in bytes.
pair_active_mtu() {
    ibv_devinfo -d "$PAIR_DEV" | awk '/active_mtu/ {print $2; exit}'
}

# pair_set_mtu: the wire netdev's MTU, qrdma.mtu if the kernel command
# line gives one (the RoCE path MTU follows it: 9000 gives 4096).
pair_set_mtu() {
    local mtu
    mtu=$(pair_arg mtu)
    [ -n "$mtu" ] || return 0
    ip link set "$PAIR_NETDEV" mtu "$mtu" || return 1
    echo "INFO: $PAIR_NETDEV mtu $mtu, $PAIR_DEV active_mtu $(pair_active_mtu)"
}

# pair_device_info: pair_device_up, saying what it did, then what the
# peer needs of this side on the last line: "dev=... gid_index=... ip=...
# netdev=... mac=... kind=...".
pair_device_info() {
    local rc=0 log
    log=$(mktemp)
    # Its INFO lines are the host's to say: kept as plain ones.
    pair_device_up >"$log" 2>&1 || rc=$?
    sed 's/^INFO: //' "$log"
    rm -f "$log"
    [ "$rc" = 0 ] || return 1
    ibv_devinfo -d "$PAIR_DEV" || return 1
    echo "dev=$PAIR_DEV gid_index=$PAIR_GID_INDEX ip=$PAIR_IP netdev=$PAIR_NETDEV mac=$PAIR_MAC kind=$PAIR_KIND"
}

# pair_need_setup: a test's first line, so that it fails at once, saying
# why, after a failed setup.
pair_need_setup() {
    if [ -z "$PAIR_GID_INDEX" ] || [ -z "$PAIR_PEER_DEV" ]; then
        echo "setup failed"
        return 1
    fi
}

t_ping() {
    local mac
    pair_need_setup || return 1
    timeout 60 ping -c 3 -i 0.5 -w 30 "$PAIR_PEER_IP" || return 1
    ip neigh show "$PAIR_PEER_IP"
    mac=$(ip neigh show "$PAIR_PEER_IP" | awk '{for (i = 1; i < NF; i++) if ($i == "lladdr") print $(i + 1)}')
    [ "$mac" = "$PAIR_PEER_MAC" ] || { echo "ARP says $PAIR_PEER_IP is at ${mac:-nothing}, the peer says $PAIR_PEER_MAC"; return 1; }
}

# The device's own packet counters (hw_counters of port 1) moved: the
# RDMA traffic went through it, not around it.  Both count RoCE packets
# as sent_pkts and rcvd_pkts; all counters that moved are shown.
t_wire_counters() {
    local dir=/sys/class/infiniband/$PAIR_DEV/ports/1/hw_counters tx rx f
    pair_need_setup || return 1
    # Both count RoCE packets by rxe's names.
    tx=sent_pkts rx=rcvd_pkts
    for f in "$dir"/*; do
        [ "$(cat "$f")" = 0 ] || echo "${f##*/} $(cat "$f")"
    done
    echo "INFO: $PAIR_DEV $tx $(cat "$dir/$tx"), $rx $(cat "$dir/$rx")"
    pair_result "$PAIR_ROLE $PAIR_DEV $tx" "$(cat "$dir/$tx")"
    pair_result "$PAIR_ROLE $PAIR_DEV $rx" "$(cat "$dir/$rx")"
    [ "$(cat "$dir/$tx")" -gt 0 ] && [ "$(cat "$dir/$rx")" -gt 0 ] || return 1
    # qrdma drops no frame of its peer's for its headers or ICRC, unless
    # the relay corrupts them on purpose (faults_met counts those).
    [ "$PAIR_KIND" != qrdma ] || [ "$(pair_arg relay)" = 1 ] ||
        { [ "$(cat "$dir/icrc_errors")" = 0 ] &&
          [ "$(cat "$dir/malformed_frames")" = 0 ]; }
}

t_device_down() {
    case $PAIR_KIND in
        qrdma) t_qrdma_unload ;;
        rxe)
            rdma link delete "$RXE_DEV" || return 1
            ! rdma link show "$RXE_DEV/1" 2>/dev/null || { echo "$RXE_DEV still there"; return 1; } ;;
    esac
}

t_pair_dmesg_clean() {
    t_dmesg_clean
}
