# shellcheck shell=bash
# Guest-side setup shared by the qrdma VM tests; sourced, never run.
#
#   . "${QRDMA_SRC:-/qrdma/src}/tests/vm/lib-qrdma.sh"
#
# (scripts/run-vm copies the test script to /qrdma/run; the checkout is
# at $QRDMA_SRC.)
#
# qrdma_setup does everything a test needs before it talks to the device:
# checks that the guest image carries libqrdma (scripts/install-guest puts
# it there, with qrdma.ko), loads ib_core, ib_uverbs, rdma_ucm and qrdma
# with modprobe, gives the port's netdev $QRDMA_IP and finds the RoCE v2
# GID of that address.  Afterwards: $QRDMA_DEV (qrdma0), $QRDMA_NETDEV,
# $QRDMA_IP, $QRDMA_GID_INDEX.  Test programs built on the host (the C
# lifecycle test, rdma-core's test suite) are read from
# $QRDMA_PROVIDER_DIR on the share: the directory of the checkout that
# build-provider filled for the guest's rdma-core, which install-guest
# names in /etc/qrdma/provider-dir.
#
# Also the KTAP plumbing of the tests, on the guest kernel's
# kselftest/ktap_helpers.sh (build-provider puts it beside the test
# programs): run_test NAME calls t_NAME with its
# output in $LOGDIR/NAME.log; exit status 0 passes, 77 skips, anything else
# fails and the log is shown as comments; lines starting with "INFO: "
# are shown either way.  describe NAME (from the test) gives the text.
# tap_include runs a program that prints TAP of its own, numbered on from
# the script's tests; tap_end prints the plan, counted, after them.  Tests named CLIENT_qrdma and CLIENT_rxe are one
# client on each device: their outcome, and the figures they give with
# result, land side by side in a results file (results_table).  Every
# test ends with the checks of this file:
# qrdma_unload (rmmod qrdma leaves no device or netdev behind) and
# dmesg_clean (no WARN, BUG, oops, lockdep report or qrdma error).
#
# A guest booted with intel_iommu=on (the -iommu variants of meson.build's
# VM tests, with QEMU's -device intel-iommu) also runs qrdma_iommu, which
# checks that the IOMMU really translates the device's DMA.  qrdma_todo
# NAME REASON marks a test known to fail for a reason outside the guest
# (a TAP "# TODO": reported, not counted as a failure).

QRDMA_SRC_DIR=${QRDMA_SRC:-/qrdma/src}
QRDMA_PROVIDER_DIR=${QRDMA_PROVIDER_DIR:-$QRDMA_SRC_DIR/$(cat /etc/qrdma/provider-dir 2>/dev/null || echo build/provider)}
# The kernel test modules for the kernel running: the tree's own, built for
# the default kernel, or build-driver --kernel's for another.
QRDMA_KVERBS_DIR=$QRDMA_SRC_DIR/tests/kverbs
[ "$(modinfo -F vermagic "$QRDMA_KVERBS_DIR/qrdma_kverbs_test.ko" 2>/dev/null |
     cut -d' ' -f1)" = "$(uname -r)" ] ||
    QRDMA_KVERBS_DIR=$QRDMA_SRC_DIR/build/kernels/$(uname -r)/tests/kverbs
QRDMA_DEV=${QRDMA_DEV:-qrdma0}
QRDMA_IP=${QRDMA_IP:-10.0.3.15}
QRDMA_SYS=/sys/class/infiniband/$QRDMA_DEV
QRDMA_NETDEV=
QRDMA_GID_INDEX=

# --- KTAP plumbing --------------------------------------------------------------

KTAP_HELPERS=$QRDMA_PROVIDER_DIR/ktap_helpers.sh
# shellcheck source=/dev/null # the kernel's, copied by build-provider
if ! . "$KTAP_HELPERS"; then
    echo "not ok 1 - no $KTAP_HELPERS: run scripts/build-provider"
    echo "1..1"
    exit 1
fi

# N: the results so far; FAILED: those that count as failures (a known
# failure, "# TODO", does not).
N=0 FAILED=0 KNOWN=0
KTAP_HEADER=
declare -A QRDMA_TODO=()

