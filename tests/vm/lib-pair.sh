# shellcheck shell=bash
# Two guests, one test: the guest side of scripts/run-vm-pair, and of the
# host-driven pair tests of tests/functional/ (qrdma_test/pair.py);
# sourced, never run, after lib-qrdma.sh (whose TAP plumbing and setup it
# uses):
#
#   . "${QRDMA_SRC:-/qrdma/src}/tests/vm/lib-qrdma.sh"
#   . "${QRDMA_SRC:-/qrdma/src}/tests/vm/lib-pair.sh"
#   pair_init || exit 1      # under run-vm-pair; pair_args on the harness
#
# A host-driven test runs one function at a time in each guest, after
# pair_args (the role, kinds and addresses of the kernel command line),
# and is the only one to sequence the two sides: it uses none of the
# shared directory's functions below.  What pair_device_info printed on
# its last line it passes to each later function as PAIR_DEV,
# PAIR_GID_INDEX, PAIR_NETDEV, PAIR_MAC and the peer's PAIR_PEER_*.
#
# run-vm-pair boots VMs A and B with the same script and tells each on
# its kernel command line who it is: qrdma.role=a|b, qrdma.kind and
# qrdma.peer_kind (qrdma or rxe: what carries RDMA at each end of the
# wire), qrdma.wire_ip and qrdma.peer_ip (each end's address on the
# wire).  The two guests meet in a host directory both mount at
# /qrdma/shared (9p, uncached, so a file one writes is there for the
# other at once):
#
#   pair_signal NAME [VALUE]   a file $ROLE.NAME holding VALUE (default 1),
#                              written whole (a rename) or not at all
#   pair_wait NAME TIMEOUT     the peer's NAME: its value once it is there;
#                              fails after TIMEOUT s, or at once when the
#                              peer can send nothing more (its script ended,
#                              its VM stopped: run-vm-pair writes
#                              host.ROLE.exit then)
#   pair_barrier NAME TIMEOUT  both sides reach NAME
#   pair_is a|b                the role test, for a half that differs
#   pair_arg NAME [DEFAULT]    qrdma.NAME of the kernel command line
#
# The tests run in lock step: pair_run_test NAME, on both sides, meets the
# peer at NAME's start, runs t_NAME (this side's half, the same function
# on both: it asks pair_is where it differs), and then B hands A its exit
# status, output and figures, and A prints the TAP line of the two: ok only
# if both halves passed (0), a skip if one skipped (77) and the other did
# not fail, otherwise a failure with both outputs as TAP comments.  The
# description names the kinds ("rc_pingpong A=rxe B=rxe: ...").  B prints
# a TAP line of its own half to its console; run-vm-pair passes on A's.
# A decides, and tells B at the start, whether a test runs at all: after
# $PAIR_FUSE failures in a row it runs none but the final checks.
#
# Client and server, written once (A serves, B is the client):
#
#   pair_server_client OUT PORT TIMEOUT SERVER_CMD... -- CLIENT_CMD...
#
# A starts the server, waits until it listens on PORT (TCP, or cm:PORT for
# an rdma_cm listener), then says so; B waits for that and runs the client.
# The halves' outputs: OUT.server on A, OUT.client on B.
#
# The test setup (t_setup) brings up this side's device by kind (qrdma:
# qrdma_setup with the wire address on the qrdma port's netdev; rxe:
# rdma_rxe on eth0, which run-vm-pair put on the wire) and trades with the
# peer what the other needs: device, GID index, address, netdev and MAC.
# Afterwards: $PAIR_DEV, $PAIR_GID_INDEX, $PAIR_NETDEV; $PAIR_PEER_DEV,
# $PAIR_PEER_GID_INDEX, $PAIR_PEER_IP, $PAIR_PEER_MAC.  Its first half,
# pair_device_info, brings the device up and prints what the peer needs
# as its last line ("dev=... gid_index=... ip=... netdev=... mac=...
# kind=...").  The other tests of
# this file: ping (ARP and ICMP across the wire, both ways),
# wire_counters (the device's packet counters moved), device_down (rmmod
# qrdma or rdma link delete, leaving nothing behind) and pair_dmesg_clean
# (lib-qrdma.sh's dmesg_clean on each side).
#
# pair_result FIGURE VALUE records a figure of the running test (on either
# side); A writes them all to $QRDMA_OUT/$PAIR_NAME.tsv (pair, test,
# figure, value) and, as a table, to $QRDMA_OUT/$PAIR_NAME.txt, for a
# bench to set one pair of kinds beside another.

