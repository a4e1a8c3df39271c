#!/bin/bash
# The HPC stack as a client of qrdma, each part beside the same on rxe in
# this one guest: UCX (ucx_info sees the device; ucx_perftest over
# rc_verbs and ud_verbs, tag and put tests), Open MPI 5 over UCX (an MPI
# program of two ranks that checks every byte it receives), and qperf.
# Both ends of every run are in this guest.  Run inside the guest as root by
#   scripts/build-driver && scripts/build-clients && scripts/install-guest
#   scripts/run-vm --script tests/vm/clients-hpc.sh -- \
#       -device pcie-root-port,id=rp0,bus=pcie.0,chassis=1 -device qrdma,bus=rp0
# The MPI program is build/clients/mpi-exchange (tests/vm/mpi-exchange.c,
# built by scripts/build-clients).  Prints TAP; exits nonzero if any test
# failed.  Outcomes and figures of both devices, side by side:
# $QRDMA_OUT/clients-hpc.txt; command output in $QRDMA_OUT/clients-hpc/.
set -uo pipefail

# run-vm copies the script to /qrdma/run: the library is in the checkout.
. "${QRDMA_SRC:-/qrdma/src}/tests/vm/lib-qrdma.sh"

LOGDIR=${QRDMA_OUT:-/tmp}/clients-hpc
mkdir -p "$LOGDIR"
: >"$LOGDIR/results.tsv"
: >"$LOGDIR/results-known"
: >"$LOGDIR/results-skipped"
MPI_EXCHANGE=$QRDMA_SRC_DIR/build/clients/mpi-exchange
RUN_TIMEOUT=120
PORT=13400

# Known failures, each with its reason (docs/devel/qrdma-testing.rst, "The RDMA
# clients"); they fail on rxe as on qrdma.
UCX_UD_TIMEOUTS="UCX 1.18's ud_verbs endpoints time out"
QPERF_UD="qperf 0.4.11 makes UD address handles without a GRH, which RoCE needs"
qrdma_todo ucx_ud_qrdma "$UCX_UD_TIMEOUTS, as on rxe"
qrdma_todo ucx_ud_rxe "$UCX_UD_TIMEOUTS on rxe"
qrdma_todo qperf_ud_qrdma "$QPERF_UD"
qrdma_todo qperf_ud_rxe "$QPERF_UD"

describe() {
    case $1 in
        rxe_up) echo "rdma_rxe on eth0, the reference" ;;
        ucx_info_*) echo "ucx_info -d lists rc_verbs and ud_verbs on ${1#ucx_info_}" ;;
        ucx_rc_*) echo "ucx_perftest over rc_verbs on ${1#ucx_rc_}: UCT put_lat, put_bw; UCP tag_lat, tag_bw" ;;
        ucx_ud_*) echo "ucx_perftest over ud_verbs on ${1#ucx_ud_}: UCP tag_lat, tag_bw, ucp_put_bw" ;;
        mpi_*) echo "Open MPI 5 over UCX rc_verbs on ${1#mpi_}: 2 ranks, Sendrecv, Isend/Irecv, Alltoall, Bcast, Allreduce, data checked" ;;
        qperf_rc_*) echo "qperf over rdma_cm on ${1#qperf_rc_}: rc_bw, rc_lat, rc_rdma_write_bw" ;;
        qperf_ud_*) echo "qperf on ${1#qperf_ud_}: ud_lat" ;;
        qperf_down) echo "the qperf server stops" ;;
    esac
}

# --- UCX ----------------------------------------------------------------------------

t_ucx_info() {
    local dev out tl
    dev=$(dev_name "$1")
    ucx_info -v
    out=$(ucx_info -d) || return 1
    grep -E 'Transport|Device' <<<"$out"
    for tl in rc_verbs ud_verbs; do
        # (grep -q ends its pipe early: under pipefail, no pipe.)
        [[ $(grep -A1 "Transport: $tl\$" <<<"$out") == *"Device: $dev:1"* ]] || {
            echo "no $tl on $dev:1"
            return 1
        }
    done
}
t_ucx_info_qrdma() { t_ucx_info qrdma; }
t_ucx_info_rxe() { t_ucx_info rxe; }