# ktap_result ok|fail|skip|todo DESCRIPTION [REASON]: one result.
# ktap_helpers.sh prints it with an unquoted echo: globbing is off
# meanwhile, so that a description's * or [...] stays as it is.
ktap_result() {
    local opts=$-
    set -f
    [ -n "$KTAP_HEADER" ] || { ktap_print_header; KTAP_HEADER=1; }
    case $1 in
        ok) ktap_test_pass "$2" ;;
        skip) ktap_test_skip "$2${3:+: $3}" ;;
        fail) ktap_test_fail "$2"; FAILED=$((FAILED + 1)) ;;
        # ktap_helpers.sh has no known failure (TAP's "not ok ... #
        # TODO"): its own printer, given the directive.
        todo) __ktap_test "not ok" "$2" "TODO $3"; KNOWN=$((KNOWN + 1)) ;;
    esac
    [[ $opts == *f* ]] || set +f
    N=$((KTAP_TESTNO - 1))
}

# qrdma_todo NAME REASON: see the head of this file.
qrdma_todo() {
    QRDMA_TODO[$1]=$2
}

# diag FILE: FILE as TAP comments, ending in a newline even where FILE
# does not (or the next TAP line would land inside the last comment).
diag() { awk '{print "# " $0}' "$@"; }

# The descriptions of the tests this file defines.
qrdma_describe() {
    case $1 in
        qrdma_setup) echo "qrdma setup: provider and driver from the image, $QRDMA_IP on the port, its GID" ;;
        qrdma_unload) echo "rmmod qrdma removes $QRDMA_DEV and its netdev" ;;
        dmesg_clean) echo "dmesg has no WARNING/BUG/Oops/lockdep report or qrdma error" ;;
        qrdma_iommu) echo "an IOMMU translates $QRDMA_DEV's DMA: DMAR enabled, its group a DMA domain" ;;
    esac
}

run_test() {
    local name=$1 desc rc=0 todo=${QRDMA_TODO[$1]:-} outcome
    desc=$(qrdma_describe "$name")
    [ -n "$desc" ] || desc=$(describe "$name")
    RESULT_TEST=$name
    # The outcome's row first, above the test's figures; filled in below.
    [[ $name != *_qrdma && $name != *_rxe ]] ||
        printf '%s\t%s\t%s\n' "${name%_*}" "${name##*_}" "did not end" >>"$LOGDIR/results.tsv"
    "t_$name" >"$LOGDIR/$name.log" 2>&1 </dev/null || rc=$?
    if [ "$rc" -eq 0 ]; then
        ktap_result ok "$desc"
        outcome=passed
        [ -z "$todo" ] || { outcome="passed (a known failure?)"; echo "# passed, known to fail: $todo"; }
    elif [ "$rc" -eq 77 ]; then
        ktap_result skip "$desc" "$(tail -n 1 "$LOGDIR/$name.log")"
        outcome="skipped (below)"
        printf '%s: %s\n' "${name%_*}" "$(tail -n 1 "$LOGDIR/$name.log")" >>"$LOGDIR/results-skipped"
    elif [ -n "$todo" ]; then
        ktap_result todo "$desc" "$todo"
        diag "$LOGDIR/$name.log"
        outcome="FAILED, known (below)"
        printf '%s: %s\n' "${name%_*}" "$todo" >>"$LOGDIR/results-known"
    else
        ktap_result fail "$desc"
        diag "$LOGDIR/$name.log"
        outcome=FAILED
    fi
    [[ $name != *_qrdma && $name != *_rxe ]] ||
        printf '%s\t%s\t%s\n' "${name%_*}" "${name##*_}" "$outcome" >>"$LOGDIR/results.tsv"
    grep '^INFO: ' "$LOGDIR/$name.log" | sed 's/^INFO: /# /' || true
}

# result ROW VALUE: a figure of the running test (CLIENT_qrdma or
# CLIENT_rxe) for the results file, in row "CLIENT ROW".
result() {
    printf '%s\t%s\t%s\n' "${RESULT_TEST%_*} $1" "${RESULT_TEST##*_}" "$2" \
        >>"$LOGDIR/results.tsv"
}

