#!/usr/bin/env bash
# The DKMS package of the driver (scripts/build-dkms) as a user installs
# it: in a Debian 13 system with the headers of two kernels, the oldest
# and the newest series of scripts/kernel-root list (6.12 and 7.3), apt
# installs dkms, dpkg -i the package, and dkms builds and installs qrdma.ko
# for both; modinfo finds it for each, with that kernel's vermagic; dpkg -r
# takes it out again.  The system is scripts/kernel-root's root, run with
# --scratch: whatever apt, dpkg and dkms change there is gone with the
# run, and the root in the cache stays as builds expect it.  TAP.
#
#   dkms-test.sh
#
# The checks in the root all run in that one run, and print TAP lines
# without numbers (dkms-test.sh --in-root, below); this side numbers them,
# so that the plan is counted in one place.
set -uo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"
. "$(dirname "$0")/lib-tap.sh"

KROOT=$QRDMA_ROOT/scripts/kernel-root

# --- in the scratch root -----------------------------------------------------

# result DESCRIPTION CMD...: "ok DESCRIPTION" or "not ok DESCRIPTION" and
# the end of what CMD said; CMD's output is in /tmp/out after it.
result() {
    local what=$1
    shift
    if "$@" >/tmp/out 2>&1; then
        echo "ok $what"
        return 0
    fi
    echo "not ok $what"
    tail -n 20 /tmp/out | sed 's/^/# /'
    return 1
}

# make_logs: dkms's build logs, where a failed build says why; once.
LOGS_SHOWN=0
make_logs() {
    local log
    [ "$LOGS_SHOWN" -eq 0 ] || return 0
    LOGS_SHOWN=1
    while read -r log; do
        echo "# $log:"
        tail -n 40 "$log" | sed 's/^/#   /'
    done < <(find /var/lib/dkms/qrdma -name make.log 2>/dev/null)
}

# as_installed KVER: /lib/modules/KVER as a system where KVER is
# installed has it, as far as dkms looks.  build, dkms's
# kernel_source_dir, leads to KVER's headers: Debian's linux-headers
# package holds that link, and kernel-root unpacks the package whole, so
# it is there; should a root ever lack it, it is made here, as installing
# the package with dpkg would have.  And modules.dep is there, which
# linux-image's postinst makes with depmod: the root has headers but no
# kernel image, and without modules.dep dkms skips its depmod (a kernel
# not installed), so nothing would find qrdma.ko by its name.
as_installed() {
    local kver=$1 link=/lib/modules/$1/build
    if [ ! -e "$link" ]; then
        echo "making $link, which linux-headers-$kver would have installed"
        mkdir -p "/lib/modules/$kver"
        ln -sfn "/usr/src/linux-headers-$kver" "$link"
    fi
    [ -f "$link/Makefile" ] && [ -d "$link/include" ] || return 1
    depmod "$kver" && [ -f "/lib/modules/$kver/modules.dep" ]
}

all_installed() {
    local kver
    for kver in "$@"; do
        as_installed "$kver" || return 1
    done
}

