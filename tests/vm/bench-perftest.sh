#!/bin/bash
# perftest on qrdma and on rxe in one guest, for scripts/bench (make bench).
# Run inside the guest as root by
#   scripts/build-driver && scripts/build-provider && scripts/install-guest
#   scripts/run-vm --smp 2 --script tests/vm/bench-perftest.sh --timeout 900 -- \
#       -device pcie-root-port,id=rp0,bus=pcie.0,chassis=1 -device qrdma,bus=rp0
#
# Both devices side by side: qrdma (the provider installed, qrdma.ko
# loaded, the port's netdev given $QRDMA_IP) and rdma_rxe on the VM's
# virtio-net eth0.  Every perftest runs server and client in this guest
# (the server in the background, the client to 127.0.0.1), connected over
# RoCE v2 (-x GID index), with fixed iteration counts; bandwidth in
# perftest's default unit (MiB/s; no --report_gbits).
#
# Output: one line per measurement, for scripts/bench to pick out of the
# console,
#   BENCH|TEST|SIZE|UNIT|QRDMA|RXE|RATIO
# the bandwidth tests give BW average (UNIT MiB/sec or MB/sec, as perftest
# names it), the latency tests t_typical (usec); QRDMA and RXE are numbers
# or "fail" (the median of $TRIES runs each, of those that succeeded);
# RATIO is qrdma/rxe, or "-".  Command output goes to
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

# (test size metric iterations), in table order.
RUNS=(
    "ib_write_bw 65536 bw $BW_ITERS"
    "ib_write_bw 4096 bw $BW_ITERS"
    "ib_send_bw 65536 bw $BW_ITERS"
    "ib_send_bw 4096 bw $BW_ITERS"
    "ib_send_lat 8 lat $LAT_ITERS"
    "ib_write_lat 8 lat $LAT_ITERS"
)

info() { echo "INFO: $*"; }

# --- one measurement ----------------------------------------------------------------

# result FILE SIZE METRIC: "VALUE UNIT" from the result row for SIZE in
# perftest's output FILE; METRIC bw gives the "BW average" column, lat the
# "t_typical" one, and UNIT is what the column's name has in brackets
# (perftest 23.04 says MiB/sec where older ones said MB/sec).  The columns
# are found by name in the header row, whose names may hold a space
# ("BW average[MiB/sec]"): a name ends at a word that starts with '#' or
# ends in ']'.
result() {
    local pattern
    case $3 in
        bw) pattern='^BW average\[' ;;
        lat) pattern='^t_typical\[' ;;
    esac
    awk -v size="$2" -v pattern="$pattern" '
        /#bytes/ {
            idx = 0; n = 0; name = ""; unit = "?"
            for (i = 1; i <= NF; i++) {
                name = name == "" ? $i : name " " $i
                if ($i ~ /^#/ || $i ~ /\]$/) {
                    n++
                    if (!idx && name ~ pattern) {
                        idx = n
                        unit = name
                        sub(/^[^[]*\[/, "", unit)
                        sub(/\]$/, "", unit)
                    }
                    name = ""
                }
            }
            next
        }
        idx && $1 == size && $idx ~ /^[0-9]+(\.[0-9]+)?$/ { v = $idx; u = unit }
        END { if (v == "") exit 1; print v, u }' "$1"
}

# measure PORT TRY DEV GID_INDEX TEST SIZE METRIC ITERS: one perftest run
# on DEV over TCP port PORT; prints "VALUE UNIT", or nothing if it failed.
measure() {
    local port=$1 try=$2 dev=$3 gid=$4 test=$5 size=$6 metric=$7 iters=$8
    local out args
    out=$LOGDIR/$test-$size-$dev.$try
    args=(-d "$dev" -x "$gid" -F -s "$size" -n "$iters" -p "$port")
    # No --report_gbits: bandwidth in perftest's default MiB/s.
    if ! server_client "$out" "$port" "$RUN_TIMEOUT" \
            "$test" "${args[@]}" -- "$test" "${args[@]}" 127.0.0.1 \
            >"$out.log" 2>&1; then
        echo "$test -s $size on $dev failed; see $out.log" >&2
        return 1
    fi
    result "$out.client" "$size" "$metric" || {
        echo "$test -s $size on $dev: no result row; see $out.log" >&2
        return 1
    }
}

# median VALUE...: the median, "fail" if there is no value.
median() {
    [ $# -gt 0 ] || { echo fail; return; }
    printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1}
        END {m = int((NR + 1) / 2); print NR % 2 ? v[m] : (v[m] + v[m + 1]) / 2}'
}

# ratio A B: A/B to two decimals, "-" unless both are numbers and B > 0.
ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN {
        if (a !~ /^[0-9.]+$/ || b !~ /^[0-9.]+$/ || b + 0 == 0) print "-"
        else printf "%.2f\n", a / b }'
}

main() {
    local qrdma_ok=0 rxe_ok=0 run test size metric iters start try v
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

    for run in "${RUNS[@]}"; do
        read -r test size metric iters <<<"$run"
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
        echo "BENCH|$test|$size|${qu:-${ru:-?}}|$q|$r|$(ratio "$q" "$r")"
    done
    [ $qrdma_ok = 1 ] && info "qrdma guest_errors $(qrdma_counter guest_errors)"
    [ "$FAILED" -eq 0 ]
}

main "$@"
