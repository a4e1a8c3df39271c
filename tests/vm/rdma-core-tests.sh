#!/bin/bash
# rdma-core's own test suite (its Python tests, over pyverbs) against
# libqrdma and qrdma.ko.  Run inside the guest as root by
#   scripts/build-driver && scripts/build-provider && scripts/install-guest
#   scripts/run-vm --script tests/vm/rdma-core-tests.sh -- \
#       -device pcie-root-port,id=rp0,bus=pcie.0,chassis=1 -device qrdma,bus=rp0
# The suite comes from $QRDMA_PROVIDER_DIR/rdma-core-tests (build-provider
# copies it out of the tree of the guest's rdma-core: 56.1, or 44 or 65 in
# a guest of QRDMA_RDMA_CORE).  Prints TAP, one line per test case;
# exits nonzero if any failed.  RDMA_CORE_TESTS="test_qp test_cq" keeps only
# the tests whose id contains one of the words.
set -uo pipefail

# run-vm copies the script to /qrdma/run: the library is in the checkout.
. "${QRDMA_SRC:-/qrdma/src}/tests/vm/lib-qrdma.sh"

LOGDIR=${QRDMA_OUT:-/tmp}/rdma-core-tests
mkdir -p "$LOGDIR"

RDMA_CORE_VERSION=$(cat "$QRDMA_PROVIDER_DIR/rdma-core-version" 2>/dev/null || echo unknown)
# The gaps of every version, and those of this one.
GAPS=$QRDMA_SRC_DIR/tests/vm/rdma-core-known-gaps.txt
GAPS_VERSION=$QRDMA_SRC_DIR/tests/vm/rdma-core-known-gaps-$RDMA_CORE_VERSION.txt
# The tests of this version that fail in the test VM on rxe as on qrdma:
# reported as TODO, not failures, as long as rxe fails them too.
SHARED=$QRDMA_SRC_DIR/tests/vm/rdma-core-shared-failures-$RDMA_CORE_VERSION.txt

describe() {
    case $1 in
        suite_copy) echo "rdma-core $RDMA_CORE_VERSION's tests/ from $QRDMA_PROVIDER_DIR/rdma-core-tests" ;;
        rxe_parity) echo "qrdma passes every test rxe passes, but the known gaps of rdma-core $RDMA_CORE_VERSION" ;;
        no_guest_errors) echo "the suite, bad requests and all, made the device count no guest error: the driver refuses what the device would" ;;
    esac
}
# The suite writes __pycache__ next to itself: a copy off the read-only share.
t_suite_copy() {
    [ -d "$QRDMA_PROVIDER_DIR/rdma-core-tests/tests" ] || {
        echo "no $QRDMA_PROVIDER_DIR/rdma-core-tests: run scripts/build-provider"
        return 1
    }
    rm -rf /tmp/rdma-core-tests
    cp -r "$QRDMA_PROVIDER_DIR/rdma-core-tests" /tmp/rdma-core-tests
}

run_test qrdma_setup
run_test suite_copy
: >"$LOGDIR/qrdma.tap"
if [ -n "$QRDMA_GID_INDEX" ] && [ -d /tmp/rdma-core-tests ]; then
    # shellcheck disable=SC2086 # the patterns are words
    tap_include rdma-core-tests.py \
        env RDMA_CORE_TODO="$SHARED" \
        timeout 1800 python3 "$QRDMA_SRC_DIR/tests/vm/rdma-core-tests.py" \
        /tmp/rdma-core-tests/tests "$QRDMA_DEV" "$QRDMA_GID_INDEX" ${RDMA_CORE_TESTS:-} \
        >"$LOGDIR/qrdma.tap"
    # Not through a pipe: tap_include counts in this shell.
    cat "$LOGDIR/qrdma.tap"
fi
# The checks of qrdma end its part; rxe needs none of it.
echo "# guest_errors $(qrdma_counter guest_errors), stale_cqes $(qrdma_counter stale_cqes)"
t_no_guest_errors() {
    local n
    n=$(qrdma_counter guest_errors)
    [ "$n" = 0 ] || { echo "guest_errors $n: QEMU's -d guest_errors says which"; return 1; }
}
run_test no_guest_errors
run_test qrdma_unload