# only_kernels KVER...: a system with these kernels' headers and no
# other: the root holds every kernel any build asked for, and Debian's
# dkms builds for each kbuild directory in /lib/modules (it sets
# autoinstall_all_kernels).  The others' links go, in this copy.
only_kernels() {
    local dir kver keep k
    for dir in /lib/modules/*/; do
        kver=$(basename "$dir")
        keep=0
        for k in "$@"; do [ "$k" != "$kver" ] || keep=1; done
        [ "$keep" -eq 1 ] || rm -f "$dir/build"
    done
}

# installed KVER: the module's dkms status for KVER says installed.
installed() {
    dkms status -m qrdma -v "$VERSION" -k "$1"
    dkms status -m qrdma -v "$VERSION" -k "$1" |
        grep -q "^qrdma/$VERSION, $1, [^:]*: installed"
}

# modinfo_shows KVER: modinfo finds qrdma for KVER in updates/dkms, with
# KVER's vermagic.
modinfo_shows() {
    local kver=$1 file vermagic
    file=$(modinfo -k "$kver" -F filename qrdma) || return 1
    vermagic=$(modinfo -k "$kver" -F vermagic qrdma) || return 1
    echo "$file: vermagic $vermagic"
    case $file in
        "/lib/modules/$kver/updates/dkms/qrdma.ko"*) ;;
        *) echo "not in updates/dkms"; return 1 ;;
    esac
    [ "${vermagic%% *}" = "$kver" ]
}

# gone KVER...: no qrdma.ko left in any kernel's tree, none that modinfo
# finds, and dkms knows no qrdma.
gone() {
    local kver left
    left=$(find /lib/modules -name 'qrdma.ko*')
    [ -z "$left" ] || { echo "left: $left"; return 1; }
    for kver in "$@"; do
        ! modinfo -k "$kver" qrdma || return 1
    done
    [ -z "$(dkms status -m qrdma)" ]
}

in_root() {
    local deb=$1 kver
    shift
    export DEBIAN_FRONTEND=noninteractive
    VERSION=$(dpkg-deb -f "$deb" Version) || { echo "not ok cannot read $deb"; return 1; }
    result "apt-get installs dkms in a scratch copy of the Debian 13 root" \
        apt-get install -y -q dkms || return 1
    # dkms runs make -j<CPUs>; these builds share the machine with others.
    echo parallel_jobs=1 >/etc/dkms/framework.conf.d/qrdma-test.conf
    result "/lib/modules/KVER of $* as for an installed kernel: build leads to the headers, modules.dep" \
        all_installed "$@" || return 1
    only_kernels "$@"
    result "dpkg -i ${deb##*/}: its postinst has dkms build and install qrdma.ko" \
        dpkg -i "$deb" || make_logs
    for kver in "$@"; do
        result "dkms status: qrdma/$VERSION installed for $kver" \
            installed "$kver" || make_logs
    done
    for kver in "$@"; do
        result "modinfo -k $kver qrdma: updates/dkms/qrdma.ko, vermagic $kver" \
            modinfo_shows "$kver"
    done
    result "dpkg -r qrdma-dkms: its prerm has dkms remove the module" \
        dpkg -r qrdma-dkms
    result "after dpkg -r no qrdma.ko is left for $*, and dkms knows no qrdma" \
        gone "$@"
}

if [ "${1:-}" = --in-root ]; then
    shift
    # Its failures are its "not ok" lines; its status says that it ran.
    in_root "$@"
    exit 0
fi

# --- on the host -------------------------------------------------------------

TMP=$(mktemp -d "${TMPDIR:-/tmp}/qrdma-dkms-test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
# shellcheck disable=SC2034 # read by lib-tap.sh's check
TAP_DETAILS=$TMP/out

check "build-dkms packages the driver" \
    eval '"$QRDMA_ROOT/scripts/build-dkms" >"$TMP/deb" 2>"$TMP/out"'
deb=$(tail -n 1 "$TMP/deb")

"$KROOT" list >"$TMP/kernels" 2>"$TMP/out"
mapfile -t KERNELS < <(sed -n '1p; $p' "$TMP/kernels")
check "kernel-root list names two kernel series (${KERNELS[*]})" \
    eval '[ ${#KERNELS[@]} -eq 2 ] && [ "${KERNELS[0]}" != "${KERNELS[1]}" ]'

# A plain run adds a kernel's headers to the root, never a scratch one.
headers() {
    local kver
    for kver in "$@"; do
        "$KROOT" run "$kver" -- true >"$TMP/out" 2>&1 || return 1
    done
}
check "the kernel root has the headers of ${KERNELS[*]}" headers "${KERNELS[@]}"

if [ "$TAP_FAILED" -eq 0 ]; then
    "$KROOT" run --scratch "${KERNELS[0]}" -- \
        bash "$QRDMA_ROOT/tests/scripts/dkms-test.sh" --in-root "$deb" "${KERNELS[@]}" \
        >"$TMP/root" 2>&1
    rc=$?
    # The root's lines, numbered; whatever else it printed, as comments.
    while IFS= read -r line; do
        case $line in
            'ok '*)
                TAP_N=$((TAP_N + 1))
                echo "ok $TAP_N ${line#ok }"
                ;;
            'not ok '*)
                TAP_N=$((TAP_N + 1))
                TAP_FAILED=$((TAP_FAILED + 1))
                echo "not ok $TAP_N ${line#not ok }"
                ;;
            '#'*) echo "$line" ;;
            *) echo "# $line" ;;
        esac
    done <"$TMP/root"
    check "the scratch run of the checks in the root ends well (exit $rc)" [ "$rc" -eq 0 ]
fi
tap_end