# ucx_final FILE FIELD: a figure of the "Final:" row of ucx_perftest's
# output: 5 the overall latency (usec), 7 the overall bandwidth (MB/s).
ucx_final() {
    awk -v f="$2" '$1 == "Final:" {v = $f} END {if (v == "") exit 1; print v}' "$1"
}

# perftest OUT -- ARGS...: one ucx_perftest, server and client in this
# guest over TCP port $PORT for the exchange of addresses; ARGS go to both
# (-P 0: not an MPI run, which it would take a closed stdin for).
perftest() {
    local out=$1
    shift 2
    PORT=$((PORT + 1))
    server_client "$out" "$PORT" "$RUN_TIMEOUT" \
        ucx_perftest -P 0 -p "$PORT" "$@" -- \
        ucx_perftest -P 0 -p "$PORT" 127.0.0.1 "$@"
}

# ucx_run DEV NAME FIELD UNIT ARGS...: a ucx_perftest run, its figure
# recorded as NAME.
ucx_run() {
    local dev=$1 name=$2 field=$3 unit=$4 out v
    shift 4
    out=$LOGDIR/ucx-$name-$dev
    echo "--- $name: ucx_perftest $*"
    perftest "$out" -- "$@" || { result "$name" FAILED; return 1; }
    v=$(ucx_final "$out.client" "$field") || { result "$name" "no result"; return 1; }
    result "$name" "$v $unit"
}

t_ucx_rc() {
    local d=$1 dev rc=0
    dev=$(dev_name "$d")
    # UCP wires its endpoints up over an auxiliary transport: TCP on lo,
    # so that only rc_verbs on the device carries the tests' data.
    export UCX_TLS=rc_verbs,tcp UCX_NET_DEVICES=$dev:1,lo
    ucx_run "$d" "UCT put_lat 8 B" 5 usec -x rc_verbs -d "$dev:1" -t put_lat -s 8 -n 2000 || rc=1
    ucx_run "$d" "UCT put_bw 64 KiB" 7 MB/s -x rc_verbs -d "$dev:1" -t put_bw -D zcopy -s 65536 -n 1000 || rc=1
    ucx_run "$d" "UCP tag_lat 8 B" 5 usec -t tag_lat -s 8 -n 2000 || rc=1
    ucx_run "$d" "UCP tag_bw 1 MiB" 7 MB/s -t tag_bw -s 1048576 -n 200 || rc=1
    unset UCX_TLS UCX_NET_DEVICES
    return "$rc"
}
t_ucx_rc_qrdma() { t_ucx_rc qrdma; }
t_ucx_rc_rxe() { t_ucx_rc rxe; }

t_ucx_ud() {
    local d=$1 dev rc=0
    dev=$(dev_name "$d")
    # UD alone: its own wire-up, and puts emulated over its sends.  A
    # short endpoint timeout: a dead one fails in 10 s, not 30.
    export UCX_TLS=ud_verbs UCX_NET_DEVICES=$dev:1 UCX_UD_TIMEOUT=10s
    ucx_run "$d" "UCP tag_lat 8 B (ud)" 5 usec -t tag_lat -s 8 -n 1000 || rc=1
    [ "$rc" = 0 ] &&
        ucx_run "$d" "UCP tag_bw 64 KiB (ud)" 7 MB/s -t tag_bw -s 65536 -n 200 || rc=1
    [ "$rc" = 0 ] &&
        ucx_run "$d" "UCP ucp_put_bw 64 KiB (ud)" 7 MB/s -t ucp_put_bw -s 65536 -n 200 || rc=1
    unset UCX_TLS UCX_NET_DEVICES UCX_UD_TIMEOUT
    return "$rc"
}
t_ucx_ud_qrdma() { t_ucx_ud qrdma; }
t_ucx_ud_rxe() { t_ucx_ud rxe; }

# --- Open MPI 5 over UCX ----------------------------------------------------------