PAIR_DIR=${PAIR_DIR:-/qrdma/shared}
# Polls of the shared directory per second (each is one 9p round trip),
# and the pause between two.
PAIR_POLL_HZ=5 PAIR_POLL_S=0.2
# How long a side waits for the other to reach a test: the peer may still
# be booting at the first one (two TCG guests on two cores).
PAIR_START_TIMEOUT=${PAIR_START_TIMEOUT:-300}
# How long A waits for B's outcome once its own half is done.
PAIR_RC_TIMEOUT=${PAIR_RC_TIMEOUT:-300}
# After this many failed tests in a row (qrdma.fuse=N, 0 for never), A
# runs no more tests but those of $PAIR_ALWAYS, and reports the others
# failed without running them: when the wire carries no RDMA, each test
# would wait out its timeout, and the run the whole time of meson's.
PAIR_FUSE=3 PAIR_FAILED_IN_A_ROW=0
PAIR_ALWAYS="setup ping wire_counters device_down pair_dmesg_clean"

PAIR_ROLE='' PAIR_PEER='' PAIR_KIND='' PAIR_PEER_KIND='' PAIR_IP='' PAIR_PEER_IP=''
PAIR_LABEL='' PAIR_NAME=wire-pair
# What t_setup finds out; a host-driven test (tests/functional/) passes
# them to each function it runs in the environment instead.
PAIR_DEV=${PAIR_DEV:-} PAIR_GID_INDEX=${PAIR_GID_INDEX:-}
PAIR_NETDEV=${PAIR_NETDEV:-} PAIR_MAC=${PAIR_MAC:-}
PAIR_PEER_DEV=${PAIR_PEER_DEV:-} PAIR_PEER_GID_INDEX=${PAIR_PEER_GID_INDEX:-}
PAIR_PEER_MAC=${PAIR_PEER_MAC:-}
# The running test, and why the peer is known not to answer any more.
PAIR_TEST=${PAIR_TEST:-} PAIR_PEER_LOST=''
declare -A PAIR_ARG=()

# pair_arg NAME [DEFAULT]: qrdma.NAME of the kernel command line.
pair_arg() {
    echo "${PAIR_ARG[$1]:-${2:-}}"
}

# pair_args: the role, kinds and addresses from the kernel command line.
pair_args() {
    local w words
    read -r -a words </proc/cmdline
    for w in "${words[@]}"; do
        [[ $w != qrdma.*=* ]] || { w=${w#qrdma.}; PAIR_ARG[${w%%=*}]=${w#*=}; }
    done
    PAIR_ROLE=$(pair_arg role)
    case $PAIR_ROLE in
        a) PAIR_PEER=b ;;
        b) PAIR_PEER=a ;;
        *) echo "no qrdma.role=a|b on the kernel command line: not a VM of a pair" >&2
           return 1 ;;
    esac
    PAIR_KIND=$(pair_arg kind rxe)
    PAIR_PEER_KIND=$(pair_arg peer_kind rxe)
    PAIR_IP=$(pair_arg wire_ip)
    PAIR_PEER_IP=$(pair_arg peer_ip)
    PAIR_NAME=$(pair_arg pair wire-pair)
    PAIR_FUSE=$(pair_arg fuse "$PAIR_FUSE")
    if [ -z "$PAIR_IP" ] || [ -z "$PAIR_PEER_IP" ]; then
        echo "no qrdma.wire_ip or qrdma.peer_ip on the kernel command line" >&2
        return 1
    fi
    case "$PAIR_KIND $PAIR_PEER_KIND" in
        qrdma\ qrdma|qrdma\ rxe|rxe\ qrdma|rxe\ rxe) ;;
        *) echo "kinds must be qrdma or rxe: $PAIR_KIND, $PAIR_PEER_KIND" >&2; return 1 ;;
    esac
    if [ "$PAIR_ROLE" = a ]; then
        PAIR_LABEL="A=$PAIR_KIND B=$PAIR_PEER_KIND"
    else
        PAIR_LABEL="A=$PAIR_PEER_KIND B=$PAIR_KIND"
    fi
    # The qrdma port takes the wire address (qrdma_setup reads it).
    # shellcheck disable=SC2034 # lib-qrdma.sh's
    [ "$PAIR_KIND" != qrdma ] || QRDMA_IP=$PAIR_IP
}

