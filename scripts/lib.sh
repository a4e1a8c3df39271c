# Shared helpers for the qrdma scripts: paths, pinned versions, stage timing.
# Sourced, never run.

# A command substitution keeps errexit: x=$(f) fails when a command in f
# fails, not only when its last one does.
shopt -s inherit_errexit

QRDMA_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Everything expensive (downloads, QEMU builds, guest images) lives outside
# the clone so that a fresh clone in CI reuses it; entries are keyed by
# version so a bump never reuses a stale artefact.
QRDMA_CACHE=${QRDMA_CACHE:-$HOME/.cache/qrdma}
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}

# QRDMA_QEMU picks the QEMU the device is built into and the VMs run on:
# 10.2 (the default, the newest: Debian sid's) or 10.0 (the newest 10.0.x
# in Debian: trixie's).  One device source builds on both; each has its
# own wiring patch, hw-rdma/qemu-<QRDMA_QEMU>-wiring.patch.  The sha256 is
# the one in Debian's .dsc of that version.
QRDMA_QEMU=${QRDMA_QEMU:-10.2}
case $QRDMA_QEMU in
    10.2)
        QEMU_VERSION=10.2.2
        QEMU_DEB_VERSION=1:10.2.2+ds-1
        QEMU_SUITE=sid
        QEMU_ORIG_SHA256=be05230fe47a6937cd29f28f562932c8125f9c93c2a82c625198f7a4aa601dfb
        ;;
    10.0)
        QEMU_VERSION=10.0.13
        QEMU_DEB_VERSION=1:10.0.13+ds-0+deb13u1
        QEMU_SUITE=trixie
        QEMU_ORIG_SHA256=6a0888e806c2ffc0c5f0733e974f9aea55491950d3c47c98669c8b236dde59ae
        ;;
    *)
        printf 'error: QRDMA_QEMU=%s: 10.0 or 10.2\n' "$QRDMA_QEMU" >&2
        exit 1
        ;;
esac
QEMU_ORIG=qemu_$QEMU_VERSION+ds.orig.tar.xz
QEMU_SRC=$QRDMA_CACHE/qemu-$QEMU_VERSION/src
# Plain build (TCG) boots the guest VMs; the sanitizer build (no TCG, which
# qtests do not need) runs the qtests under ASan and UBSan.
QEMU_BUILD=$QRDMA_CACHE/qemu-$QEMU_VERSION/build
QEMU_BUILD_SAN=$QRDMA_CACHE/qemu-$QEMU_VERSION/build-san
# The libFuzzer build (clang), for scripts/fuzz-qrdma, from a tree of its
# own that also has hw-rdma/qemu-<QRDMA_QEMU>-fuzz.patch.
QEMU_SRC_FUZZ=$QRDMA_CACHE/qemu-$QEMU_VERSION/src-fuzz
QEMU_BUILD_FUZZ=$QRDMA_CACHE/qemu-$QEMU_VERSION/build-fuzz
# What this checkout runs: scripts/build-qemu copies each build's products
# here from the shared build directories, under the tree's lock, so that a
# build from another checkout never changes them.  Keyed by version too, so
# that with QRDMA_QEMU switched a script finds that QEMU's binary or none,
# never the other one's.
QEMU_OUT=$QRDMA_ROOT/build/qemu/$QEMU_VERSION
QEMU_BIN=$QEMU_OUT/plain/qemu-system-x86_64
QEMU_BIN_SAN=$QEMU_OUT/san/qemu-system-x86_64
QOS_TEST_SAN=$QEMU_OUT/san/tests/qtest/qos-test
QEMU_BIN_FUZZ=$QEMU_OUT/fuzz/qemu-fuzz-x86_64

DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