t_mpi() {
    local d=$1 dev out=$LOGDIR/mpi-$1.out rc=0 s e
    dev=$(dev_name "$d")
    [ -x "$MPI_EXCHANGE" ] || { echo "no $MPI_EXCHANGE: run scripts/build-clients"; return 1; }
    # pml ucx or nothing (no fallback to TCP); UCX as in t_ucx_rc.
    # UCX_PROTO_INFO shows which transport each protocol took.
    s=$SECONDS
    (
        export OMPI_MCA_pml=ucx OMPI_MCA_btl=self OMPI_MCA_osc=ucx
        export UCX_TLS=rc_verbs,tcp UCX_NET_DEVICES=$dev:1,lo UCX_PROTO_INFO=y
        cd /tmp &&
            timeout 300 mpirun --allow-run-as-root --oversubscribe -np 2 \
                -x UCX_TLS -x UCX_NET_DEVICES -x UCX_PROTO_INFO "$MPI_EXCHANGE"
    ) >"$out" 2>&1 || rc=$?
    e=$SECONDS
    grep -av '^\[' "$out"
    [ "$rc" = 0 ] || { tail -n 40 "$out"; return 1; }
    grep -aq 'all checks passed on 2 ranks' "$out" || return 1
    # The tag protocols ran on the device, not on TCP.
    grep -aqE "(eager|rendezvous).*rc_verbs/$dev:1" "$out" || {
        echo "UCX_PROTO_INFO shows no tag protocol on rc_verbs/$dev:1"
        return 1
    }
    result "mpi-exchange, 8 B to 8 MiB" "passed in $((e - s)) s"
    echo "INFO: $(grep -a -m1 'Open MPI' "$out" | sed 's/^mpi-exchange: //')"
}
t_mpi_qrdma() { t_mpi qrdma; }
t_mpi_rxe() { t_mpi rxe; }

# --- qperf --------------------------------------------------------------------------

QPERF_PID=
qperf_up() {
    [ -n "$QPERF_PID" ] && return 0
    qperf >"$LOGDIR/qperf-server.log" 2>&1 &
    QPERF_PID=$!
    wait_listen 19765
}

# qperf_figures FILE: "test value unit" for each test qperf reported.
qperf_figures() {
    awk '/^[a-z_]+:$/ {t = $1; sub(/:$/, "", t)} /=/ && t != "" {print t, $3, $4}' "$1"
}

# qperf over rdma_cm (-cm1): the address picks the device, as it must on
# RoCE; qperf's own exchange is TCP to the same address.
t_qperf_rc() {
    local d=$1 ip out=$LOGDIR/qperf-rc-$1.out t v u
    ip=$(dev_addr "$d")
    qperf_up || return 1
    timeout "$RUN_TIMEOUT" qperf -cm1 -t 2 "$ip" rc_bw rc_lat rc_rdma_write_bw >"$out" 2>&1
    local rc=$?
    cat "$out"
    while read -r t v u; do
        result "$t" "$v $u"
    done < <(qperf_figures "$out")
    [ "$rc" = 0 ] && [ "$(qperf_figures "$out" | wc -l)" = 3 ]
}
t_qperf_rc_qrdma() { t_qperf_rc qrdma; }
t_qperf_rc_rxe() { t_qperf_rc rxe; }

t_qperf_ud() {
    local d=$1 ip dev out=$LOGDIR/qperf-ud-$1.out
    ip=$(dev_addr "$d")
    dev=$(dev_name "$d")
    qperf_up || return 1
    timeout "$RUN_TIMEOUT" qperf -t 2 -i "$dev:1" "$ip" ud_lat >"$out" 2>&1
    local rc=$?
    cat "$out"
    [ "$rc" = 0 ] && grep -q 'latency' "$out" || return 1
    result "ud_lat" "$(qperf_figures "$out" | awk '{print $2, $3}')"
}
t_qperf_ud_qrdma() { t_qperf_ud qrdma; }
t_qperf_ud_rxe() { t_qperf_ud rxe; }

t_qperf_down() {
    [ -n "$QPERF_PID" ] || return 0
    kill "$QPERF_PID"
    wait "$QPERF_PID" 2>/dev/null
    QPERF_PID=
}

run_test qrdma_setup
run_test rxe_up
for client in ucx_info ucx_rc ucx_ud mpi qperf_rc qperf_ud; do
    run_test "${client}_qrdma"
    run_test "${client}_rxe"
done
run_test qperf_down
run_test qrdma_unload
run_test dmesg_clean
results_table "$LOGDIR/../clients-hpc.txt" \
    "UCX, Open MPI and qperf over RDMA, one VM, both ends in it"
tap_end