# pair_init: pair_args, and the shared directory mounted; the guest's init
# does not know the share (its image would have to be rebuilt to), so it
# is mounted here.
pair_init() {
    pair_args || return 1
    mkdir -p "$PAIR_DIR"
    mountpoint -q "$PAIR_DIR" ||
        mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=none \
            qrdma_shared "$PAIR_DIR" || {
        echo "cannot mount the shared directory (9p tag qrdma_shared) at $PAIR_DIR" >&2
        return 1
    }
    echo "# pair $PAIR_NAME: role $PAIR_ROLE ($PAIR_LABEL), wire $PAIR_IP, peer $PAIR_PEER_IP"
}

pair_is() {
    [ "$PAIR_ROLE" = "$1" ]
}

# --- signals --------------------------------------------------------------------

pair_signal() {
    local f=$PAIR_DIR/$PAIR_ROLE.$1
    [[ $1 =~ ^[A-Za-z0-9._-]+$ ]] || { echo "pair_signal: bad name '$1'" >&2; return 1; }
    printf '%s\n' "${2:-1}" >"$f.tmp" && mv -f "$f.tmp" "$f"
}

# The peer can send nothing more: its script said it is done, or its VM
# stopped (run-vm-pair's marker), or an earlier wait found it gone.
pair_peer_gone() {
    [ -n "$PAIR_PEER_LOST" ] || [ -e "$PAIR_DIR/$PAIR_PEER.done" ] ||
        [ -e "$PAIR_DIR/host.$PAIR_PEER.exit" ]
}

pair_wait() {
    local f=$PAIR_DIR/$PAIR_PEER.$1 tries=$(($2 * PAIR_POLL_HZ)) gone=0
    while [ ! -e "$f" ]; do
        # Looked at once more after the peer went: it may have written
        # the file just before.
        [ "$gone" = 0 ] || break
        pair_peer_gone && gone=1 && continue
        tries=$((tries - 1))
        [ "$tries" -gt 0 ] || break
        sleep "$PAIR_POLL_S"
    done
    if [ -e "$f" ]; then
        cat "$f"
        return 0
    fi
    if [ "$gone" = 1 ]; then
        echo "$PAIR_PEER's side ended before it gave $1${PAIR_PEER_LOST:+ ($PAIR_PEER_LOST)}" >&2
    else
        echo "no $1 from $PAIR_PEER's side within $2 s" >&2
    fi
    return 1
}

pair_barrier() {
    pair_signal "$1" && pair_wait "$1" "$2" >/dev/null
}

# --- the tests in lock step -------------------------------------------------------

pair_describe() {
    case $1 in
        setup) echo "each side's device up on the wire ($PAIR_IP and $PAIR_PEER_IP), GID index and address traded" ;;
        ping) echo "ping across the wire both ways; each side's ARP entry has the other's MAC" ;;
        wire_counters) echo "each side's device counted RoCE packets sent and received (rdma statistic); qrdma dropped none for its headers or ICRC" ;;
        device_down) echo "each side's device goes away (rmmod qrdma, rdma link delete rxe0)" ;;
        pair_dmesg_clean) echo "dmesg on both sides has no WARNING/BUG/Oops/lockdep report or qrdma error" ;;
        *) describe "$1" ;;
    esac
}

# pair_side_log ROLE NAME: that side's output of test NAME.
pair_side_log() {
    if [ "$1" = "$PAIR_ROLE" ]; then
        cat "$LOGDIR/$2.log"
    else
        cat "$PAIR_DIR/$1.$2.log" 2>/dev/null || echo "(no output from $1's side)"
    fi
}