# The rdma-core the provider is built against, and the Debian release
# whose userspace (with that rdma-core's packages) the guest runs:
# QRDMA_RDMA_CORE=44 (Debian 12), 56.1 (Debian 13, the default) or 65 (the
# newest release, Debian forky's).  Each has its own provider ABI, so its
# own libqrdma-rdmav<N>.so, and its own source tree in the cache.
QRDMA_RDMA_CORE=${QRDMA_RDMA_CORE:-56.1}
case $QRDMA_RDMA_CORE in
    44|44.0)
        RDMA_CORE_VERSION=44.0
        RDMA_CORE_SUITE=bookworm
        # Debian's pool has lost 44.0's orig tarball (404), but its signed
        # .dsc still gives the sha256: the same file is the release's asset
        # on GitHub.  Where GitHub cannot be reached, a clone of rdma-core
        # (QRDMA_RDMA_CORE_GIT) whose tag v44.0 is this commit does.
        RDMA_CORE_ORIG=rdma-core-44.0.tar.gz
        RDMA_CORE_URL=https://github.com/linux-rdma/rdma-core/releases/download/v44.0/rdma-core-44.0.tar.gz
        RDMA_CORE_ORIG_SHA256=25d6601e60f27bbcd75e07fe340400cb80e6c3c487679700535385cfc9d9858b
        RDMA_CORE_GIT_TAG=v44.0
        RDMA_CORE_GIT_COMMIT=91392a91eb41affee3bd75dc7d03eb86b4854aea
        ;;
    56.1)
        RDMA_CORE_VERSION=56.1
        RDMA_CORE_SUITE=trixie
        RDMA_CORE_ORIG=rdma-core_56.1.orig.tar.gz
        RDMA_CORE_URL=$DEBIAN_MIRROR/pool/main/r/rdma-core/$RDMA_CORE_ORIG
        RDMA_CORE_ORIG_SHA256=63ce7f2baa7242c2dbc76375dac957c420187dd27f8c5e148efc07971ee522a8
        ;;
    65|65.0)
        RDMA_CORE_VERSION=65.0
        RDMA_CORE_SUITE=forky
        # The sha256 of rdma-core_65.0-1.dsc.
        RDMA_CORE_ORIG=rdma-core_65.0.orig.tar.gz
        RDMA_CORE_URL=$DEBIAN_MIRROR/pool/main/r/rdma-core/$RDMA_CORE_ORIG
        RDMA_CORE_ORIG_SHA256=f6ba3d8b2c4aa334c5c883c1ad0772de339011123cff4fb1db32ae7a443fb7ca
        ;;
    *)
        printf 'error: QRDMA_RDMA_CORE=%s: 44, 56.1 or 65\n' "$QRDMA_RDMA_CORE" >&2
        exit 1
        ;;
esac
# What build-provider makes for this rdma-core: the provider, the C tests
# built against it and rdma-core's tests/.  The default's in build/provider
# itself, where the guests' tests have always looked; the others' each in
# a directory of their own under it.
RDMA_CORE_DEFAULT=56.1
if [ "$RDMA_CORE_VERSION" = "$RDMA_CORE_DEFAULT" ]; then
    PROVIDER_OUT=$QRDMA_ROOT/build/provider
else
    PROVIDER_OUT=$QRDMA_ROOT/build/provider/rdma-core-$RDMA_CORE_VERSION
fi

qrdma_log() {
    printf '%s\n' "$*" >&2
}

qrdma_die() {
    printf 'error: %s\n' "$*" >&2
    exit 1
}

# meson_configure BUILD: the checkout's meson build directory set up, or
# brought up to date with meson.build (test-all, test-matrix's cells).
meson_configure() {
    if [ -f "$1/build.ninja" ]; then
        meson setup --reconfigure "$1" "$QRDMA_ROOT" >/dev/null
    else
        meson setup "$1" "$QRDMA_ROOT" >/dev/null
    fi
}

# qrdma_tap_failures TAP-FILE: copy each failed test point of a TAP stream
# (not a TODO one) and the diagnostics under it to stderr.  meson test keeps
# a TAP test's stdout in its log file but shows only stderr when the test
# fails, and a CI machine's log file is gone with the machine.
qrdma_tap_failures() {
    [ -f "$1" ] || return 0
    awk '
        /^not ok / && !/# TODO/ { show = 1; print; next }
        /^(ok|not ok) / { show = 0; next }
        show && /^#/ { print; next }
        { show = 0 }
    ' "$1" >&2
}

