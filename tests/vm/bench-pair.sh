#!/bin/bash
# perftest between two VMs, for scripts/bench (make bench): ib_write_bw
# and ib_send_bw at 4 KiB and 64 KiB, ib_send_lat and ib_read_lat at 8 B,
# and ib_write_bw over a sweep of message sizes, each with its server in
# VM A and its client in VM B.  Run on the host by scripts/run-vm-pair,
# which boots both guests with this script, once per pairing of kinds:
#   scripts/run-vm-pair --kinds qrdma-qrdma bench-pair.sh
#   scripts/run-vm-pair --kinds rxe-rxe bench-pair.sh
#   scripts/run-vm-pair --kinds rxe-rxe --relay '--drop 0.01 --seed 1' \
#       --append qrdma.tests=write_bw_64k bench-pair.sh   # goodput under loss
# (qrdma kinds need scripts/build-driver, build-provider and install-guest
# first).  On the kernel command line of both (run-vm-pair --append):
# qrdma.tests=NAME,NAME runs only those of the tests below,
# qrdma.tries=N the runs of each measurement (default 3; its figure is
# their median), qrdma.bw_iters and qrdma.lat_iters the iterations of
# the fixed-size runs, and qrdma.sweep=SIZE,SIZE the sizes of the sweep.
#
# The figures, of B's client: $QRDMA_OUT/NAME.tsv and .txt of A
# (build/vm-out/NAME/a/), one row per measurement, test (write_bw_4k,
# ..., sweep), figure "PROG SIZE B UNIT" with the median as its value,
# "PROG SIZE B runs" with every run's value, and "PROG SIZE B recovery
# ROLE" with the recovery counters of each side's device that moved
# meanwhile (retransmits, sequence errors, duplicates: RC recovering from
# frames lost on the wire); bandwidth is perftest's "BW average" in its
# default MiB/sec, latency its t_typical in usec.
# Command output: $QRDMA_OUT/bench-pair/ of each side.
set -uo pipefail

# run-vm copies the script to /qrdma/run: the libraries are in the checkout.
# shellcheck source=lib-qrdma.sh
. "${QRDMA_SRC:-/qrdma/src}/tests/vm/lib-qrdma.sh"
# shellcheck source=lib-pair.sh
. "${QRDMA_SRC:-/qrdma/src}/tests/vm/lib-pair.sh"

LOGDIR=${QRDMA_OUT:-/tmp}/bench-pair
# Two TCG guests of one vCPU on two cores: iterations that keep one run
# of rxe's to a few seconds, and a bound on each program.
BW_ITERS=1000 LAT_ITERS=1000 TRIES=3
RUN_TIMEOUT=90
# The sweep: powers of 4 from 64 B to 1 MiB, each run moving about
# SWEEP_BYTES (within SWEEP_MIN_ITERS..SWEEP_MAX_ITERS messages), so that
# the large sizes take no longer than the small ones.
SWEEP_SIZES=(64 256 1024 4096 16384 65536 262144 1048576)
SWEEP_BYTES=$((16 << 20)) SWEEP_MIN_ITERS=16 SWEEP_MAX_ITERS=1000
# Each run of a test has a TCP port of its own (the same on both sides,
# which run the same runs in the same order): no server ever meets a
# client of an earlier run.
RUN_NO=0

# The counters that move when RC recovers from a frame lost, repeated or
# reordered (rxe's names, which qrdma shares), and the frames qrdma's
# Ethernet function dropped.
RECOVERY_COUNTERS=(completer_retry_err rcvd_seq_err out_of_seq_request
    duplicate_request eth_rx_dropped)

BENCH_TESTS=(write_bw_4k write_bw_64k send_bw_4k send_bw_64k send_lat read_lat sweep)

describe() {
    case $1 in
        *_bw_4k) echo "ib_${1%_4k} -s 4096, median of $TRIES runs" ;;
        *_bw_64k) echo "ib_${1%_64k} -s 65536, median of $TRIES runs" ;;
        *_lat) echo "ib_$1 -s 8, t_typical, median of $TRIES runs" ;;
        sweep) echo "ib_write_bw at ${SWEEP_SIZES[*]} B, median of $TRIES runs each" ;;
    esac
}

# bench_run PROG SIZE ITERS TRY: one run of ib_PROG -s SIZE -n ITERS, the
# QPs traded over TCP and addressed by each side's RoCE v2 GID index.  Its
# signals are named for the run (pair_server_client names them for the
# test), so that one test can hold several runs.
bench_run() {
    local prog=$1 size=$2 iters=$3 try=$4 p
    local PAIR_TEST=$PAIR_TEST.$size.$try
    RUN_NO=$((RUN_NO + 1))
    p=$((19000 + RUN_NO))
    pair_server_client_shared "$LOGDIR/$prog-$size.$try" "$p" "$RUN_TIMEOUT" \
        "$prog" -d "$PAIR_DEV" -x "$PAIR_GID_INDEX" -F -p "$p" -s "$size" -n "$iters" -- \
        "$prog" -d "$PAIR_DEV" -x "$PAIR_GID_INDEX" -F -p "$p" -s "$size" -n "$iters" \
        "$PAIR_PEER_IP"
}

