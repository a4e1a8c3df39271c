#!/bin/bash
# perftest, fio over NVMe-oF and ucx_perftest on qrdma and on rxe in one
# guest, for scripts/bench (make bench).
# Run inside the guest as root by
#   scripts/build-driver && scripts/build-provider && scripts/install-guest
#   scripts/run-vm --smp 2 --script tests/vm/bench-perftest.sh --timeout 1200 -- \
#       -device pcie-root-port,id=rp0,bus=pcie.0,chassis=1 -device qrdma,bus=rp0
#
# Both devices side by side: qrdma (the provider installed, qrdma.ko
# loaded, the port's netdev given $QRDMA_IP) and rdma_rxe on the VM's
# virtio-net eth0.  Every perftest runs server and client in this guest
# (the server in the background, the client to 127.0.0.1), connected over
# RoCE v2 (-x GID index), with fixed iteration counts; bandwidth in
# perftest's default unit (MiB/s; no --report_gbits).  Then fio over
# NVMe over RDMA (nvmet-rdma serving a null_blk per device, nvme-rdma
# connected to each over its address): 4 KiB random reads at queue depth
# 32 (IOPS) and 128 KiB sequential reads (MiB/s), $FIO_RUNTIME s each.
# Then ucx_perftest, UCP over rc_verbs on the device (wired up over TCP
# on lo): tag_bw at 1 MiB (MB/s) and tag_lat at 8 B (usec, the median).
# Then the sweep: ib_write_bw at every power of 4 from 64 B to 1 MiB, for
# make bench's plot of bandwidth against message size.  Then the scale
# part: the rates of QP creation and destruction with 100 and 4,000 QPs
# and of MR registration and deregistration with 100 and 20,000 MRs
# (tests/vm/verbs-rates.c: the last 100 created, the first 100
# destroyed; the guest's device needs max-qp and max-mr that large), and
# ib_write_bw at 64 KiB over 1 QP and over 1,000 (5,000 messages in all
# either way).
# BENCH_PARTS (default "perftest fio ucx sweep scale"), or
# qrdma.bench_parts=PART,PART on the kernel command line, picks the parts.
#
# Output: one line per measurement, for scripts/bench to pick out of the
# console,
#   BENCH|TEST|SIZE|UNIT|QRDMA|RXE|RATIO
# the bandwidth tests give BW average (UNIT MiB/sec or MB/sec, as perftest
# names it), the latency tests t_typical (usec), fio IOPS or MiB/s,
# ucx_perftest MB/s or usec, verbs-rates ops/s; QRDMA and RXE are numbers
# or "fail" (the median of $TRIES runs each, of those that succeeded);
# RATIO is qrdma/rxe, or "-".  The sweep's lines are the same but
# start with SWEEP instead of BENCH.  Command output goes to
# $QRDMA_OUT/bench-perftest/.  Exits nonzero if any run failed, but always
# runs (and prints) all of them.
set -uo pipefail

# run-vm copies the script to /qrdma/run: the library is in the checkout.
. "${QRDMA_SRC:-/qrdma/src}/tests/vm/lib-qrdma.sh"