# stage NAME DESCRIPTION CMD...: run one step, saying what it does and how
# long it took, so a slow CI run shows where its time went.
#
# The step runs in a subshell with errexit and pipefail on, so any command
# of a shell function that fails ends the step; its output (stdout and
# stderr, merged) also goes to build/logs/<path>.log, where <path> names
# the stages it runs inside.  A failed step prints "FAILED", never "done",
# and, if no stage inside it failed first, the last lines of its log; its
# status is the stage's.  Every stage, nested ones too, is recorded in
# $QRDMA_STAGE_LOG (set by the outermost stage if nobody set it) for
# stage_summary.
#
# bash ignores errexit in a function, and in every subshell it starts, when
# the call stands where a failure is tested (if, while, &&, ||, !): a step
# called from there would run on past its failures.  So stage refuses to
# run from there; call it as a plain command and let its status end the
# script (set -e), or read $? on the next line.
stage() {
    local name=$1 what=$2 start rc errexit_on t0=$EPOCHREALTIME
    local depth=${QRDMA_STAGE_DEPTH:-0} path log own_log=''
    shift 2
    errexit_check
    if [ "$ERREXIT_IGNORED" -eq 1 ]; then
        printf 'error: stage %s called where bash ignores errexit (if, &&, ||, !): its failures would go unseen\n' \
            "$name" >&2
        return 70
    fi
    errexit_on=0
    [[ $- != *e* ]] || errexit_on=1
    set +e
    if [ -z "${QRDMA_STAGE_LOG:-}" ]; then
        QRDMA_STAGE_LOG=$(mktemp "${TMPDIR:-/tmp}/qrdma-stages.XXXXXX")
        export QRDMA_STAGE_LOG
        own_log=$QRDMA_STAGE_LOG
    fi
    path=${QRDMA_STAGE_PATH:+$QRDMA_STAGE_PATH.}$name
    log=$QRDMA_ROOT/build/logs/$path.log
    mkdir -p "${log%/*}"
    printf '# stage %s: %s\n' "$name" "$what" >"$log"
    printf '==> [%s] %s\n' "$name" "$what" >&2
    start=$(date +%s)
    (
        export QRDMA_STAGE_DEPTH=$((depth + 1)) QRDMA_STAGE_PATH=$path
        set -eo pipefail
        "$@"
    ) 2>&1 | tee -a "$log"
    rc=${PIPESTATUS[0]}
    printf '%s %s %s %s %s %s\n' "$t0" "$depth" "$name" \
        "$(( $(date +%s) - start ))" "$rc" "$log" >>"$QRDMA_STAGE_LOG"
    if [ "$rc" -eq 0 ]; then
        printf '<== [%s] done in %ss\n' "$name" "$(( $(date +%s) - start ))" >&2
    else
        printf '<== [%s] FAILED (%s) in %ss\n' "$name" "$rc" \
            "$(( $(date +%s) - start ))" >&2
        # The innermost failure shows its log; the stages around it only
        # say that they failed with it.
        [ -n "$(stage_failures "$QRDMA_STAGE_LOG" "$t0")" ] ||
            stage_failure_report "$name" "$what" "$log"
    fi
    [ -z "$own_log" ] || { rm -f "$own_log"; unset QRDMA_STAGE_LOG; }
    [ $errexit_on -eq 0 ] || set -e
    return "$rc"
}

# stage_failures FILE [AFTER]: the failed stages recorded in FILE that
# started after the time AFTER (default: all), innermost first.
stage_failures() {
    [ -s "$1" ] || return 0
    awk -v after="${2:-0}" '$1 > after && $5 != 0' "$1" | sort -s -k1,1gr
}

