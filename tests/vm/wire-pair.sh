# shellcheck shell=bash
# RDMA between two VMs over RoCEv2 on a wire: the guest halves of
# tests/functional/test_wire_pair.py, which boots A and B, each end qrdma
# or rxe (the kinds), and runs these functions in them, one test at a
# time: the verbs examples with their buffers checked, perftest
# (connected over TCP and over rdma_cm), the rdma_cm examples, UD and RNR
# through tests/vm/wire-faults.c and NVMe over RDMA.  Sourced there after
# lib-qrdma.sh and lib-pair.sh (and pair_args); never run.
#
# Each test is t_NAME in both VMs, a half that differs by role where it
# must (pair_is): the server's in A, the client's in B.  The host starts
# A's half, waits until it says its server listens (pair_server_client),
# runs B's half, then waits for A's; NVMe's target comes up and goes
# down in calls of its own around B's half.  Each half's status says how
# it went (0 passed, 77 skipped, anything else failed), its "INFO: "
# lines end up under the test's TAP line and its "RESULT: " lines in the
# run's figures (pair_result).  The host passes the test's name and TCP
# port as PAIR_TEST and PAIR_PORT, and the iterations as PP_ITERS,
# BW_ITERS, LAT_ITERS and FIO_SIZE.  Command output: $QRDMA_OUT/wire-pair/
# of each side.

LOGDIR=${QRDMA_OUT:-/tmp}/wire-pair
# Under TCG, with two guests on two cores: few iterations (the host
# may ask for more), and a bound on each program.
PP_ITERS=${PP_ITERS:-100} BW_ITERS=${BW_ITERS:-500} LAT_ITERS=${LAT_ITERS:-500}
FIO_SIZE=${FIO_SIZE:-32M}
RUN_TIMEOUT=60
NQN=qrdma-wire-pair
UD_COUNT=2000
RMW_COUNT=200

mkdir -p "$LOGDIR"

# Each test talks on a port of its own (the host gives it, the same on
# both sides): no server ever meets a client of an earlier test.
port() { echo "$PAIR_PORT"; }

# --- the verbs examples -----------------------------------------------------------

# pingpong PROG ARGS...: ibv_PROG with -c, each side on its own device
# and GID index (GID, else PAIR_GID_INDEX); the server's address is A's.
pingpong() {
    local prog=$1 p gid=${GID:-$PAIR_GID_INDEX}
    shift
    pair_need_setup || return 1
    p=$(port)
    pair_server_client "$LOGDIR/$PAIR_TEST" "$p" "$RUN_TIMEOUT" \
        "$prog" -d "$PAIR_DEV" -g "$gid" -p "$p" -c "$@" -- \
        "$prog" -d "$PAIR_DEV" -g "$gid" -p "$p" -c "$@" "$PAIR_PEER_IP" || return 1
    pair_is b || return 0
    grep -E 'iters in' "$LOGDIR/$PAIR_TEST.client" | sed 's/^/INFO: /'
}

t_rc_pingpong() { pingpong ibv_rc_pingpong -n "$PP_ITERS"; }
t_uc_pingpong() { pingpong ibv_uc_pingpong -n "$PP_ITERS"; }
# UD messages fit the path MTU (1024 at eth0's 1500).
t_ud_pingpong() { pingpong ibv_ud_pingpong -n "$PP_ITERS" -s 512; }
t_srq_pingpong() { pingpong ibv_srq_pingpong -n "$PP_ITERS" -q 4; }

# The index of this side's RoCE v2 GID of its IPv6 link-local address:
# the frames are IPv6, the UDP checksum set, the ICRC over IPv6's fields.
ipv6_gid_index() {
    local ports=/sys/class/infiniband/$PAIR_DEV/ports/1 f i
    for f in "$ports"/gids/*; do
        i=${f##*/}
        [ "$(cat "$ports/gid_attrs/types/$i" 2>/dev/null)" = "RoCE v2" ] &&
            [[ $(cat "$f") == fe80:* ]] && { echo "$i"; return 0; }
    done
    echo "no IPv6 link-local RoCE v2 GID on $PAIR_DEV" >&2
    return 1
}