# pair_verdict NAME: whether A runs test NAME: "run", or why not.
pair_verdict() {
    if [ "$PAIR_FUSE" -gt 0 ] && [ "$PAIR_FAILED_IN_A_ROW" -ge "$PAIR_FUSE" ] &&
       [[ " $PAIR_ALWAYS " != *" $1 "* ]]; then
        echo "not run: $PAIR_FUSE tests in a row had failed before it (qrdma.fuse=0 runs every test)"
    else
        echo run
    fi
}

pair_run_test() {
    local name=$1 desc rc=0 prc todo=${QRDMA_TODO[$1]:-} why verdict
    PAIR_TEST=$name
    desc="$name $PAIR_LABEL: $(pair_describe "$name")"
    : >"$LOGDIR/$name.log"
    # A says at the start whether the test runs; B does as A says.
    verdict=run
    pair_is b || verdict=$(pair_verdict "$name")
    if [ -z "$PAIR_PEER_LOST" ]; then
        pair_signal "$name.start" "$verdict"
        if why=$(pair_wait "$name.start" "$PAIR_START_TIMEOUT" 2>>"$LOGDIR/$name.log"); then
            pair_is a || verdict=$why
        else
            PAIR_PEER_LOST="lost at the start of $name"
        fi
    fi
    if [ "$verdict" = run ]; then
        # This side's half runs even without the peer: a half of its own
        # (dmesg_clean) still means something, and one that needs the
        # peer fails at once.
        "t_$name" >>"$LOGDIR/$name.log" 2>&1 </dev/null || rc=$?
    else
        echo "$verdict" >>"$LOGDIR/$name.log"
        rc=1
    fi
    if pair_is b; then
        cp "$LOGDIR/$name.log" "$PAIR_DIR/b.$name.log.tmp" &&
            mv -f "$PAIR_DIR/b.$name.log.tmp" "$PAIR_DIR/b.$name.log"
        pair_signal "$name.rc" "$rc"
        prc=0
    else
        prc=$(pair_wait "$name.rc" "$PAIR_RC_TIMEOUT" 2>>"$LOGDIR/$name.log") || {
            prc=none
            [ -n "$PAIR_PEER_LOST" ] || PAIR_PEER_LOST="gave no outcome of $name"
        }
        pair_merge_results "$name"
    fi
    # B's line is its half's alone, for its console.
    pair_is a || desc+=" (B's half)"
    if [ "$rc" = 0 ] && [ "$prc" = 0 ]; then
        PAIR_FAILED_IN_A_ROW=0
        ktap_result ok "$desc"
        [ -z "$todo" ] || echo "# passed, known to fail: $todo"
    elif { [ "$rc" = 77 ] || [ "$prc" = 77 ]; } &&
         { [ "$rc" = 0 ] || [ "$rc" = 77 ]; } && { [ "$prc" = 0 ] || [ "$prc" = 77 ]; }; then
        if [ "$rc" = 77 ]; then
            why=$(tail -n 1 "$LOGDIR/$name.log")
        else
            why=$(pair_side_log "$PAIR_PEER" "$name" | tail -n 1)
        fi
        ktap_result skip "$desc" "$why"
    else
        if [ -n "$todo" ]; then
            ktap_result todo "$desc" "$todo"
        else
            ktap_result fail "$desc"
            [[ " $PAIR_ALWAYS " == *" $name "* ]] ||
                PAIR_FAILED_IN_A_ROW=$((PAIR_FAILED_IN_A_ROW + 1))
        fi
        if pair_is a; then
            { echo "--- A's half (exit $rc)"; cat "$LOGDIR/$name.log"
              echo "--- B's half (exit $prc)"; pair_side_log b "$name"; } | diag
        else
            diag "$LOGDIR/$name.log"
        fi
    fi
    grep -h '^INFO: ' "$LOGDIR/$name.log" | sed "s/^INFO: /# ${PAIR_ROLE^^}: /" || true
    if pair_is a; then
        pair_side_log b "$name" | grep '^INFO: ' | sed 's/^INFO: /# B: /' || true
    fi
    PAIR_TEST=
}