# results_table FILE TITLE: the outcomes and figures of the tests so far,
# a row per client and figure, qrdma's beside rxe's; also shown as TAP
# comments.
results_table() {
    {
        echo "$2"
        awk -F'\t' '
            !($1 in seen) { seen[$1] = 1; order[++n] = $1 }
            { v[$1, $2] = $3 }
            END {
                w1 = 6; w2 = 6
                for (i = 1; i <= n; i++) {
                    if (length(order[i]) > w1) w1 = length(order[i])
                    if (length(v[order[i], "qrdma"]) > w2) w2 = length(v[order[i], "qrdma"])
                }
                printf "%-*s  %-*s  %s\n", w1, "", w2, "qrdma0", "rxe0"
                for (i = 1; i <= n; i++)
                    printf "%-*s  %-*s  %s\n", w1, order[i],
                        w2, v[order[i], "qrdma"], v[order[i], "rxe"]
            }' "$LOGDIR/results.tsv" 2>/dev/null
        if [ -s "$LOGDIR/results-known" ]; then
            echo
            echo "known failures:"
            sort -u "$LOGDIR/results-known" | sed 's/^/  /'
        fi
        if [ -s "$LOGDIR/results-skipped" ]; then
            echo
            echo "skipped:"
            sort -u "$LOGDIR/results-skipped" | sed 's/^/  /'
        fi
    } >"$1"
    sed 's/^/# /' "$1"
}

# tap_include WHAT CMD...: run a program (WHAT names it) that prints TAP
# (or KTAP: kselftest.h's, unittest_tap's); each of its results is passed
# on as one of this script's, numbered after the ones before, its plan is
# dropped (the script prints one for all at the end, tap_end).  A program
# that stops short of its plan, or fails without a failing test, adds a
# failure.
tap_include() {
    local what=$1 line rc_file rc plan='' seen=0 bad=0 verdict desc reason
    local result_re='^(not ok|ok) +[0-9]+( +-)? *(.*)$'
    local directive_re='^(.*[^ ])? *# *(SKIP|TODO|XFAIL)( +(.*))?$'
    shift
    rc_file=$(mktemp)
    while IFS= read -r line; do
        if [[ $line =~ $result_re ]]; then
            seen=$((seen + 1))
            verdict=${BASH_REMATCH[1]} desc=${BASH_REMATCH[3]} reason=
            if [[ $desc =~ $directive_re ]]; then
                desc=${BASH_REMATCH[1]} reason=${BASH_REMATCH[4]}
                verdict+=" ${BASH_REMATCH[2]}"
            fi
            # kselftest.h's skip: "ok N # SKIP WHAT".
            [ -n "$desc" ] || { desc=$reason; reason=; }
            case $verdict in
                "ok SKIP") ktap_result skip "$desc" "$reason" ;;
                ok*) ktap_result ok "$desc" ;;
                "not ok TODO") ktap_result todo "$desc" "$reason" ;;
                *) ktap_result fail "$desc"; bad=$((bad + 1)) ;;
            esac
        elif [[ $line =~ ^1\.\.([0-9]+) ]]; then
            plan=${BASH_REMATCH[1]}
        elif [[ $line =~ ^(TAP|KTAP)\ version ]]; then
            continue
        elif [[ $line == "Bail out!"* ]]; then
            # It ends the program, not this script: its missing results
            # fail below.
            echo "# $line"
        else
            echo "$line"
        fi
    # KSFT_TAP_LEVEL: kselftest.h's word to a program run inside another
    # test's output, which then prints no header of its own.
    done < <(KSFT_TAP_LEVEL=1 "$@"; echo $? >"$rc_file")
    rc=$(cat "$rc_file")
    rm -f "$rc_file"
    if [ "$seen" != "${plan:-none}" ] || { [ "$rc" != 0 ] && [ "$bad" = 0 ]; }; then
        ktap_result fail "$what ran to its end ($seen of ${plan:-?} tests, exit $rc)"
    fi
    return "$rc"
}