LOGDIR=${QRDMA_OUT:-/tmp}/bench-perftest
# Under TCG: few enough iterations that one run stays well under 20 s.
BW_ITERS=${BW_ITERS:-2000}
LAT_ITERS=${LAT_ITERS:-1000}
RUN_TIMEOUT=${RUN_TIMEOUT:-90}
# Each measurement is the median of TRIES runs: under TCG on a shared host
# one run may land on a slow moment (a latency run's median can jump from
# tens of microseconds to a scheduler tick).
TRIES=${TRIES:-3}
# A fresh TCP port for each run: no server ever meets its predecessor's.
PORT=18513
FAILED=0
BENCH_PARTS=${BENCH_PARTS:-perftest fio ucx sweep scale}
parts=$(sed -n 's/.*\bqrdma\.bench_parts=\([^ ]*\).*/\1/p' /proc/cmdline)
[ -z "$parts" ] || BENCH_PARTS=${parts//,/ }
FIO_RUNTIME=${FIO_RUNTIME:-5}

# (test size metric iterations [tag]), in table order; the tag starts
# the result's line (default BENCH).
RUNS=()
[[ " $BENCH_PARTS " != *" perftest "* ]] || RUNS+=(
    "ib_write_bw 65536 bw $BW_ITERS"
    "ib_write_bw 4096 bw $BW_ITERS"
    "ib_send_bw 65536 bw $BW_ITERS"
    "ib_send_bw 4096 bw $BW_ITERS"
    "ib_send_lat 8 lat $LAT_ITERS"
    "ib_write_lat 8 lat $LAT_ITERS"
)
# fio: the size is the block size, the last word the queue depth.
[[ " $BENCH_PARTS " != *" fio "* ]] || RUNS+=(
    "fio-randread 4096 iops 32"
    "fio-read 131072 bw 8"
)
# ucx_perftest: the last word is the iterations.
[[ " $BENCH_PARTS " != *" ucx "* ]] || RUNS+=(
    "ucx-tag_bw 1048576 bw 200"
    "ucx-tag_lat 8 lat 2000"
)
# The scale part: verbs-rates' figures (SIZE the count of objects), and
# ib_write_bw over -qN QPs, ITERS messages on each.
VERBS_RATES=$QRDMA_PROVIDER_DIR/verbs-rates
[[ " $BENCH_PARTS " != *" scale "* ]] || RUNS+=(
    "verbs-qp_create 100 rate 0"
    "verbs-qp_create 4000 rate 0"
    "verbs-qp_destroy 100 rate 0"
    "verbs-qp_destroy 4000 rate 0"
    "verbs-mr_create 100 rate 0"
    "verbs-mr_create 20000 rate 0"
    "verbs-mr_destroy 100 rate 0"
    "verbs-mr_destroy 20000 rate 0"
    "ib_write_bw-q1 65536 bw 5000"
    "ib_write_bw-q1000 65536 bw 5"
)
# The sweep: each run moves about SWEEP_BYTES (64 to 2000 messages).
SWEEP_BYTES=$((64 << 20))
if [[ " $BENCH_PARTS " == *" sweep "* ]]; then
    for size in 64 256 1024 4096 16384 65536 262144 1048576; do
        iters=$((SWEEP_BYTES / size))
        [ "$iters" -ge 64 ] || iters=64
        [ "$iters" -le 2000 ] || iters=2000
        RUNS+=("ib_write_bw $size bw $iters SWEEP")
    done
fi

info() { echo "INFO: $*"; }

# --- one measurement ----------------------------------------------------------------

# result FILE SIZE METRIC: "VALUE UNIT" from the result row for SIZE in
# perftest's output FILE; METRIC bw gives the "BW average" column, lat the
# "t_typical" one (perftest_column of lib-qrdma.sh).
result() {
    local col v unit
    case $3 in
        bw) col="BW average" ;;
        lat) col=t_typical ;;
    esac
    read -r v unit _ < <(perftest_column "$1" "$col" "$2") || return 1
    echo "$v $unit"
}

# measure PORT TRY DEV GID_INDEX TEST SIZE METRIC ITERS: one run of TEST
# on DEV (perftest over TCP port PORT, fio, ucx_perftest); prints "VALUE
# UNIT", or nothing if it failed.
measure() {
    local port=$1 try=$2 dev=$3 gid=$4 test=$5 size=$6 metric=$7 iters=$8
    local out args cmd=$5
    case $test in
        fio-*) fio_measure "$@"; return ;;
        ucx-*) ucx_measure "$@"; return ;;
        verbs-*) rates_measure "$@"; return ;;
    esac
    out=$LOGDIR/$test-$size-$dev.$try
    args=(-d "$dev" -x "$gid" -F -s "$size" -n "$iters" -p "$port")
    # ib_write_bw-qN: over N QPs.
    if [[ $test == *-q* ]]; then
        cmd=${test%-q*}
        args+=(-q "${test##*-q}")
    fi
    # No --report_gbits: bandwidth in perftest's default MiB/s.
    if ! server_client "$out" "$port" "$RUN_TIMEOUT" \
            "$cmd" "${args[@]}" -- "$cmd" "${args[@]}" 127.0.0.1 \
            >"$out.log" 2>&1; then
        echo "$test -s $size on $dev failed; see $out.log" >&2
        return 1
    fi
    result "$out.client" "$size" "$metric" || {
        echo "$test -s $size on $dev: no result row; see $out.log" >&2
        return 1
    }
}