stage_failure_report() {
    local name=$1 what=$2 log=$3
    printf 'error: stage %s failed: %s\n' "$name" "$what" >&2
    if [ -s "$log" ]; then
        printf '  the last lines of its log, %s:\n' "$log" >&2
        tail -n 25 "$log" | sed 's/^/  | /' >&2
    fi
}

# stage_summary FILE: the stages recorded in FILE, in the order they
# started, nested ones indented under the stage that ran them; then, if one
# failed, which one and the end of its log again, so that the last thing a
# failed run prints is why.
stage_summary() {
    local first
    [ -s "$1" ] || return 0
    printf 'time by stage:\n' >&2
    sort -s -k1,1g "$1" |
        awk '{printf "  %*s%-*s %6ds%s\n", 2 * $2, "", 24 - 2 * $2, $3, $4,
              ($5 == 0 ? "" : "  FAILED (" $5 ")")}' >&2
    # A run stops at its first failure, so the failed stage that started
    # last is the innermost one: where the run went wrong.
    first=$(stage_failures "$1" | head -n 1)
    [ -n "$first" ] || return 0
    # shellcheck disable=SC2086 # the fields of the row
    set -- $first
    stage_failure_report "$3" \
        "$(head -n 1 "${*:6}" 2>/dev/null | sed 's/^# stage [^:]*: //')" "${*:6}"
}

# errexit_check: ERREXIT_IGNORED=1 where bash ignores errexit for the
# caller (it stands in an if, while, &&, || or ! test, or was called from
# one), else 0.  A variable, not a status: testing a status is itself such
# a place.
errexit_check() {
    local was=0
    [[ $- != *e* ]] || was=1
    set +e
    (set -e; false; exit 0)
    ERREXIT_IGNORED=$(( $? == 0 ))
    [ $was -eq 0 ] || set -e
}

# with_cache_lock [-s] NAME CMD...: run CMD holding the lock NAME of the
# cache (shared with -s), for everything that several runs, from one
# checkout or several, would otherwise write at once: a build tree, a
# download, an unpacked package.  A run that has to wait says for what and
# for whom.  Locks are never nested inside one another except in the order
# guest, then accel.
with_cache_lock() {
    local mode=-x fd rc file holder errexit_on=0
    if [ "$1" = -s ]; then mode=-s; shift; fi
    errexit_check
    if [ "$ERREXIT_IGNORED" -eq 1 ]; then
        printf 'error: with_cache_lock %s called where bash ignores errexit\n' "$1" >&2
        return 70
    fi
    [[ $- != *e* ]] || errexit_on=1
    file=$QRDMA_CACHE/locks/$1.lock
    shift
    mkdir -p "${file%/*}"
    exec {fd}<>"$file"
    if ! flock -n "$mode" "$fd"; then
        holder=$(cat "$file" 2>/dev/null || true)
        qrdma_log "waiting for the cache lock $(basename "$file" .lock) (${holder:-holder unknown})"
        flock "$mode" "$fd"
        qrdma_log "got the cache lock $(basename "$file" .lock)"
    fi
    [ "$mode" = -s ] ||
        printf 'held by pid %s, %s, stage %s\n' "$$" "$QRDMA_ROOT" \
            "${QRDMA_STAGE_PATH:-none}" >"$file"
    # As a stage's step: in a subshell, every failure ending it.
    set +e
    (set -eo pipefail; "$@")
    rc=$?
    exec {fd}>&-
    [ $errexit_on -eq 0 ] || set -e
    return $rc
}

# The newest Debian 12 build of Linux 6.12 LTS that apt knows, e.g.
# "6.12.48+deb12-amd64" (resolved, never pinned, so security updates flow
# in): the kernel the guest boots unless told otherwise, and the one
# build-driver builds guest-driver/qrdma.ko for in place.
default_kernel_release() {
    apt-cache search --names-only '^linux-image-6\.12\.[0-9]+\+deb12-amd64$' |
        awk '{print $1}' | sed 's/^linux-image-//' | sort -V | tail -n 1
}