# recovery_counters: "NAME=VALUE ..." of this side's device.
recovery_counters() {
    local dir=/sys/class/infiniband/$PAIR_DEV/ports/1/hw_counters f
    for f in "${RECOVERY_COUNTERS[@]}"; do
        [ ! -r "$dir/$f" ] || printf '%s=%s ' "$f" "$(cat "$dir/$f")"
    done
}

# recovery_moved BEFORE AFTER: "NAME+DELTA ..." of the counters that
# moved between the two, "none" if none did.
recovery_moved() {
    awk -v a="$1" -v b="$2" 'BEGIN {
        n = split(a, x, " "); split(b, y, " ")
        for (i = 1; i <= n; i++) {
            split(x[i], p, "="); split(y[i], q, "=")
            if (q[2] != p[2]) s = s sprintf(" %s+%d", p[1], q[2] - p[2])
        }
        print s == "" ? "none" : substr(s, 2) }'
}

# bench PROG SIZE ITERS RUNS: RUNS runs of ib_PROG at SIZE; B records the
# median of those that gave a figure, and every figure.  Fails if a run
# failed (the others still count).
bench() {
    local prog=$1 size=$2 iters=$3 runs=$4 col try v unit='' u vals=() rc=0
    local before moved
    pair_need_setup || return 1
    before=$(recovery_counters)
    case $prog in
        *_bw) col="BW average" ;;
        *) col=t_typical ;;
    esac
    for try in $(seq "$runs"); do
        bench_run "$prog" "$size" "$iters" "$try" || { rc=1; continue; }
        pair_is b || continue
        if read -r v u _ < <(perftest_column "$LOGDIR/$prog-$size.$try.client" "$col" "$size"); then
            vals+=("$v") unit=$u
        else
            echo "no $col in the result row of run $try"
            rc=1
        fi
    done
    moved=$(recovery_moved "$before" "$(recovery_counters)")
    pair_result "$prog $size B recovery $PAIR_ROLE" "$moved"
    echo "INFO: $PAIR_ROLE $PAIR_DEV recovery: $moved"
    pair_is b || return "$rc"
    [ ${#vals[@]} -gt 0 ] || return 1
    pair_result "$prog $size B $unit" "$(median "${vals[@]}")"
    pair_result "$prog $size B runs" "${vals[*]}"
    echo "INFO: $prog -s $size -n $iters: ${vals[*]} $unit"
    return "$rc"
}

t_write_bw_4k() { bench ib_write_bw 4096 "$BW_ITERS" "$TRIES"; }
t_write_bw_64k() { bench ib_write_bw 65536 "$BW_ITERS" "$TRIES"; }
t_send_bw_4k() { bench ib_send_bw 4096 "$BW_ITERS" "$TRIES"; }
t_send_bw_64k() { bench ib_send_bw 65536 "$BW_ITERS" "$TRIES"; }
t_send_lat() { bench ib_send_lat 8 "$LAT_ITERS" "$TRIES"; }
t_read_lat() { bench ib_read_lat 8 "$LAT_ITERS" "$TRIES"; }

t_sweep() {
    local size iters rc=0
    for size in "${SWEEP_SIZES[@]}"; do
        iters=$((SWEEP_BYTES / size))
        [ "$iters" -ge "$SWEEP_MIN_ITERS" ] || iters=$SWEEP_MIN_ITERS
        [ "$iters" -le "$SWEEP_MAX_ITERS" ] || iters=$SWEEP_MAX_ITERS
        bench ib_write_bw "$size" "$iters" "$TRIES" || rc=1
    done
    return "$rc"
}

# --- the run ----------------------------------------------------------------------

pair_init || { echo "Bail out! not a pair's guest"; exit 1; }
TRIES=$(pair_arg tries "$TRIES")
BW_ITERS=$(pair_arg bw_iters "$BW_ITERS")
LAT_ITERS=$(pair_arg lat_iters "$LAT_ITERS")
sweep=$(pair_arg sweep)
[ -z "$sweep" ] || IFS=, read -r -a SWEEP_SIZES <<<"$sweep"
wanted=$(pair_arg tests)
[ -z "$wanted" ] || IFS=, read -r -a BENCH_TESTS <<<"$wanted"
TESTS=(setup ping "${BENCH_TESTS[@]}" pair_dmesg_clean)
pair_run_tests