# rates_measure PORT TRY DEV GID verbs-KIND_create|destroy COUNT: the
# rate verbs-rates gives (ops/s) with COUNT QPs or MRs.
rates_measure() {
    local try=$2 dev=$3 test=$5 count=$6 out kind op
    kind=${test#verbs-}
    op=${kind#*_}
    kind=${kind%%_*}
    out=$LOGDIR/$test-$count-$dev.$try
    timeout "$RUN_TIMEOUT" "$VERBS_RATES" "$dev" "$kind" "$count" >"$out.log" 2>&1 || {
        echo "verbs-rates $dev $kind $count failed; see $out.log" >&2
        return 1
    }
    awk -v op="$op" '$1 == op {print $2, $3; found = 1} END {exit !found}' "$out.log"
}

# --- fio over NVMe-oF --------------------------------------------------------------

NVMET=/sys/kernel/config/nvmet
declare -A FIO_NS=()

# The namespace head nodes (not the hidden per-path nvmeXcYnZ).
nvme_heads() {
    local n
    for n in /sys/block/nvme*n1; do
        [ -e "$n" ] && [[ ! ${n##*/} =~ c[0-9]+n1$ ]] && echo "${n##*/}"
    done
}

# A null_blk and a subsystem per device (the same subsystem on both
# would make one multipath namespace of the two), each behind a port on
# the device's address, and nvme-rdma connected to both.  Sets FIO_NS.
fio_setup() {
    local i=0 dev addr ns
    modprobe null_blk nr_devices=2 memory_backed=1 gb=1 &&
        modprobe -a nvmet-rdma nvme-rdma || return 1
    for dev in "$QRDMA_DEV" "$RXE_DEV"; do
        case $dev in
            "$QRDMA_DEV") addr=$QRDMA_IP ;;
            *) addr=$(ip -4 -o addr show "$RXE_NETDEV" | awk '{sub(/\/.*/, "", $4); print $4; exit}') ;;
        esac
        mkdir -p "$NVMET/subsystems/bench-$dev/namespaces/1" "$NVMET/ports/$((i + 1))" &&
            echo 1 >"$NVMET/subsystems/bench-$dev/attr_allow_any_host" &&
            echo -n "/dev/nullb$i" >"$NVMET/subsystems/bench-$dev/namespaces/1/device_path" &&
            echo 1 >"$NVMET/subsystems/bench-$dev/namespaces/1/enable" &&
            echo rdma >"$NVMET/ports/$((i + 1))/addr_trtype" &&
            echo ipv4 >"$NVMET/ports/$((i + 1))/addr_adrfam" &&
            echo "$addr" >"$NVMET/ports/$((i + 1))/addr_traddr" &&
            echo 4420 >"$NVMET/ports/$((i + 1))/addr_trsvcid" &&
            ln -s "$NVMET/subsystems/bench-$dev" "$NVMET/ports/$((i + 1))/subsystems/bench-$dev" &&
            nvme connect -t rdma -a "$addr" -s 4420 -n "bench-$dev" -i 2 || return 1
        # Connected one after the other: the new head node is DEV's.
        ns=
        for _ in $(seq 100); do
            ns=$(comm -13 <(printf '%s\n' "${FIO_NS[@]##*/}" | sort) <(nvme_heads | sort) | head -n 1)
            [ -n "$ns" ] && ns=/dev/$ns && [ -b "$ns" ] && break
            ns=
            sleep 0.1
        done
        [ -n "$ns" ] && [ -b "$ns" ] || { nvme list-subsys; echo "no namespace for bench-$dev"; return 1; }
        FIO_NS[$dev]=$ns
        echo "INFO: fio on $dev: bench-$dev over $addr, $ns"
        i=$((i + 1))
    done
}

# fio_measure PORT TRY DEV GID TEST BS METRIC QD: one fio run of
# $FIO_RUNTIME s on DEV's namespace: IOPS (iops) or MiB/s (bw) of reads.
fio_measure() {
    local try=$2 dev=$3 test=$5 bs=$6 metric=$7 qd=$8 out rw
    out=$LOGDIR/$test-$bs-$dev.$try
    rw=${test#fio-}
    [ -n "${FIO_NS[$dev]:-}" ] || { echo "no namespace on $dev" >&2; return 1; }
    fio --name="$test" --filename="${FIO_NS[$dev]}" --direct=1 --ioengine=libaio \
        --rw="$rw" --bs="$bs" --iodepth="$qd" --size=512m --time_based \
        --runtime="$FIO_RUNTIME" --ramp_time=1 --output-format=json \
        --output="$out.json" >"$out.log" 2>&1 || {
        echo "fio $test on $dev failed; see $out.log" >&2
        return 1
    }
    python3 - "$out.json" "$metric" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["jobs"][0]["read"]
print("%.0f IOPS" % r["iops"] if sys.argv[2] == "iops" else "%.1f MiB/s" % (r["bw"] / 1024))
PY
}

# --- ucx_perftest -------------------------------------------------------------------

# ucx_measure PORT TRY DEV GID TEST SIZE METRIC ITERS: one ucx_perftest
# (UCP over rc_verbs on DEV) over TCP port PORT: overall MB/s (bw) or the
# median latency in usec (lat).
ucx_measure() {
    local port=$1 try=$2 dev=$3 test=$5 size=$6 metric=$7 iters=$8 out field
    out=$LOGDIR/$test-$size-$dev.$try
    field=3
    [ "$metric" = bw ] && field=7
    # -P 0: not an MPI run (it would take the closed stdin for one).
    if ! UCX_TLS=rc_verbs,tcp UCX_NET_DEVICES=$dev:1,lo \
         server_client "$out" "$port" "$RUN_TIMEOUT" \
            ucx_perftest -P 0 -p "$port" -- \
            ucx_perftest -P 0 -p "$port" 127.0.0.1 -t "${test#ucx-}" \
                -s "$size" -n "$iters" >"$out.log" 2>&1; then
        echo "ucx_perftest ${test#ucx-} -s $size on $dev failed; see $out.log" >&2
        return 1
    fi
    awk -v f="$field" -v u="$([ "$metric" = bw ] && echo MB/s || echo usec)" \
        '$1 == "Final:" {v = $f} END {if (v == "") exit 1; print v, u}' "$out.client"
}

# ratio A B: A/B to two decimals, "-" unless both are numbers and B > 0.
ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN {
        if (a !~ /^[0-9.]+$/ || b !~ /^[0-9.]+$/ || b + 0 == 0) print "-"
        else printf "%.2f\n", a / b }'
}

main() {
    local qrdma_ok=0 rxe_ok=0 run test size metric iters tag start try v
    local q r qu ru qfail rfail qv rv
    mkdir -p "$LOGDIR"
    if qrdma_setup >"$LOGDIR/setup-qrdma.log" 2>&1; then
        qrdma_ok=1
    else
        echo "qrdma setup failed:"
        cat "$LOGDIR/setup-qrdma.log"
    fi
    grep '^INFO: ' "$LOGDIR/setup-qrdma.log"
    if rxe_setup >"$LOGDIR/setup-rxe.log" 2>&1; then
        rxe_ok=1
    else
        echo "rxe setup failed:"
        cat "$LOGDIR/setup-rxe.log"
    fi
    grep '^INFO: ' "$LOGDIR/setup-rxe.log"
    if [[ " $BENCH_PARTS " == *" fio "* ]] && ! fio_setup >"$LOGDIR/setup-fio.log" 2>&1; then
        echo "NVMe-oF setup for fio failed:"
        cat "$LOGDIR/setup-fio.log"
    fi
    grep '^INFO: ' "$LOGDIR/setup-fio.log" 2>/dev/null

    for run in "${RUNS[@]}"; do
        read -r test size metric iters tag <<<"$run"
        start=$SECONDS
        qv=() rv=() qu='' ru='' qfail=0 rfail=0
        # The devices take turns, so that a slow moment of the shared host
        # does not land on one of them only.
        for try in $(seq "$TRIES"); do
            PORT=$((PORT + 2))
            if [ $qrdma_ok = 1 ] &&
               v=$(measure "$PORT" "$try" "$QRDMA_DEV" "$QRDMA_GID_INDEX" \
                   "$test" "$size" "$metric" "$iters"); then
                read -r v qu <<<"$v"
                qv+=("$v")
            else
                qfail=$((qfail + 1))
            fi
            if [ $rxe_ok = 1 ] &&
               v=$(measure "$((PORT + 1))" "$try" "$RXE_DEV" "$RXE_GID_INDEX" \
                   "$test" "$size" "$metric" "$iters"); then
                read -r v ru <<<"$v"
                rv+=("$v")
            else
                rfail=$((rfail + 1))
            fi
        done
        [ $qfail -eq 0 ] && [ $rfail -eq 0 ] || FAILED=$((FAILED + 1))
        q=$(median "${qv[@]}")
        r=$(median "${rv[@]}")
        info "$test -s $size -n $iters, $TRIES tries each in $((SECONDS - start)) s:" \
            "qrdma ${qv[*]:-} ($qfail failed), rxe ${rv[*]:-} ($rfail failed)"
        echo "${tag:-BENCH}|$test|$size|${qu:-${ru:-?}}|$q|$r|$(ratio "$q" "$r")"
    done
    [ $qrdma_ok = 1 ] && info "qrdma guest_errors $(qrdma_counter guest_errors)"
    [ "$FAILED" -eq 0 ]
}

main "$@"
