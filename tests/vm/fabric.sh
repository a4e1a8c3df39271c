# shellcheck shell=bash
# Many guests on one hub: the guest side of tests/functional/test_fabric.py
# (qrdma_test/fabric.py); sourced, never run, after lib-qrdma.sh and
# lib-pair.sh, whose device set-up (pair_device_up) and checks it uses.
# The host runs one function at a time per guest, after fabric_args.
#
# Each guest learns its part from its kernel command line: qrdma.node=K
# (1 to N), qrdma.nodes=N, qrdma.kind (qrdma or rxe, the same on every
# node), qrdma.wire_ip (10.77.0.K), qrdma.fabric (the run's name) and
# qrdma.relay=1 when the hub impairs frames, qrdma.mtu (the wire netdev's,
# 1500 by default).
#
# Open MPI's runtime starts its daemons on the other nodes through
# tests/vm/wire-rsh.py, an ssh of the test's own (the guests have none),
# whose server fabric_device_info starts on the wire's address.

FABRIC_NODE='' FABRIC_NODES=''
FABRIC_RSH=$QRDMA_SRC_DIR/tests/vm/wire-rsh.py
FABRIC_MPI=$QRDMA_SRC_DIR/build/clients/mpi-exchange
WIRE_FAULTS=$QRDMA_PROVIDER_DIR/wire-faults
LOGDIR=${QRDMA_OUT:-/tmp}/fabric
mkdir -p "$LOGDIR"
# The multicast group of the UD test, and its datagrams.
FABRIC_GROUP=239.77.0.1
FABRIC_MCAST_COUNT=${FABRIC_MCAST_COUNT:-1000}
FABRIC_MCAST_SIZE=512

# fabric_args: this node's part, from the kernel command line, as
# lib-pair.sh's variables (PAIR_ROLE is nK).
# shellcheck disable=SC2034 # lib-pair.sh's and lib-qrdma.sh's variables
fabric_args() {
    pair_read_args
    FABRIC_NODE=$(pair_arg node)
    FABRIC_NODES=$(pair_arg nodes)
    [[ $FABRIC_NODE =~ ^[1-8]$ && $FABRIC_NODES =~ ^[2-8]$ ]] || {
        echo "no qrdma.node=K and qrdma.nodes=N on the kernel command line: not a node of a fabric" >&2
        return 1
    }
    PAIR_ROLE=n$FABRIC_NODE
    PAIR_KIND=$(pair_arg kind)
    PAIR_PEER_KIND=$PAIR_KIND
    PAIR_IP=$(pair_arg wire_ip)
    case $PAIR_KIND in
        qrdma) QRDMA_IP=$PAIR_IP ;;
        rxe) ;;
        *) echo "qrdma.kind must be qrdma or rxe, not '$PAIR_KIND'" >&2; return 1 ;;
    esac
}

# fabric_ip K: node K's address on the wire.
fabric_ip() {
    echo "${PAIR_IP%.*}.$1"
}

# fabric_host K: node K's name (its VM's), which /etc/hosts gives its
# wire address: Open MPI's runtime knows a node that has started its
# daemon by that name only.
fabric_host() {
    echo "$(pair_arg fabric)-n$1"
}

# fabric_device_info: this node's device up on the wire, every node's
# name in /etc/hosts, its remote shell serving, and what the host keeps of
# it on the last line, as pair_device_info's.
fabric_device_info() {
    local k
    pair_device_info >"$LOGDIR/device_info" 2>&1 || { cat "$LOGDIR/device_info"; return 1; }
    for k in $(seq "$FABRIC_NODES"); do
        grep -q " $(fabric_host "$k")\$" /etc/hosts ||
            echo "$(fabric_ip "$k") $(fabric_host "$k")" >>/etc/hosts
    done
    pkill -f "wire-rsh.py serve" || true
    setsid python3 "$FABRIC_RSH" serve "$PAIR_IP" </dev/null >"$LOGDIR/wire-rsh.log" 2>&1 &
    wait_listen 13500 || { cat "$LOGDIR/wire-rsh.log"; return 1; }
    cat "$LOGDIR/device_info"
}