# pair_run_tests: every test of $TESTS in order, then the plan; B says it
# is done, so that A waits for nothing more from it.
pair_run_tests() {
    local t rc=0
    mkdir -p "$LOGDIR"
    : >"$LOGDIR/results.tsv"
    for t in "${TESTS[@]}"; do
        pair_run_test "$t"
    done
    if pair_is a; then
        pair_results_table
    fi
    tap_end || rc=$?
    pair_signal 'done' "$rc"
    return "$rc"
}

# --- figures ----------------------------------------------------------------------

pair_result() {
    # For the host, which gathers the figures of both sides.
    printf 'RESULT: %s\t%s\n' "$1" "$2"
    [ -n "${LOGDIR:-}" ] && [ -e "$LOGDIR/results.tsv" ] || return 0
    printf '%s\t%s\t%s\n' "$PAIR_TEST" "$1" "$2" >>"$LOGDIR/results.tsv"
    pair_is a || printf '%s\t%s\t%s\n' "$PAIR_TEST" "$1" "$2" >>"$PAIR_DIR/b.results.tsv"
}

# A takes B's figures of test NAME into its own file.
pair_merge_results() {
    [ -s "$PAIR_DIR/b.results.tsv" ] || return 0
    awk -F'\t' -v t="$1" '$1 == t' "$PAIR_DIR/b.results.tsv" >>"$LOGDIR/results.tsv"
}

# The figures, one file for programs and one for people; also as TAP
# comments.
pair_results_table() {
    local pair=$PAIR_KIND-$PAIR_PEER_KIND tsv=$QRDMA_OUT/$PAIR_NAME.tsv txt=$QRDMA_OUT/$PAIR_NAME.txt
    [ -s "$LOGDIR/results.tsv" ] || return 0
    awk -F'\t' -v p="$pair" 'BEGIN {OFS = "\t"; print "pair", "test", "figure", "value"}
        {print p, $1, $2, $3}' "$LOGDIR/results.tsv" >"$tsv"
    {
        echo "Two VMs over the wire, $PAIR_LABEL ($PAIR_IP and $PAIR_PEER_IP)"
        awk -F'\t' '{ if (length($1 " " $2) > w) w = length($1 " " $2); r[NR] = $0 }
            END { for (i = 1; i <= NR; i++) { split(r[i], f, "\t")
                  printf "%-*s  %s\n", w, f[1] " " f[2], f[3] } }' "$LOGDIR/results.tsv"
    } >"$txt"
    sed 's/^/# /' "$txt"
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

# pair_server_client_shared OUT PORT TIMEOUT SERVER_CMD... -- CLIENT_CMD...:
# pair_server_client through the shared directory, for run-vm-pair, the
# test run again on PAIR_RETRY.
PAIR_RETRY=75
pair_server_client_shared() {
    local n rc
    for n in 1 2 3; do
        pair_server_client_once "$n" "$@"
        rc=$?
        [ "$rc" = "$PAIR_RETRY" ] || return "$rc"
        echo "--- the client came before the server's rdma_cm listener (perftest -R), again"
    done
    return 1
}

pair_client_retry() {
    grep -q 'RDMA_CM_EVENT_REJECTED; error: 8\.' "$1"
}

pair_server_client_once() {
    local n=$1 out=$2 port=$3 tmo=$4 server=() spid rc=0 crc tries
    shift 4
    while [ "$1" != -- ]; do
        server+=("$1")
        shift
    done
    shift
    if pair_is b; then
        # A's server listens within wait_listen's 20 s of starting.
        crc=$(pair_wait "$PAIR_TEST.$n.listen" 60) || return 1
        [ "$crc" = ok ] || { echo "A's server did not start"; return 1; }
        timeout "$tmo" "$@" >"$out.client" 2>&1 || rc=$?
        echo "--- client: $* (exit $rc)"
        cat "$out.client"
        if [ "$rc" != 0 ] && pair_client_retry "$out.client"; then
            pair_signal "$PAIR_TEST.$n.client" retry
            return "$PAIR_RETRY"
        fi
        pair_signal "$PAIR_TEST.$n.client" "$rc"
        return "$rc"
    fi
    timeout "$tmo" "${server[@]}" >"$out.server" 2>&1 &
    spid=$!
    if ! case $port in
             cm:*) wait_listen_rdma "${port#cm:}" ;;
             *) wait_listen "$port" ;;
         esac; then
        pair_signal "$PAIR_TEST.$n.listen" fail
        kill "$spid" 2>/dev/null
        wait "$spid" 2>/dev/null
        echo "--- server: ${server[*]} (did not listen)"
        cat "$out.server"
        return 1
    fi
    pair_signal "$PAIR_TEST.$n.listen" ok
    # The server ends by itself once its client is done; a server whose
    # client failed may wait for it until its timeout, so it is stopped
    # as soon as B says so.
    tries=$(((tmo + 10) * PAIR_POLL_HZ))
    while kill -0 "$spid" 2>/dev/null && [ "$tries" -gt 0 ]; do
        crc=$(cat "$PAIR_DIR/b.$PAIR_TEST.$n.client" 2>/dev/null) || crc=
        if { [ -n "$crc" ] && [ "$crc" != 0 ]; } || pair_peer_gone; then
            # Its last words first.
            sleep 1
            kill "$spid" 2>/dev/null
            break
        fi
        tries=$((tries - 1))
        sleep "$PAIR_POLL_S"
    done
    wait "$spid" || rc=$?
    echo "--- server: ${server[*]} (exit $rc)"
    cat "$out.server"
    crc=$(cat "$PAIR_DIR/b.$PAIR_TEST.$n.client" 2>/dev/null) || crc=
    [ "$crc" != retry ] || return "$PAIR_RETRY"
    return "$rc"
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
}