# The kernel the guest boots: QRDMA_GUEST_KERNEL, a flavour release
# (6.1.0-56-amd64) or a minor version (6.1: the newest ABI of it in
# kernel_matrix), else the default.
guest_kernel_release() {
    case ${QRDMA_GUEST_KERNEL:-} in
        '') default_kernel_release ;;
        *-amd64) printf '%s\n' "$QRDMA_GUEST_KERNEL" ;;
        *) kernel_matrix | awk -v m="$QRDMA_GUEST_KERNEL." 'index($0, m) == 1' | tail -n 1 ;;
    esac
}

# kernel_minor KVER: its "major.minor" (6.1 of 6.1.0-56-amd64), the name
# QRDMA_GUEST_KERNEL also takes.
kernel_minor() {
    printf '%s\n' "$1" | cut -d. -f1,2
}

# qrdma_ko_dir KVER: where build-driver leaves qrdma.ko for KVER.
qrdma_ko_dir() {
    if [ "$1" = "$(default_kernel_release)" ]; then
        printf '%s\n' "$QRDMA_ROOT/guest-driver"
    else
        printf '%s\n' "$QRDMA_ROOT/build/kernels/$1/guest-driver"
    fi
}

# installed_guest_dir KVER: where install-guest puts the image with qrdma
# for KVER and this QRDMA_RDMA_CORE (and run-vm boots it from).
installed_guest_dir() {
    local dir=$QRDMA_ROOT/build/guest
    [ "$1" = "$(default_kernel_release)" ] || dir=$dir-$1
    [ "$RDMA_CORE_VERSION" = "$RDMA_CORE_DEFAULT" ] ||
        dir=$dir-rdma-core-$RDMA_CORE_VERSION
    printf '%s\n' "$dir"
}

# default_guest_dir: the image the VM tests boot, that of install-guest
# (with qrdma.ko and libqrdma) for QRDMA_GUEST_KERNEL and QRDMA_RDMA_CORE,
# or, before install-guest ran, the plain one of build-guest.
default_guest_dir() {
    local dir
    dir=$(installed_guest_dir "$(guest_kernel_release)")
    [ -f "$dir/rootfs.ext4" ] || dir=$(guest_image_dir "$(guest_kernel_release)")
    printf '%s\n' "$dir"
}

# vm_accel QEMU KERNEL: the accelerator of the test VMs and why, as one
# line "kvm: WHY" or "tcg: WHY": QRDMA_ACCEL=kvm|tcg, else what
# scripts/probe-accel found to work on this machine (a /dev/kvm that opens
# may still be unable to run the guest).  Fails, saying why, where
# QRDMA_ACCEL=kvm cannot be had or is not kvm or tcg.
vm_accel() {
    local verdict
    case ${QRDMA_ACCEL:-} in
        tcg)
            printf 'tcg: QRDMA_ACCEL=tcg\n' ;;
        kvm|'')
            verdict=$("$QRDMA_ROOT/scripts/probe-accel" --qemu "$1" --kernel "$2") || return 1
            if [ -z "${QRDMA_ACCEL:-}" ]; then
                printf '%s\n' "$verdict"
            elif [ "${verdict%%:*}" = kvm ]; then
                printf 'kvm: QRDMA_ACCEL=kvm; %s\n' "${verdict#*: }"
            else
                qrdma_log "QRDMA_ACCEL=kvm, but KVM cannot run the guest here: ${verdict#*: }"
                return 1
            fi ;;
        *)
            qrdma_log "QRDMA_ACCEL must be kvm or tcg, not '$QRDMA_ACCEL'"
            return 1 ;;
    esac
}

# kernel_on_host KVER: whether the host's apt has KVER's headers (Debian
# 12's own series), which build on the host; newer ones build in
# scripts/kernel-root.
kernel_on_host() {
    apt-cache show "linux-headers-$1" >/dev/null 2>&1
}