# peer_ll6: the peer's IPv6 link-local address, made from its MAC (EUI-64).
peer_ll6() {
    local a b c d e f
    IFS=: read -r a b c d e f <<<"$PAIR_PEER_MAC"
    printf 'fe80::%x:%x:%x:%x\n' $(((0x$a ^ 2) << 8 | 0x$b)) $((0x$c << 8 | 0xff)) \
        $((0xfe << 8 | 0x$d)) $((0x$e << 8 | 0x$f))
}

t_rc_pingpong_ipv6() {
    local GID ll
    GID=$(ipv6_gid_index) || return 1
    echo "INFO: $PAIR_ROLE: GID index $GID, $(cat "/sys/class/infiniband/$PAIR_DEV/ports/1/gids/$GID")"
    # ib_core finds a RoCE v2 destination's MAC in the IPv6 neighbour
    # table, giving neighbour discovery one second at the modify to RTR:
    # behind the lossy relay, or on a loaded host under TCG, that second
    # may pass ("Failed to modify QP to RTR").  The entry made first, as
    # ND makes it with its own retries; nothing else here talks IPv6.
    ll=$(peer_ll6)
    timeout 60 ping -6 -c 1 -w 30 "$ll%$PAIR_NETDEV" >/dev/null ||
        { echo "no answer from the peer's $ll"; return 1; }
    pingpong ibv_rc_pingpong -n "$PP_ITERS" -s 8192
}

# Jumbo frames: with its netdev at MTU 9000 the port's active MTU is 4096,
# and 64 KiB messages go as 16 packets of it.  Only between two qrdma
# ends: the virtio-net of an rxe end stays at 1500 here.
t_rc_pingpong_mtu4096() {
    local rc=0 mtu
    [ "$PAIR_KIND-$PAIR_PEER_KIND" = qrdma-qrdma ] || { echo "qrdma at both ends only"; return 77; }
    pair_need_setup || return 1
    ip link set "$PAIR_NETDEV" mtu 9000 || return 1
    mtu=$(pair_active_mtu)
    echo "INFO: $PAIR_ROLE: $PAIR_NETDEV mtu 9000, active_mtu $mtu"
    if [ "$mtu" = 4096 ]; then
        pingpong ibv_rc_pingpong -n "$PP_ITERS" -m 4096 -s 65536 || rc=1
    else
        rc=1
    fi
    ip link set "$PAIR_NETDEV" mtu 1500 || rc=1
    return "$rc"
}

# --- perftest ---------------------------------------------------------------------

# perftest_figures OUT: the client's figures, for the results file:
# bandwidth and message rate of a _bw test, typical and average latency
# of a _lat one.
perftest_figures() {
    local out=$1 col v unit size cols=()
    case $PAIR_TEST in
        *_bw|*_bw_cm) cols=("BW average" "MsgRate") ;;
        *) cols=("t_typical" "t_avg") ;;
    esac
    for col in "${cols[@]}"; do
        read -r v unit size < <(perftest_column "$out" "$col") || {
            echo "no $col in the result row"
            return 1
        }
        pair_result "$col ($size B)" "$v $unit"
        echo "INFO: $col $v $unit ($size B)"
    done
}

# perftest PROG ARGS...: ib_PROG, the QPs traded over TCP and addressed by
# each side's RoCE v2 GID index.
perftest() {
    local prog=$1 p
    shift
    pair_need_setup || return 1
    p=$(port)
    pair_server_client "$LOGDIR/$prog" "$p" "$RUN_TIMEOUT" \
        "$prog" -d "$PAIR_DEV" -x "$PAIR_GID_INDEX" -F -p "$p" "$@" -- \
        "$prog" -d "$PAIR_DEV" -x "$PAIR_GID_INDEX" -F -p "$p" "$@" "$PAIR_PEER_IP" || return 1
    pair_is b || return 0
    perftest_figures "$LOGDIR/$prog.client"
}

# perftest_cm PROG ARGS...: the same connected by rdma_cm, which picks the
# GID from the address.
perftest_cm() {
    local prog=$1 p
    shift
    pair_need_setup || return 1
    p=$(port)
    pair_server_client "$LOGDIR/$prog-cm" "cm:$p" "$RUN_TIMEOUT" \
        "$prog" -R -d "$PAIR_DEV" -F -p "$p" "$@" -- \
        "$prog" -R -d "$PAIR_DEV" -F -p "$p" "$@" "$PAIR_PEER_IP" || return 1
    pair_is b || return 0
    perftest_figures "$LOGDIR/$prog-cm.client"
}