# The same suite on rxe in the same VM, the reference: its results are
# counted, not reported as TAP of this test.
counts() {
    awk -v dev="$1" '
        /^ok / { if ($0 ~ /# SKIP/) skip++; else pass++ }
        /^not ok / { fail++ }
        END { printf "%-8s %7d %7d %8d\n", dev, pass, fail, skip }' "$2"
}
if rxe_setup >"$LOGDIR/rxe-setup.log" 2>&1; then
    # One python per test module: one of them crashes python on rxe, and
    # that must not take the rest of rxe's results with it.
    : >"$LOGDIR/rxe.tap"
    for m in /tmp/rdma-core-tests/tests/test_*.py; do
        m=$(basename "$m" .py)
        if [ -n "${RDMA_CORE_TESTS:-}" ] &&
           ! grep -qwF -f <(tr ' ' '\n' <<<"$RDMA_CORE_TESTS") <<<"$m"; then
            continue
        fi
        timeout 600 python3 "$QRDMA_SRC_DIR/tests/vm/rdma-core-tests.py" \
            /tmp/rdma-core-tests/tests rxe0 "$RXE_GID_INDEX" "tests.$m." \
            >>"$LOGDIR/rxe.tap" 2>&1 ||
            echo "# module $m: exit $?" >>"$LOGDIR/rxe.tap"
    done
else
    echo "# rxe setup failed"
    diag "$LOGDIR/rxe-setup.log"
    : >"$LOGDIR/rxe.tap"
fi
{
    echo "rdma-core $RDMA_CORE_VERSION tests/ (pyverbs) in one VM"
    printf '%-8s %7s %7s %8s\n' device passed failed skipped
    counts qrdma0 "$LOGDIR/qrdma.tap"
    counts rxe0 "$LOGDIR/rxe.tap"
} >"$LOGDIR/../rdma-core-suite.txt"
sed 's/^/# /' "$LOGDIR/../rdma-core-suite.txt"

# The ids of the tests a TAP file passed (not skipped): qrdma's as
# tap_include passes them on (KTAP, "ok N ID"), rxe's as
# rdma-core-tests.py prints them ("ok N - ID").
passed_ids() {
    sed -nE '/# SKIP/d; s/^ok [0-9]+ (- )?([^ ]+).*/\2/p' "$1" | sort -u
}

# The aim: every test that rxe passes, qrdma passes; the known gaps are
# listed with their reasons, and a listed test that passes is a stale line.
t_rxe_parity() {
    local gaps missing stale files=("$GAPS")
    [ -s "$LOGDIR/rxe.tap" ] || { echo "no rxe results"; return 1; }
    [ ! -f "$GAPS_VERSION" ] || files+=("$GAPS_VERSION")
    gaps=$(grep -hv '^#' "${files[@]}" | awk 'NF {print $1}' | sort -u)
    missing=$(comm -23 <(passed_ids "$LOGDIR/rxe.tap") <(passed_ids "$LOGDIR/qrdma.tap") |
              comm -23 - <(echo "$gaps"))
    stale=$(comm -12 <(passed_ids "$LOGDIR/qrdma.tap") <(echo "$gaps"))
    # A failure qrdma shares with rxe is one no longer when rxe passes it.
    [ ! -f "$SHARED" ] ||
        stale+=$(grep -v '^#' "$SHARED" | awk 'NF {print $1}' | sort -u |
                 comm -12 - <(passed_ids "$LOGDIR/rxe.tap"))
    echo "INFO: $(grep -c . <<<"$gaps") known gaps (${files[*]##*/})"
    [ -z "$missing" ] || { echo "rxe passes, qrdma does not:"; echo "$missing"; }
    [ -z "$stale" ] || { echo "listed as gaps or shared failures, but passed:"; echo "$stale"; }
    [ -z "$missing" ] && [ -z "$stale" ]
}

# A run of some modules only (RDMA_CORE_TESTS) has no parity to check.
[ -n "${RDMA_CORE_TESTS:-}" ] || run_test rxe_parity
run_test dmesg_clean
tap_end