# kernel_image_package KVER [CMD...]: the package with KVER's kernel and modules,
# linux-image-KVER (signed) where apt has a candidate for it, else
# linux-image-KVER-unsigned: Debian's security archive publishes the
# unsigned build first and the signed one up to days later, and until then
# the newest ABI (kernel_matrix goes by its headers) has only the unsigned
# image.  The two hold the same kernel; the guest boots without Secure
# Boot.  Fails, saying so, where apt has neither.  CMD, if given, runs
# apt-cache where that apt is (scripts/kernel-root run KVER --).
kernel_image_package() {
    local kver=$1 pkg
    shift
    for pkg in "linux-image-$kver" "linux-image-$kver-unsigned"; do
        if "$@" env LC_ALL=C apt-cache policy "$pkg" 2>/dev/null |
                awk '$1 == "Candidate:" && $2 != "(none)" {found = 1} END {exit !found}'; then
            printf '%s\n' "$pkg"
            return 0
        fi
    done
    qrdma_log "apt has neither linux-image-$kver nor linux-image-$kver-unsigned (bookworm-security in apt sources? run scripts/setup-host)"
    return 1
}

# kernel_matrix: the kernels the driver is built for by build-driver
# --kernels, one flavour release per line: the newest ABI of each minor
# version Debian packages, the host's (bookworm, bookworm-backports) first,
# then trixie's and trixie-backports' (scripts/kernel-root list) for the
# minor versions the host has not.
kernel_matrix() {
    local host
    host=$(apt-cache search --names-only '^linux-headers-[0-9]+\.[0-9]+\.[0-9]+(-[0-9]+|\+[a-z0-9.+~]+)-amd64$' |
        awk '{print $1}' | sed 's/^linux-headers-//' | sort -V |
        awk -F. '{m = $1 "." $2} m != last && last != "" {print keep} {keep = $0; last = m} END {if (keep != "") print keep}')
    printf '%s\n' "$host"
    [ -x "$QRDMA_ROOT/scripts/kernel-root" ] || return 0
    "$QRDMA_ROOT/scripts/kernel-root" list |
        awk -F. -v have="$(printf '%s\n' "$host" | awk -F. '{printf "%s.%s ", $1, $2}')" \
            'index(" " have, " " $1 "." $2 " ") == 0'
}

# guest_kernel_headers KVER: the kbuild directory for building modules
# against the guest kernel KVER, unpacked once into the cache from Debian's
# linux-headers and linux-kbuild packages.  Installing linux-headers would
# pull in the matching linux-image and change what the host boots; unpacked
# here, the host keeps only the tools kbuild runs (setup-host's gcc-12 and
# dwarves).  Prints the directory.
guest_kernel_headers() {
    local kver=$1 root
    root=$QRDMA_CACHE/kernel-headers/$kver
    [ -f "$root/.done" ] ||
        with_cache_lock kernel-headers unpack_kernel_headers "$kver" "$root" >&2
    # A mark of use, for the pruning below.
    touch "$root/.done"
    printf '%s\n' "$root/usr/src/linux-headers-$kver"
}