# unittest_tap CMD...: run CMD, a Python unittest run in verbose mode (-v:
# a line per test, ending in its verdict), and print its tests as TAP: a
# test is described by the first line of its docstring (else its name),
# a skip is a "# SKIP" with unittest's reason, and unittest's report of
# each failure follows as comments.  The plan is the count unittest gives
# at its end ("Ran N tests"), so a run that dies on the way has none.
unittest_tap() {
    "$@" 2>&1 | awk '
        function result(verdict, desc) {
            n++
            if (verdict == "ok")
                print "ok " n " - " desc
            else if (verdict ~ /^skipped /) {
                sub(/^skipped /, "", verdict)
                gsub(/^\047|\047$/, "", verdict)
                print "ok " n " - " desc " # SKIP " verdict
            } else if (verdict == "expected failure")
                print "not ok " n " - " desc " # TODO expected failure"
            else
                print "not ok " n " - " desc
        }
        report { if ($0 ~ /^Ran [0-9]+ tests? in /) { plan = $2; report = 0 }
                 else print "# " $0
                 next }
        /^=+$/ && length($0) >= 40 { report = 1; print "# " $0; next }
        match($0, / \.\.\. (ok|FAIL|ERROR|skipped .*|expected failure|unexpected success)$/) {
            desc = substr($0, 1, RSTART - 1)
            # No docstring: the line is the test itself, "name (id)".
            if (desc ~ /^test[[:alnum:]_]* \([[:alnum:]_.]+\)$/)
                sub(/ .*/, "", desc)
            result(substr($0, RSTART + 5), desc)
            next
        }
        /^Ran [0-9]+ tests? in / { plan = $2; next }
        /^test[[:alnum:]_]* \([[:alnum:]_.]+\)$/ { next }
        NF { print "# " $0 }
        END { if (plan != "") print "1.." plan }
    '
    return "${PIPESTATUS[0]}"
}

# tap_end: the plan, after the tests it counts (TAP allows it last: what
# tap_include passes on is known only once it ran), and the totals.  Not
# ktap_finished, which exits and counts a known failure as a failure, nor
# ktap_print_totals, whose xfail is always 0 (Linux 6.12): the same line,
# with the known failures.
tap_end() {
    [ -n "$KTAP_HEADER" ] || { ktap_print_header; KTAP_HEADER=1; }
    ktap_set_plan "$N"
    echo "# $((N - FAILED))/$N passed"
    echo "# Totals: pass:$KTAP_CNT_PASS fail:$KTAP_CNT_FAIL xfail:${KNOWN:-0} xpass:0 skip:$KTAP_CNT_SKIP error:0"
    [ "$FAILED" -eq 0 ]
}

t_qrdma_setup() {
    qrdma_setup
}

# Whether the guest was booted to use an IOMMU (see the head of the file).
qrdma_iommu_wanted() {
    grep -qw 'intel_iommu=on' /proc/cmdline
}

# "qrdma_iommu" when the guest wants the IOMMU check, else nothing: for a
# TESTS list, after the test that loads the driver.
qrdma_iommu_test() {
    if qrdma_iommu_wanted; then
        echo qrdma_iommu
    fi
}

# run_iommu_test: qrdma_iommu, when the guest wants it.
run_iommu_test() {
    if qrdma_iommu_wanted; then
        run_test qrdma_iommu
    fi
}

# The IOMMU is on (DMAR in the kernel log, a unit in /sys/class/iommu) and
# the device sits in an IOMMU group whose default domain translates (DMA,
# or DMA-FQ for lazy invalidation), not an identity (passthrough) one.
t_qrdma_iommu() {
    local pci group type
    dmesg | grep -E 'DMAR: (IOMMU enabled|Intel\(R\) Virtualization Technology)' ||
        { echo "no DMAR lines in dmesg"; return 1; }
    ls /sys/class/iommu/
    [ -n "$(ls /sys/class/iommu/ 2>/dev/null)" ] || { echo "no /sys/class/iommu/*"; return 1; }
    pci=$(readlink -f "$QRDMA_SYS/device") || return 1
    group=$(readlink -f "$pci/iommu_group") || { echo "$pci has no IOMMU group"; return 1; }
    type=$(cat "$group/type") || return 1
    echo "INFO: $QRDMA_DEV ($(basename "$pci")) in IOMMU group $(basename "$group"), domain $type, $(ls /sys/kernel/iommu_groups | wc -l) groups"
    case $type in
        DMA|DMA-FQ) ;;
        *) echo "domain type $type does not translate"; return 1 ;;
    esac
}