t_send_bw() { perftest ib_send_bw -n "$BW_ITERS"; }
t_write_bw() { perftest ib_write_bw -n "$BW_ITERS"; }
t_read_bw() { perftest ib_read_bw -n "$BW_ITERS"; }
t_atomic_bw() { perftest ib_atomic_bw -n "$BW_ITERS"; }
t_send_lat() { perftest ib_send_lat -n "$LAT_ITERS"; }
t_write_lat() { perftest ib_write_lat -n "$LAT_ITERS"; }
t_read_lat() { perftest ib_read_lat -n "$LAT_ITERS"; }
t_send_bw_cm() { perftest_cm ib_send_bw -n "$BW_ITERS"; }
t_write_bw_cm() { perftest_cm ib_write_bw -n "$BW_ITERS"; }
t_read_bw_cm() { perftest_cm ib_read_bw -n "$BW_ITERS"; }
t_atomic_bw_cm() { perftest_cm ib_atomic_bw -n "$BW_ITERS"; }
t_send_lat_cm() { perftest_cm ib_send_lat -n "$LAT_ITERS"; }
t_write_lat_cm() { perftest_cm ib_write_lat -n "$LAT_ITERS"; }
t_read_lat_cm() { perftest_cm ib_read_lat -n "$LAT_ITERS"; }

# --- the rdma_cm examples ---------------------------------------------------------

# rping_between NAME COUNT IP PEER_IP: rping -V, the server on A at IP,
# the client on B; B counts the pings it printed.
rping_between() {
    local name=$1 count=$2 ip=$3 peer_ip=$4 p
    p=$(port)
    pair_server_client "$LOGDIR/$name" "cm:$p" "$RUN_TIMEOUT" \
        rping -s -a "$ip" -p "$p" -C "$count" -v -V -- \
        rping -c -a "$peer_ip" -p "$p" -C "$count" -v -V || return 1
    pair_is b || return 0
    [ "$(grep -c 'ping data' "$LOGDIR/$name.client")" -eq "$count" ] || {
        echo "the client did not print $count pings"
        return 1
    }
}

t_rping() {
    pair_need_setup || return 1
    rping_between rping 20 "$PAIR_IP" "$PAIR_PEER_IP"
}

# Over an 802.1Q VLAN of the RoCE netdev: the GIDs of the VLAN device
# are the port's too, the frames carry the tag, and ib_cm answers a REQ
# only if the receive completion names the VLAN it came on
# (ib_init_ah_attr_from_wc matches it against the GID's netdev).
VLAN_ID=100 VLAN_IP='' VLAN_PEER_IP=''