# pair_device_info: pair_device_up, saying what it did, then what the
# peer needs of this side on the last line: "dev=... gid_index=... ip=...
# netdev=... mac=... kind=...".
pair_device_info() {
    local rc=0 log
    log=$(mktemp)
    # Its INFO line would repeat t_setup's: kept as a plain one.
    pair_device_up >"$log" 2>&1 || rc=$?
    sed 's/^INFO: //' "$log"
    rm -f "$log"
    [ "$rc" = 0 ] || return 1
    ibv_devinfo -d "$PAIR_DEV" || return 1
    echo "dev=$PAIR_DEV gid_index=$PAIR_GID_INDEX ip=$PAIR_IP netdev=$PAIR_NETDEV mac=$PAIR_MAC kind=$PAIR_KIND"
}

t_setup() {
    local info w k v log
    # Not in a command substitution: the device's variables are set here.
    log=$(mktemp)
    pair_device_info >"$log" || { cat "$log"; rm -f "$log"; pair_signal info failed; return 1; }
    cat "$log"
    pair_signal info "$(tail -n 1 "$log")"
    rm -f "$log"
    info=$(pair_wait info 120) || return 1
    [ "$info" != failed ] || { echo "the peer's device did not come up"; return 1; }
    for w in $info; do
        k=${w%%=*} v=${w#*=}
        case $k in
            dev) PAIR_PEER_DEV=$v ;;
            gid_index) PAIR_PEER_GID_INDEX=$v ;;
            mac) PAIR_PEER_MAC=$v ;;
            ip) [ "$v" = "$PAIR_PEER_IP" ] || { echo "the peer says it is $v, not $PAIR_PEER_IP"; return 1; } ;;
        esac
    done
    echo "INFO: $PAIR_DEV on $PAIR_NETDEV ($PAIR_MAC), $PAIR_IP, RoCE v2 GID index $PAIR_GID_INDEX;" \
        "peer $PAIR_PEER_DEV, $PAIR_PEER_IP ($PAIR_PEER_MAC), GID index $PAIR_PEER_GID_INDEX"
    [ -n "$PAIR_PEER_DEV" ] && [ -n "$PAIR_PEER_GID_INDEX" ] && [ -n "$PAIR_PEER_MAC" ]
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