t_qrdma_unload() {
    local netdev=$QRDMA_NETDEV d
    if [ -z "$netdev" ]; then
        for d in "$QRDMA_SYS"/device/net/*; do
            [ -e "$d" ] && netdev=$(basename "$d")
        done
    fi
    lsmod | grep -q '^qrdma ' || { echo "qrdma is not loaded"; return 1; }
    rmmod qrdma || { rdma res show; return 1; }
    ! lsmod | grep -q '^qrdma ' || return 1
    [ ! -e "$QRDMA_SYS" ] || { echo "$QRDMA_SYS still there"; return 1; }
    [ -z "$netdev" ] || [ ! -e "/sys/class/net/$netdev" ] ||
        { echo "$netdev still there"; return 1; }
}

t_dmesg_clean() {
    local bad
    dmesg | grep -i qrdma || true
    bad=$(dmesg | grep -E '\b(WARNING|BUG|Oops)\b|lockdep|possible recursive locking|Call Trace' || true)
    bad+=$(dmesg -l emerg,alert,crit,err 2>/dev/null | grep -i qrdma || true)
    [ -z "$bad" ] && return 0
    echo "--- offending lines"
    echo "$bad"
    return 1
}

# --- helpers ----------------------------------------------------------------------

# wait_for SECONDS CMD...: until CMD succeeds, polling every 0.1 s.
wait_for() {
    local tries=$(($1 * 10))
    shift
    while ! "$@" >/dev/null 2>&1; do
        tries=$((tries - 1))
        [ "$tries" -gt 0 ] || return 1
        sleep 0.1
    done
}

# wait_listen PORT: until a TCP listener is up (pingpong and perftest
# servers exchange QP numbers over TCP before any RDMA traffic).
wait_listen() {
    wait_for 20 sh -c "ss -Hltn 'sport = :$1' | grep -q ." || {
        echo "nothing listens on TCP port $1"
        return 1
    }
}

# wait_listen_rdma PORT: until an rdma_cm ID listens on PORT.
wait_listen_rdma() {
    wait_for 20 sh -c "rdma res show cm_id 2>/dev/null | grep 'state LISTEN' | grep -q ':$1\b'" || {
        echo "no rdma_cm listener on port $1"
        rdma res show cm_id
        return 1
    }
}

# server_client OUT PORT TIMEOUT SERVER_CMD... -- CLIENT_CMD...: start the
# server, wait for it to listen on PORT (a TCP port, or cm:PORT for an
# rdma_cm port), run the client; both must exit 0.  Their outputs go to
# OUT.server and OUT.client, and are printed.
server_client() {
    local out=$1 port=$2 tmo=$3 spid rc=0 src=0 server=()
    shift 3
    while [ "$1" != -- ]; do
        server+=("$1")
        shift
    done
    shift
    timeout "$tmo" "${server[@]}" >"$out.server" 2>&1 &
    spid=$!
    if ! case $port in
             cm:*) wait_listen_rdma "${port#cm:}" ;;
             *) wait_listen "$port" ;;
         esac; then
        kill "$spid" 2>/dev/null
        wait "$spid" 2>/dev/null
        cat "$out.server"
        return 1
    fi
    timeout "$tmo" "$@" >"$out.client" 2>&1 || rc=$?
    # A server whose client failed may wait forever for it: stopped at
    # once, its output so far kept.
    [ "$rc" -eq 0 ] || kill "$spid" 2>/dev/null
    wait "$spid" || src=$?
    echo "--- server: ${server[*]} (exit $src)"
    cat "$out.server"
    echo "--- client: $* (exit $rc)"
    cat "$out.client"
    [ "$rc" -eq 0 ] && [ "$src" -eq 0 ]
}

# --- setup ------------------------------------------------------------------------

# libqrdma where the guest's libibverbs looks, put there by install-guest.
qrdma_check_provider() {
    local so
    so=$(ls /usr/lib/*/libibverbs/libqrdma-rdmav*.so 2>/dev/null | head -n 1)
    [ -n "$so" ] && [ -f /etc/libibverbs.d/qrdma.driver ] || {
        echo "no libqrdma in the guest image: run scripts/install-guest on the host"
        return 1
    }
    echo "provider $so"
}