# vlan_up: VLAN_ID on the RoCE netdev, with VLAN_IP (each side's wire
# address in 10.100.0.0/24), and the device's GID on it, which ib_core
# adds from a work item.
vlan_up() {
    local vdev=$PAIR_NETDEV.$VLAN_ID i
    VLAN_IP=10.100.0.${PAIR_IP##*.} VLAN_PEER_IP=10.100.0.${PAIR_PEER_IP##*.}
    if [ ! -e "/sys/class/net/$vdev" ]; then
        ip link add link "$PAIR_NETDEV" name "$vdev" type vlan id "$VLAN_ID" &&
            ip addr add "$VLAN_IP/24" dev "$vdev" &&
            ip link set "$vdev" up || { echo "no VLAN device $vdev"; return 1; }
    fi
    for i in $(seq 50); do
        grep -qx "$vdev" /sys/class/infiniband/"$PAIR_DEV"/ports/1/gid_attrs/ndevs/* \
            2>/dev/null && return 0
        sleep 0.2
    done
    echo "$PAIR_DEV has no GID on $vdev"
    return 1
}

t_rping_vlan() {
    pair_need_setup || return 1
    vlan_up || return 1
    rping_between rping_vlan 10 "$VLAN_IP" "$VLAN_PEER_IP"
}

# UD datagrams from B to A over the VLAN; A's receiver asks each
# completion for its VLAN (ibv_wc_read_cvlan), which rxe's provider lacks.
t_ud_vlan() {
    local p a_kind=$PAIR_KIND
    [ "$PAIR_ROLE" = a ] || a_kind=$PAIR_PEER_KIND
    [ "$a_kind" = qrdma ] || { echo "a qrdma receiver (A) only"; return 77; }
    pair_need_setup || return 1
    vlan_up || return 1
    p=$(port)
    pair_server_client "$LOGDIR/ud_vlan" "cm:$p" "$RUN_TIMEOUT" \
        "$WIRE_FAULTS" ud-recv "$VLAN_IP" "$p" 200 256 "$VLAN_ID" -- \
        "$WIRE_FAULTS" ud-send "$VLAN_PEER_IP" "$p" 200 256 || return 1
    pair_is a || return 0
    grep '^# ' "$LOGDIR/ud_vlan.server" | sed 's/^# /INFO: /'
}

t_ucmatose() {
    local p
    pair_need_setup || return 1
    p=$(port)
    pair_server_client "$LOGDIR/ucmatose" "cm:$p" "$RUN_TIMEOUT" \
        ucmatose -p "$p" -c 2 -C 20 -S 1000 -- \
        ucmatose -s "$PAIR_PEER_IP" -p "$p" -c 2 -C 20 -S 1000
}

# udaddy has no port option: it is always 7174 (of the UDP port space).
t_udaddy() {
    pair_need_setup || return 1
    pair_server_client "$LOGDIR/udaddy" cm:7174 "$RUN_TIMEOUT" \
        udaddy -c 2 -C 20 -S 512 -- \
        udaddy -s "$PAIR_PEER_IP" -c 2 -C 20 -S 512
}

# --- UD and RNR (tests/vm/wire-faults.c) ------------------------------------------

WIRE_FAULTS=$QRDMA_PROVIDER_DIR/wire-faults

# UD datagrams numbered and checksummed, from B to A: behind the relay
# some are lost, and none may arrive corrupted or twice.
t_ud_datagrams() {
    local p
    pair_need_setup || return 1
    p=$(port)
    pair_server_client "$LOGDIR/ud_datagrams" "cm:$p" "$RUN_TIMEOUT" \
        "$WIRE_FAULTS" ud-recv "$PAIR_IP" "$p" "$UD_COUNT" 512 -- \
        "$WIRE_FAULTS" ud-send "$PAIR_PEER_IP" "$p" "$UD_COUNT" 512 || return 1
    pair_is a || return 0
    grep '^# received' "$LOGDIR/ud_datagrams.server" | sed 's/^# /INFO: /'
}

# rnr PAIR_RNR_RETRY DELAY_MS: A's receive is late, B's send meets RNR
# NAKs; the RNR counters of both devices must have moved.
rnr() {
    local p dir=/sys/class/infiniband/$PAIR_DEV/ports/1/hw_counters before after f
    pair_need_setup || return 1
    p=$(port)
    f=rcvd_rnr_err
    pair_is a && f=send_rnr_err
    before=$(cat "$dir/$f")
    pair_server_client "$LOGDIR/$PAIR_TEST" "cm:$p" "$RUN_TIMEOUT" \
        "$WIRE_FAULTS" rnr-server "$PAIR_IP" "$p" "$1" "$2" -- \
        "$WIRE_FAULTS" rnr-client "$PAIR_PEER_IP" "$p" "$1" || return 1
    after=$(cat "$dir/$f")
    echo "INFO: $PAIR_ROLE: $f $before -> $after"
    [ "$after" -gt "$before" ] || { echo "no RNR NAK counted in $f"; return 1; }
    # On a clean wire, a finite rnr_retry means exactly 1 + rnr_retry NAKs
    # received by the requester (B) before its send fails.  The responder
    # (A) may send more: a requester whose ACK timer runs out while it
    # waits (rxe under TCG, seen in CI) sends the request once more, and
    # that copy gets a NAK of its own, which a requester already past its
    # retries drops.  One such copy per try at most.
    [ "$1" != 7 ] && [ "$(pair_arg relay)" != 1 ] || return 0
    local naks=$((after - before)) want=$(($1 + 1))
    if pair_is a; then
        [ "$naks" -ge "$want" ] && [ "$naks" -le $((2 * want)) ] && return 0
        echo "$naks RNR NAKs sent for rnr_retry $1, not $want to $((2 * want))"
    else
        [ "$naks" = "$want" ] && return 0
        echo "$naks RNR NAKs received for rnr_retry $1, not $want"
    fi
    return 1
}

t_rnr_forever() { rnr 7 500; }
t_rnr_finite() { rnr 3 -1; }

# ATOMIC_WRITE and FLUSH from B to A, each answered by an empty RDMA READ
# response (IBA 1.5).  rxe (Linux 6.12) computes a FLUSH's ICRC over its
# headers twice, sending and checking, so FLUSH goes between qrdma and rxe
# in neither direction: qrdma follows the RoCEv2 annex
# (docs/specs/qrdma.rst, "Interoperation with Linux rxe").  Between
# different kinds, ATOMIC_WRITE alone.
t_rmw() {
    local p flush=flush
    pair_need_setup || return 1
    p=$(port)
    if [ "$PAIR_KIND" != "$PAIR_PEER_KIND" ]; then
        flush=no-flush
        echo "INFO: ATOMIC_WRITE alone: rxe's FLUSH frames carry an ICRC over their headers twice"
    fi
    pair_server_client "$LOGDIR/rmw" "cm:$p" "$RUN_TIMEOUT" \
        "$WIRE_FAULTS" rmw-server "$PAIR_IP" "$p" "$RMW_COUNT" -- \
        "$WIRE_FAULTS" rmw-client "$PAIR_PEER_IP" "$p" "$RMW_COUNT" "$flush"
}

# --- NVMe over RDMA ---------------------------------------------------------------

NVMET=/sys/kernel/config/nvmet
NVME_DISK=/dev/ram0
NVME_PORT=4420

# A's half, before B's: nvmet-rdma on the wire address serving a 256 MiB
# brd RAM disk (null_blk keeps no data), listening.
nvme_target_up() {
    pair_need_setup || return 1
    modprobe brd rd_nr=1 rd_size=262144 && modprobe nvmet-rdma || return 1
    mkdir -p "$NVMET/subsystems/$NQN/namespaces/1" "$NVMET/ports/1" &&
        echo 1 >"$NVMET/subsystems/$NQN/attr_allow_any_host" &&
        echo -n "$NVME_DISK" >"$NVMET/subsystems/$NQN/namespaces/1/device_path" &&
        echo 1 >"$NVMET/subsystems/$NQN/namespaces/1/enable" &&
        echo rdma >"$NVMET/ports/1/addr_trtype" &&
        echo ipv4 >"$NVMET/ports/1/addr_adrfam" &&
        echo "$PAIR_IP" >"$NVMET/ports/1/addr_traddr" &&
        echo "$NVME_PORT" >"$NVMET/ports/1/addr_trsvcid" &&
        ln -s "$NVMET/subsystems/$NQN" "$NVMET/ports/1/subsystems/$NQN" &&
        wait_listen_rdma "$NVME_PORT" || return 1
    echo "INFO: $NQN on $PAIR_IP:$NVME_PORT, namespace $NVME_DISK (brd, 256 MiB)"
}

# A's half, after B's: the target gone, whatever state nvme_target_up
# left it in.
nvme_target_down() {
    local rc=0
    rm -f "$NVMET/ports/1/subsystems/$NQN"
    rmdir "$NVMET/ports/1" 2>/dev/null
    [ ! -e "$NVMET/subsystems/$NQN/namespaces/1/enable" ] ||
        echo 0 >"$NVMET/subsystems/$NQN/namespaces/1/enable"
    rmdir "$NVMET/subsystems/$NQN/namespaces/1" "$NVMET/subsystems/$NQN" 2>/dev/null
    modprobe -r nvmet-rdma brd || rc=1
    [ ! -e "$NVMET/subsystems/$NQN" ] || { echo "$NQN is still there"; rc=1; }
    return "$rc"
}

# nvme_connect: connected to A's target; prints the namespace.  Behind
# the relay, a keep-alive timeout of 30 s, not 5: under TCG an RC QP
# recovering from lost packets (ACK timeouts of half a second) can hold
# a keep-alive back longer than 5 s, and the target then drops the
# controller, though no data is lost.
nvme_connect() {
    local kato=()
    [ "$(pair_arg relay)" != 1 ] || kato=(--keep-alive-tmo=30)
    timeout 120 nvme connect -t rdma -a "$PAIR_PEER_IP" -s "$NVME_PORT" -n "$NQN" -i 2 \
        "${kato[@]}" >&2 || return 1
    wait_for 20 nvme_namespace || { echo "no namespace" >&2; return 1; }
    wait_for 5 sh -c "test -b $(nvme_namespace)" || return 1
    nvme_namespace
}

nvme_disconnect() {
    timeout 60 nvme disconnect -n "$NQN"
}

# t_nvme, B's half (the host runs nvme_target_up and nvme_target_down
# on A around it): ext4 on the namespace, files of random bytes with their
# checksums, unmounted and disconnected; connected again (nothing of the
# disk in the page cache), mounted, the checksums compared.
t_nvme() {
    local ns mnt=/mnt/nvme src=/tmp/nvme-src s e i
    pair_need_setup || return 1
    modprobe nvme-rdma || return 1
    mkdir -p "$src/small" "$mnt"
    head -c 32M /dev/urandom >"$src/big" || return 1
    for i in $(seq 32); do
        head -c $((RANDOM % 65536 + 1)) /dev/urandom >"$src/small/f$i" || return 1
    done
    (cd "$src" && find . -type f -exec sha256sum {} + >/tmp/nvme.sha256) || return 1
    ns=$(nvme_connect) || return 1
    nvme list-subsys
    echo "INFO: $NQN over $PAIR_PEER_IP: $ns"
    if ! mkfs.ext4 -q -F "$ns" || ! mount "$ns" "$mnt"; then
        nvme_disconnect
        return 1
    fi
    s=$(date +%s.%N)
    if ! cp -r "$src/." "$mnt/" || ! sync; then
        umount "$mnt"
        nvme_disconnect
        return 1
    fi
    e=$(date +%s.%N)
    pair_result "write 32 MiB + 32 files" "$(awk -v s="$s" -v e="$e" 'BEGIN {printf "%.1f", 32 / (e - s)}') MiB/s"
    umount "$mnt" && nvme_disconnect || return 1
    wait_for 20 sh -c '! ls /sys/block | grep -q ^nvme' || { echo "the namespace stayed"; return 1; }
    ns=$(nvme_connect) || return 1
    if ! e2fsck -fn "$ns" || ! mount "$ns" "$mnt"; then
        nvme_disconnect
        return 1
    fi
    (cd "$mnt" && sha256sum -c --quiet /tmp/nvme.sha256) || { umount "$mnt"; nvme_disconnect; return 1; }
    umount "$mnt" && nvme_disconnect || return 1
    echo "INFO: $(wc -l </tmp/nvme.sha256) files equal after a reconnect"
}

# t_nvme_fio, B's half as t_nvme's: fio writes the namespace with a
# CRC32C in every block and reads it all back, checking each (fio exits
# nonzero on one bad block).
t_nvme_fio() {
    local ns rc=0
    pair_need_setup || return 1
    modprobe nvme-rdma || return 1
    ns=$(nvme_connect) || return 1
    echo "INFO: $NQN over $PAIR_PEER_IP: $ns"
    timeout 600 fio --name=verify --filename="$ns" --ioengine=libaio --direct=1 \
        --rw=randwrite --bsrange=4k-128k --iodepth=8 --size="$FIO_SIZE" \
        --verify=crc32c --do_verify=1 --verify_fatal=1 --randseed=1 \
        >"$LOGDIR/fio.out" 2>&1 || rc=1
    grep -E 'err=|verify|READ:|WRITE:' "$LOGDIR/fio.out"
    # What the host's transport went through, for a failure's reader:
    # timeouts, reconnects, QP errors.
    [ "$rc" = 0 ] || dmesg | grep -iE 'nvme|rdma|qrdma' | tail -n 20
    nvme_disconnect || rc=1
    [ "$rc" = 0 ] && echo "INFO: fio wrote $FIO_SIZE in blocks of 4-128 KiB and read every block back with its CRC32C correct"
    return "$rc"
}

# --- faults -----------------------------------------------------------------------

# The recovery counters of this side's device, summed: what RC does when
# the wire loses, repeats, reorders or corrupts (rxe's names, qrdma's too;
# icrc_errors is qrdma's alone, rxe drops such frames silently).
t_faults_met() {
    local dir=/sys/class/infiniband/$PAIR_DEV/ports/1/hw_counters f n sum=0
    pair_need_setup || return 1
    for f in duplicate_request out_of_seq_request rcvd_seq_err \
             completer_retry_err icrc_errors; do
        [ -r "$dir/$f" ] || continue
        n=$(cat "$dir/$f")
        echo "INFO: $PAIR_ROLE: $f $n"
        pair_result "$PAIR_ROLE $PAIR_DEV $f" "$n"
        sum=$((sum + n))
    done
    [ "$sum" -gt 0 ] || { echo "no recovery counted on $PAIR_DEV"; return 1; }
}