# unpack_kernel_headers KVER ROOT: under the lock, into a directory of its
# own, renamed into place whole; headers unused for 30 days go.
unpack_kernel_headers() {
    local kver=$1 root=$2 dl pkg pkgs
    [ ! -f "$root/.done" ] || return 0
    mkdir -p "$QRDMA_CACHE/kernel-headers"
    # The common headers and kbuild are named differently from one Debian
    # kernel series to the next (linux-kbuild-6.1, linux-kbuild-6.12.117+deb12):
    # the flavour's package says which.
    pkgs=$(apt-cache depends "linux-headers-$kver" 2>/dev/null |
        awk '$1 == "Depends:" && $2 ~ /^linux-(headers|kbuild)-/ {print $2}')
    [ -n "$pkgs" ] || qrdma_die "apt knows no linux-headers-$kver; run scripts/setup-host"
    dl=$(mktemp -d "$QRDMA_CACHE/kernel-headers/dl.XXXXXX")
    # apt drops privileges to _apt for downloads; let it write there.
    [ "$(id -u)" -ne 0 ] || chown _apt "$dl" 2>/dev/null || true
    # shellcheck disable=SC2086 # package names, one per word
    (cd "$dl" && apt-get download -q "linux-headers-$kver" $pkgs) >/dev/null 2>&1 || {
        rm -rf "$dl"
        qrdma_die "apt-get download of the headers of $kver failed; run scripts/setup-host"
    }
    mkdir "$dl/root"
    for pkg in "$dl"/*.deb; do
        dpkg-deb -x "$pkg" "$dl/root" || { rm -rf "$dl"; qrdma_die "cannot unpack $pkg"; }
    done
    # The flavour's Makefile includes the common one by its absolute
    # installed path; point it at the copy beside it.
    sed -i "s|^include /usr/src/|include $root/usr/src/|" \
        "$dl/root/usr/src/linux-headers-$kver/Makefile"
    touch "$dl/root/.done"
    rm -rf "$root"
    mv "$dl/root" "$root"
    rm -rf "$dl"
    find "$QRDMA_CACHE/kernel-headers" -mindepth 2 -maxdepth 2 -name .done \
        -mtime +30 -printf '%h\n' | xargs -r rm -rf
}

# The files of the guest kernel's source tree the project uses, from
# Debian's linux-source package of that kernel's build: checkpatch.pl with
# the data files it looks for beside it (scripts/check-style), and
# kselftest's KTAP helpers, kselftest.h for the C tests of tests/vm/ and
# ktap_helpers.sh for its shell tests.  Paths in the kernel's tree.
KERNEL_SOURCE_FILES=(
    scripts/checkpatch.pl
    scripts/spelling.txt
    scripts/const_structs.checkpatch
    tools/testing/selftests/kselftest.h
    tools/testing/selftests/kselftest/ktap_helpers.sh
)

# kernel_source_files [KVER]: the directory holding KERNEL_SOURCE_FILES
# at their paths in the kernel's tree, of KVER's upstream version (default
# the guest kernel's), fetched once into the cache.  The directory is
# keyed by the list too, so a list that grows selects a new one rather
# than trusting an old directory without the new files.  Safe where bash
# ignores errexit (check-style calls it so): every status is checked.
kernel_source_files() {
    local kver=${1:-$(default_kernel_release)} up key dir lock rc
    [ -n "$kver" ] || { qrdma_log "no guest kernel release known to apt (scripts/setup-host)"; return 1; }
    up=${kver%%+*}
    key=$(printf '%s\n' "${KERNEL_SOURCE_FILES[@]}" | sha256sum | cut -c1-8)
    dir=$QRDMA_CACHE/linux-source/linux-$up-$key
    if [ ! -f "$dir/.done" ]; then
        mkdir -p "$QRDMA_CACHE/locks" "$QRDMA_CACHE/linux-source" || return 1
        # The cache's lock taken by hand, not through with_cache_lock,
        # which refuses to run where errexit is ignored.
        exec {lock}<>"$QRDMA_CACHE/locks/linux-source.lock" || return 1
        flock -n "$lock" || {
            qrdma_log "waiting for the cache lock linux-source"
            flock "$lock"
        }
        rc=0
        [ -f "$dir/.done" ] || fetch_kernel_source_files "$kver" "$dir" || rc=1
        exec {lock}>&-
        [ "$rc" -eq 0 ] || return 1
    fi
    printf '%s\n' "$dir"
}

# fetch_kernel_source_files KVER DIR: under the lock; the package goes
# once the files are out of it, and the directories of other versions or
# lists with it.
fetch_kernel_source_files() {
    local kver=$1 dir=$2 up=${1%%+*} pkg image ver dl f
    pkg=linux-source-${up%.*}
    image=$(kernel_image_package "$kver") || return 1
    ver=$(apt-cache show "$image" 2>/dev/null |
          awk '/^Version:/ {print $2}' | sort -V | tail -n 1)
    [ -n "$ver" ] || { qrdma_log "$image unknown to apt (scripts/setup-host)"; return 1; }
    dl=$(mktemp -d "$QRDMA_CACHE/linux-source/dl.XXXXXX") || return 1
    # apt drops privileges to _apt for downloads; let it write there.
    [ "$(id -u)" -ne 0 ] || chown _apt "$dl" 2>/dev/null || true
    qrdma_log "fetching $pkg=$ver for ${KERNEL_SOURCE_FILES[*]##*/} (150 MB, once)"
    # apt checks the package against its signed index.
    if ! (cd "$dl" && apt-get download -q "$pkg=$ver") >"$dl/apt.log" 2>&1; then
        qrdma_log "apt-get download $pkg=$ver failed:"
        tail -n 5 "$dl/apt.log" >&2
        rm -rf "$dl"
        return 1
    fi
    mkdir "$dl/tree"
    if ! (set -o pipefail
          dpkg-deb --fsys-tarfile "$dl"/*.deb |
              tar -xO "./usr/src/$pkg.tar.xz" |
              tar -xJ -C "$dl/tree" --strip-components=1 \
                  "${KERNEL_SOURCE_FILES[@]/#/$pkg/}"); then
        qrdma_log "cannot unpack ${KERNEL_SOURCE_FILES[*]} from $pkg=$ver"
        rm -rf "$dl"
        return 1
    fi
    for f in "${KERNEL_SOURCE_FILES[@]}"; do
        [ -f "$dl/tree/$f" ] ||
            { qrdma_log "$pkg=$ver has no $f"; rm -rf "$dl"; return 1; }
    done
    touch "$dl/tree/.done"
    rm -rf "$dir"
    mv "$dl/tree" "$dir" || { rm -rf "$dl"; return 1; }
    rm -rf "$dl"
    find "$QRDMA_CACHE/linux-source" -mindepth 1 -maxdepth 1 -name 'linux-*' \
        ! -name "linux-$up-*" -exec rm -rf {} + 2>/dev/null || true
}

# fetch_verified URL DEST SHA256: download once into the cache, checked.
fetch_verified() {
    local url=$1 dest=$2 sum=$3 part
    if [ -f "$dest" ] && echo "$sum  $dest" | sha256sum -c --status; then
        return 0
    fi
    mkdir -p "$(dirname "$dest")"
    # A part file of its own: runs that download at once each publish a
    # whole, checked file by a rename.
    part=$(mktemp "$dest.XXXXXX.part")
    curl -fsSL --retry 3 -o "$part" "$url" ||
        { rm -f "$part"; qrdma_die "download failed: $url"; }
    echo "$sum  $part" | sha256sum -c --status ||
        { rm -f "$part"; qrdma_die "sha256 mismatch for $url"; }
    chmod 0644 "$part"
    mv -f "$part" "$dest"
}

# guest_image_dir [KVER]: where scripts/build-guest puts (and scripts/run-vm
# finds) the guest for this kernel release and the userspace of
# QRDMA_RDMA_CORE; the key hashes the builder and the guest-side files it
# installs, so editing either selects a new image.
guest_image_dir() {
    local kver=${1:-$(guest_kernel_release)} hash
    [ -n "$kver" ] || qrdma_die "no guest kernel release known to apt; run scripts/setup-host"
    hash=$(cat "$QRDMA_ROOT/scripts/build-guest" "$QRDMA_ROOT"/scripts/guest/* |
           sha256sum | cut -c1-12)
    printf '%s\n' "$QRDMA_CACHE/guest/$kver-$RDMA_CORE_SUITE-$hash"
}

# checkout_copy DEST: the files git tracks in this checkout, as they are in
# its working tree, copied to DEST: another checkout for the tests of the
# scripts themselves (two runs at once, a build made to fail).
checkout_copy() {
    mkdir -p "$1"
    git -C "$QRDMA_ROOT" ls-files -z |
        (cd "$QRDMA_ROOT" && tar --null --ignore-failed-read -T - -cf -) |
        tar -xf - -C "$1"
}