qrdma_load_driver() {
    modinfo -n qrdma >/dev/null 2>&1 || {
        echo "no qrdma.ko in the guest image: run scripts/install-guest on the host"
        return 1
    }
    modprobe -a ib_core ib_uverbs rdma_cm rdma_ucm qrdma || return 1
    wait_for 10 test -d "$QRDMA_SYS" || { echo "no $QRDMA_SYS"; return 1; }
    wait_for 10 test -e /dev/infiniband/uverbs0 || { echo "no uverbs device"; return 1; }
}

# The netdev on the device's PCI function, up with $QRDMA_IP/24.
qrdma_setup_netdev() {
    local d
    for d in "$QRDMA_SYS"/device/net/*; do
        [ -e "$d" ] && QRDMA_NETDEV=$(basename "$d") && break
    done
    [ -n "$QRDMA_NETDEV" ] || { echo "no netdev under $QRDMA_SYS/device/net"; return 1; }
    ip link set "$QRDMA_NETDEV" up || return 1
    ip -br addr show "$QRDMA_NETDEV" | grep -q " $QRDMA_IP/" ||
        ip addr add "$QRDMA_IP/24" dev "$QRDMA_NETDEV" || return 1
    wait_for 10 sh -c "rdma link show $QRDMA_DEV/1 | grep -q 'state ACTIVE'" || {
        rdma link show "$QRDMA_DEV/1"
        return 1
    }
}

# roce_v2_gid_index DEV [GID]: the index of DEV's RoCE v2 GID, GID or
# else any IPv4 one (::ffff:a.b.c.d); where it lands depends on the
# link-local IPv6 and RoCE v1 entries before it.  ib_core adds it a little
# after the address: waits up to 5 s.
roce_v2_gid_index() {
    local ports=/sys/class/infiniband/$1/ports/1 want=${2:-} f i gid
    for _ in $(seq 50); do
        for f in "$ports"/gids/*; do
            i=${f##*/}
            gid=$(cat "$f" 2>/dev/null) || continue
            [ "$(cat "$ports/gid_attrs/types/$i" 2>/dev/null)" = "RoCE v2" ] ||
                continue
            if [ "$gid" = "$want" ] ||
               { [ -z "$want" ] && [[ $gid == 0000:0000:0000:0000:0000:ffff:* ]]; }; then
                echo "$i"
                return 0
            fi
        done
        sleep 0.1
    done
    echo "no RoCE v2 GID ${want:-::ffff:a.b.c.d} on $1" >&2
    return 1
}

# The index of the RoCE v2 GID of $QRDMA_IP.
qrdma_find_gid() {
    local want
    want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' ${QRDMA_IP//./ })
    QRDMA_GID_INDEX=$(roce_v2_gid_index "$QRDMA_DEV" "$want")
}

# qrdma_setup: all of the above; prints what it did.
qrdma_setup() {
    qrdma_check_provider &&
        qrdma_load_driver &&
        qrdma_setup_netdev &&
        qrdma_find_gid || return 1
    echo "INFO: $QRDMA_DEV on $QRDMA_NETDEV, $QRDMA_IP, RoCE v2 GID index $QRDMA_GID_INDEX"
}

