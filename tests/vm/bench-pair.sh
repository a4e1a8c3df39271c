# shellcheck shell=bash
# perftest between two VMs, for scripts/bench (make bench): the guest
# halves of tests/functional/bench_pair.py, which boots A and B, each end
# qrdma or rxe, and runs these functions in them: ib_write_bw and
# ib_send_bw at 4 KiB and 64 KiB, ib_send_lat and ib_read_lat at 8 B, and
# ib_write_bw over a sweep of message sizes, each run with its server in
# A and its client in B (bench_run), and each side's recovery counters
# around each measurement (recovery_counters).  Sourced there after
# lib-qrdma.sh and lib-pair.sh (and pair_args); never run.  The host
# takes the median of the runs and writes the figures.  Command output:
# $QRDMA_OUT/bench-pair/ of each side.

LOGDIR=${QRDMA_OUT:-/tmp}/bench-pair
# Two TCG guests of one vCPU on two cores: a bound on each program.
RUN_TIMEOUT=90
mkdir -p "$LOGDIR"

# The counters that move when RC recovers from a frame lost, repeated or
# reordered (rxe's names, which qrdma shares), and the frames qrdma's
# Ethernet function dropped.
RECOVERY_COUNTERS=(completer_retry_err rcvd_seq_err out_of_seq_request
    duplicate_request eth_rx_dropped)

# bench_run PROG SIZE ITERS: one run of ib_PROG -s SIZE -n ITERS on the
# port the host gives (PAIR_PORT), the QPs traded over TCP and addressed
# by each side's RoCE v2 GID index; B's half prints the run's figure as
# "# figure: VALUE UNIT": perftest's "BW average" of a _bw run, its
# t_typical of a _lat one.
bench_run() {
    local prog=$1 size=$2 iters=$3 p=$PAIR_PORT col v unit
    pair_need_setup || return 1
    pair_server_client "$LOGDIR/$prog-$size.$p" "$p" "$RUN_TIMEOUT" \
        "$prog" -d "$PAIR_DEV" -x "$PAIR_GID_INDEX" -F -p "$p" -s "$size" -n "$iters" -- \
        "$prog" -d "$PAIR_DEV" -x "$PAIR_GID_INDEX" -F -p "$p" -s "$size" -n "$iters" \
        "$PAIR_PEER_IP" || return 1
    pair_is b || return 0
    case $prog in
        *_bw) col="BW average" ;;
        *) col=t_typical ;;
    esac
    read -r v unit _ < <(perftest_column "$LOGDIR/$prog-$size.$p.client" "$col" "$size") ||
        { echo "no $col in the result row"; return 1; }
    echo "# figure: $v $unit"
}

# recovery_counters: "NAME=VALUE ..." of this side's device.
recovery_counters() {
    local dir=/sys/class/infiniband/$PAIR_DEV/ports/1/hw_counters f
    pair_need_setup || return 1
    for f in "${RECOVERY_COUNTERS[@]}"; do
        [ ! -r "$dir/$f" ] || printf '%s=%s ' "$f" "$(cat "$dir/$f")"
    done
    echo
}