# Every other node answers a ping, at the MAC it says it has.
t_fabric_ping() {
    local k bad=0
    for k in $(seq "$FABRIC_NODES"); do
        [ "$k" != "$FABRIC_NODE" ] || continue
        timeout 60 ping -q -c 2 -i 0.5 -w 30 "$(fabric_ip "$k")" >/dev/null || {
            echo "n$k ($(fabric_ip "$k")) does not answer"
            bad=1
        }
    done
    ip neigh show dev "$PAIR_NETDEV"
    echo "INFO: n$FABRIC_NODE reaches the $((FABRIC_NODES - 1)) other nodes"
    return "$bad"
}

# Open MPI over UCX's rc_verbs, a rank on every node, started from this
# one: mpi-exchange's pairs, all-to-all and collectives, every byte
# checked.  UCX's tcp (on the wire) only makes the connections; the
# tag protocols must be on rc_verbs.
t_fabric_mpi() {
    local hosts='' k rc=0 out=$LOGDIR/mpi start end
    pair_need_setup || return 1
    for k in $(seq "$FABRIC_NODES"); do
        hosts+="${hosts:+,}$(fabric_host "$k"):1"
    done
    export UCX_TLS=rc_verbs,tcp UCX_NET_DEVICES=$PAIR_DEV:1,$PAIR_NETDEV UCX_PROTO_INFO=y
    # The runtime's own traffic on the wire too: eth0 is QEMU's user
    # network, the same address in every guest.
    start=$(date +%s.%N)
    (
        cd /tmp &&
            timeout 900 mpirun --allow-run-as-root -np "$FABRIC_NODES" --host "$hosts" \
                --prtemca plm_ssh_agent "$FABRIC_RSH" --prtemca plm_ssh_no_tree_spawn 1 \
                --prtemca prte_if_include "${PAIR_IP%.*}.0/24" \
                --mca pml ucx --mca btl self --mca osc ucx \
                -x UCX_TLS -x UCX_NET_DEVICES -x UCX_PROTO_INFO "$FABRIC_MPI"
    ) >"$out" 2>&1 || rc=$?
    end=$(date +%s.%N)
    grep -av '^\[' "$out" | tail -n 40
    echo "--- mpirun exit $rc"
    [ "$rc" = 0 ] || return 1
    grep -aq "all checks passed on $FABRIC_NODES ranks" "$out" || {
        echo "mpi-exchange did not say all its checks passed on $FABRIC_NODES ranks"
        return 1
    }
    # The tag protocols ran on the device, not on TCP.
    grep -aqE "(eager|rendezvous).*rc_verbs/$PAIR_DEV:1" "$out" || {
        echo "UCX_PROTO_INFO shows no tag protocol on rc_verbs/$PAIR_DEV:1"
        return 1
    }
    grep -a '^mpi-exchange:' "$out" | sed 's/^mpi-exchange: /INFO: /'
    pair_result "mpirun seconds" "$(awk -v s="$start" -v e="$end" 'BEGIN {printf "%.1f", e - s}')"
    pair_result "checks seconds" "$(sed -n 's/^mpi-exchange: all checks passed on .* in \([0-9.]*\) s$/\1/p' "$out")"
}

# fabric_mcast_recv: join the group, take the datagrams of one sender.
fabric_mcast_recv() {
    pair_need_setup || return 1
    "$WIRE_FAULTS" mcast-recv "$PAIR_IP" "$FABRIC_GROUP" "$FABRIC_MCAST_COUNT" \
        "$FABRIC_MCAST_SIZE" "${FABRIC_MCAST_MIN:-90}" || return 1
}

# fabric_mcast_send: join the group, send it the datagrams, 1 ms apart.
fabric_mcast_send() {
    pair_need_setup || return 1
    "$WIRE_FAULTS" mcast-send "$PAIR_IP" "$FABRIC_GROUP" "$FABRIC_MCAST_COUNT" \
        "$FABRIC_MCAST_SIZE" 1000 || return 1
}