# rxe_setup: Debian's rdma_rxe on $RXE_NETDEV as $RXE_DEV, the reference
# qrdma is measured against; sets RXE_GID_INDEX (its IPv4 RoCE v2 GID).
RXE_DEV=${RXE_DEV:-rxe0}
RXE_NETDEV=${RXE_NETDEV:-eth0}
RXE_GID_INDEX=
RXE_IP=
rxe_setup() {
    # modules.dep omits rdma_rxe's need of crc32_generic, up to 6.x; 7.x
    # has no such module (its CRC32 is in the library).
    if modinfo crc32_generic >/dev/null 2>&1; then
        modprobe crc32_generic || return 1
    fi
    modprobe rdma_rxe || return 1
    rdma link show "$RXE_DEV/1" >/dev/null 2>&1 ||
        rdma link add "$RXE_DEV" type rxe netdev "$RXE_NETDEV" || return 1
    wait_for 10 sh -c "ibv_devinfo -d $RXE_DEV | grep -q 'state:.*PORT_ACTIVE'" || {
        ibv_devinfo -d "$RXE_DEV"
        return 1
    }
    RXE_GID_INDEX=$(roce_v2_gid_index "$RXE_DEV") || return 1
    RXE_IP=$(ip -4 -o addr show "$RXE_NETDEV" | awk '{sub(/\/.*/, "", $4); print $4; exit}')
    echo "INFO: $RXE_DEV on $RXE_NETDEV, ${RXE_IP:-no IPv4 address}, RoCE v2 GID index $RXE_GID_INDEX"
}

# The test rxe_up of the tests that run a client on qrdma and on rxe.
t_rxe_up() {
    rxe_setup && [ -n "$RXE_IP" ]
}

# dev_addr qrdma|rxe: the IPv4 address of that device's RoCE GID.
dev_addr() {
    case $1 in
        qrdma) echo "$QRDMA_IP" ;;
        rxe) echo "$RXE_IP" ;;
    esac
}

# dev_name DEV: the RDMA device of qrdma or rxe.
dev_name() {
    case $1 in
        qrdma) echo "$QRDMA_DEV" ;;
        rxe) echo "$RXE_DEV" ;;
    esac
}

# run_tests: every test of $TESTS in order, then the plan.
run_tests() {
    local t
    mkdir -p "$LOGDIR"
    for t in "${TESTS[@]}"; do
        run_test "$t"
    done
    tap_end
}

# A device counter (hw_counters of port 1), e.g. guest_errors.
qrdma_counter() {
    cat "$QRDMA_SYS/ports/1/hw_counters/$1"
}

# --- output of the clients ---------------------------------------------------------

# perftest_column FILE NAME [SIZE]: "VALUE UNIT SIZE" of the column whose
# name starts with NAME (e.g. "BW average", "t_typical") in perftest's
# output FILE: in the result row of message size SIZE, or the last one.
# Columns are found by name in the header row, whose names may hold a
# space ("BW average[MiB/sec]"; perftest 23.04 says MiB/sec where older
# ones said MB/sec): a name ends at a word that starts with '#' or ends in
# ']'.
perftest_column() {
    awk -v want="$2" -v size="${3:-}" '
        /#bytes/ {
            idx = 0; n = 0; name = ""; unit = "?"
            for (i = 1; i <= NF; i++) {
                name = name == "" ? $i : name " " $i
                if ($i ~ /^#/ || $i ~ /\]$/) {
                    n++
                    if (!idx && index(name, want "[") == 1) {
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
        idx && $1 ~ /^[0-9]+$/ && (size == "" || $1 == size) &&
            $idx ~ /^[0-9]+(\.[0-9]+)?$/ { v = $idx; u = unit; s = $1 }
        END { if (v == "") exit 1; print v, u, s }' "$1"
}

# nvme_namespace: the block device of the NVMe namespace once connected
# (the multipath head node, not the hidden per-path one).
nvme_namespace() {
    local n
    for n in /sys/block/nvme*n1; do
        [ -e "$n" ] || continue
        [[ ${n##*/} =~ c[0-9]+n1$ ]] && continue
        echo "/dev/${n##*/}"
        return 0
    done
    return 1
}

# median VALUE...: the median of the numbers, "fail" if there is none.
median() {
    [ $# -gt 0 ] || { echo fail; return; }
    printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1}
        END {m = int((NR + 1) / 2); print NR % 2 ? v[m] : (v[m] + v[m + 1]) / 2}'
}
